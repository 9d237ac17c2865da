"""Budgets on a judge label stage (the real default model judges): a budget stops the stage at whole prompts (by the
whole output's cost, so the same params give the same bytes), and a rerun with a larger budget finishes without
repeating a call, after which the plan finds nothing left to send. That the plan equals the calls a run makes, stage
by stage, is checked on the demo DAG in tests/e2e/test_repro.py."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rewardmill.pipelines import label, plan
from rewardmill.schemas import PROMPT_V1, ROLLOUT_V2
from rewardmill.transforms.io.parquet import read_rows, rows_to_table, write_table
from rewardmill.transforms.planning.upstream import predicted_rollouts
from rewardmill.transforms.sampling.policy import FINGERPRINT_FILE, PolicyInfo
from rewardmill.transforms.stage.outputs import write_manifest
from tests.conftest import tiny_params
from tests.pipelines.test_label_and_assemble import rollout

# p1 and p3 each have a right and a wrong answer, p2 two wrong ones (the appeal judges only what math_answer rejects)
ROWS = [
    rollout("p1", 0, "4"),
    rollout("p1", 1, "It is 5."),
    rollout("p2", 0, "2 + 2 = 22"),
    rollout("p2", 1, "four"),
    rollout("p3", 0, "The answer is 4"),
    rollout("p3", 1, "3"),
]


@pytest.fixture
def project(tmp_path, policy_dir):
    (tmp_path / "rollouts").mkdir()
    write_table(rows_to_table(ROWS, ROLLOUT_V2), str(tmp_path / "rollouts" / "part-00000-of-00001.parquet"))
    return tmp_path


def labelers(policy_dir, **panel_budget) -> dict:
    backend = {"model": str(policy_dir)}
    params = tiny_params()["labelers"]
    params["appeal"]["config"]["backend"] = backend
    params["panel"]["config"]["backend"] = backend
    if panel_budget:
        params["panel"]["budget"] = panel_budget
    return {"appeal": params["appeal"], "panel": params["panel"]}


def planned(project, policy_dir, capsys, stage: str) -> dict:
    capsys.readouterr()
    args = ["--stage", stage, "--json", "--rollouts", str(project / "rollouts"), "--model", str(policy_dir)]
    plan.main([*args, "--cache-root", str(project / "cache")])
    (result,) = json.loads(capsys.readouterr().out)
    return result


def run_label(project, name: str) -> tuple[dict, list[dict]]:
    out, metrics = project / "labels" / name, project / f"{name}.json"
    cache = str(project / "cache/labels")
    label.main(
        [name, "--rollouts", str(project / "rollouts"), "--out", str(out), "--cache", cache, "--metrics", str(metrics)]
    )
    rejects = pq.read_table(out / "_rejects").to_pylist() if (out / "_rejects").exists() else []
    return json.loads(metrics.read_text()), rejects


def test_a_budget_stops_at_whole_prompts_and_a_larger_one_continues_without_repeating_a_call(
    project, policy_dir, params_file, capsys, stage_log
):
    params = tiny_params()
    params["labelers"] = labelers(policy_dir, max_requests=8)  # a prompt is 2 rollouts x 3 panelists = 6 calls
    params_file(params)
    metrics, rejects = run_label(project, "panel")
    assert metrics["usage"]["requests"] == 6  # p1 only: p2 would make 12
    assert sorted((r["row_id"], r["reason"]) for r in rejects) == [
        ("p2-r0", "budget"), ("p2-r1", "budget"), ("p3-r0", "budget"), ("p3-r1", "budget")
    ]  # fmt: skip
    assert "labelers.panel.budget (max_requests=8) was reached" in rejects[0]["detail"]
    assert metrics["budget"]["left_requests"] == 12
    assert "budget reached" in stage_log.text and "raise params labelers.panel.budget" in stage_log.text

    params["labelers"] = labelers(policy_dir, max_requests=18)  # the whole output's cost, cached or not
    params_file(params)
    metrics, rejects = run_label(project, "panel")
    assert rejects == []
    assert metrics["labels"] == len(ROWS)
    assert metrics["usage"]["requests"] == 12  # p2 and p3; p1's labels come from the cache
    assert planned(project, policy_dir, capsys, "label@panel")["requests"] == 0


def test_plan_names_the_stage_to_run_first_when_its_input_is_missing(tmp_path, policy_dir, params_file, capsys):
    params_file(tiny_params())
    plan.main(["--stage", "label@appeal", "--rollouts", str(tmp_path / "nothing"), "--model", str(policy_dir)])
    out = capsys.readouterr().out
    assert "`dvc repro rollouts` first" in out


# --- a plan predicts the run the params describe, not the outputs on disk --------------------------------------------


def tokenizer_only_model(folder: Path) -> Path:
    """A model folder the plan can read without weights: a whitespace tokenizer with a chat template, and the model
    stage's fingerprint file (no model is loaded or run)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")
    fast.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    fast.save_pretrained(folder)
    info = PolicyInfo(name="tiny", source="test", fingerprint="f" * 64)
    (folder / FINGERPRINT_FILE).write_text(json.dumps(info.__dict__))
    return folder


def prompt_row(i: int) -> dict:
    messages = [{"role": "user", "content": f"What is {i} + 1?"}]
    return {
        "prompt_id": f"q{i}",
        "source": "test",
        "task": "math",
        "messages": messages,
        "reference": str(i + 1),
        "tests": None,
        "rubric": None,
        "constraints": None,
        "split": "train",
        "metadata": None,
    }


@pytest.fixture
def built_with_n4(tmp_path, params_file):
    """prompts, a model folder and the rollouts stage's output (rows and manifest) as params with rollouts.n=4 built
    them; returns (project folder, params)."""
    from rewardmill.pipelines.rollouts import RolloutsConfig, policies_record
    from rewardmill.transforms.config import from_dict

    model = tokenizer_only_model(tmp_path / "model")
    params = tiny_params()
    params["rollouts"].update(n=4, max_new_tokens=8)
    params["labelers"] = labelers(model)
    params["rubrics"]["reference"]["backend"] = {"model": str(model)}
    params_file(params)
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    write_table(rows_to_table([prompt_row(i) for i in range(3)], PROMPT_V1), str(prompts / "part-00000.parquet"))
    cfg = from_dict(RolloutsConfig, params["rollouts"], "rollouts")
    members = cfg.pool(str(model))
    rows, _ = predicted_rollouts(read_rows(str(prompts), PROMPT_V1), members, cfg.sampling(), None)
    # wrong, so the appeal judges every one; and each its own text, so no two share a judge call
    rows = [{**r, "completion": f"The answer is 0, try {'abcd'[r['sample_index']]}."} for r in rows]
    (tmp_path / "rollouts").mkdir()
    write_table(rows_to_table(rows, ROLLOUT_V2), str(tmp_path / "rollouts" / "part-00000-of-00001.parquet"))
    extra = {"policies": policies_record(members)}
    write_manifest(tmp_path / "rollouts", stage="rollouts", schema=ROLLOUT_V2, config=cfg, inputs={"prompts": prompts},
                   extra=extra)  # fmt: skip
    return tmp_path, params


def plan_all(project, capsys) -> dict[str, dict]:
    capsys.readouterr()
    args = ["--json", "--prompts", str(project / "prompts"), "--rollouts", str(project / "rollouts")]
    plan.main([*args, "--model", str(project / "model"), "--cache-root", str(project / "cache")])
    return {p["stage"]: p for p in json.loads(capsys.readouterr().out)}


@pytest.mark.slow
def test_judges_are_planned_against_the_rollouts_on_disk_while_they_are_current(built_with_n4, capsys):
    project, _ = built_with_n4
    plans = plan_all(project, capsys)
    assert plans["rollouts"]["requests"] == 3 * 4  # no rollout cache: the stage would sample them again
    assert plans["label@panel"]["rows"] == 3 * 4 and plans["label@panel"]["requests"] == 3 * 4 * 3  # 3 personas
    assert plans["label@appeal"]["requests"] == 3 * 4  # math_answer rejects every one
    assert not plans["label@panel"]["requests_bound"] and not plans["label@panel"]["notes"]
    rubrics = plans["rubrics@reference"]  # one writer call per chosen prompt; the refine round is only noted
    assert (rubrics["rows"], rubrics["requests"]) == (3, 3) and "refine round" in rubrics["notes"][0]


def test_after_rollouts_n_changes_the_judges_are_planned_for_the_new_n(built_with_n4, params_file, capsys):
    project, params = built_with_n4
    params["rollouts"]["n"] = 8  # `dvc exp run -S rollouts.n=8`: the rollouts on disk have 4 samples a prompt
    params_file(params)
    plans = plan_all(project, capsys)
    assert plans["rollouts"]["requests"] == 3 * 8
    panel, appeal = plans["label@panel"], plans["label@appeal"]
    assert panel["rows"] == 3 * 8 and panel["requests"] == 3 * 8 * 3  # every persona on each of 8 rollouts a prompt
    assert appeal["rows"] == 3 * 8 and appeal["requests"] == 3 * 8  # at most: the answers are not sampled yet
    assert appeal["requests_bound"] and panel["requests_bound"]
    (note,) = appeal["notes"]
    assert "planned against the 24 rollouts the rollouts stage will write (3 prompts x 1 policy x n=8)" in note
    assert "its params changed since it was built" in note and "24 of them are not sampled yet" in note
    # the step searches on 3 selected rollouts not sampled yet, at their longest: segment.max_steps=8 steps, so
    # Monte Carlo continues 7 prefixes of each, a binary search at most 3
    mc, search = plans["steps@mc"], plans["steps@binary_search"]
    assert (mc["rows"], mc["requests"], mc["requests_bound"]) == (3, 3 * 7, True)
    assert (search["rows"], search["requests"], search["requests_bound"]) == (3, 3 * 3, True)


def test_changed_prompts_are_a_stale_rollouts_output_too(built_with_n4, capsys):
    project, _ = built_with_n4
    rows = [prompt_row(i) for i in range(4)]  # a fourth prompt since the rollouts were built
    write_table(rows_to_table(rows, PROMPT_V1), str(project / "prompts" / "part-00000.parquet"))
    plans = plan_all(project, capsys)
    assert plans["label@panel"]["rows"] == 4 * 4 and plans["label@panel"]["requests"] == 4 * 4 * 3
    assert "its inputs changed since it was built (prompts)" in plans["label@panel"]["notes"][0]


def test_a_stage_admitting_under_its_budget_reads_the_rollouts_it_is_handed(built_with_n4, params_file):
    project, params = built_with_n4
    params["rollouts"]["n"] = 8  # stale for `plan`, but the label stage labels what it is given
    params_file(params)
    paths = plan.plan_paths(str(project / "cache"), rollouts=str(project / "rollouts"), model=str(project / "model"))
    assert plan.plan_label_stage("panel", paths, plan.load_prices()).send.requests == 3 * 4 * 3
