"""Stage steps@NAME on the real default model: exhaustive MC and binary search over the same rollouts."""

import json
import re

import pyarrow.parquet as pq
import pytest

from rewardmill.pipelines import steps as steps_stage
from rewardmill.schemas import ROLLOUT_V2, STEP_LABEL_V1
from rewardmill.transforms.io.parquet import read_rows, rows_to_table, write_table
from rewardmill.transforms.sampling.policy import FINGERPRINT_FILE
from rewardmill.transforms.stage.outputs import digest_path
from rewardmill.transforms.steps.prm_rows import build_prm_row
from tests.conftest import tiny_params
from tests.pipelines.test_label_and_assemble import rollout

COMPLETIONS = [
    ("p1", "Tom has 3 apples. He buys 4 more apples. So he has 3 + 4 = 7 apples. The answer is 7.", "7"),
    ("p2", "Tom has 3 apples. He buys 4 more apples. So he has 3 + 4 = 8 apples. The answer is 8.", "7"),
    ("p3", "We add the numbers. The sum is 12. The answer is 12.", "9"),
    ("p4", "The answer is 5.", None),  # no reference: rejected, counted
]


def write_rollouts(tmp_path):
    rows = [rollout(pid, 0, text, reference=ref) for pid, text, ref in COMPLETIONS]
    rows.append({**rollout("c1", 0, "def f(): pass"), "task": "code"})  # another task: not selected
    out = tmp_path / "data/rollouts"
    out.mkdir(parents=True)
    write_table(rows_to_table(rows, ROLLOUT_V2), str(out / "part-00000-of-00001.parquet"))
    (out / "_manifest.json").write_text('{"rows": 5}')
    return out


def run(tmp_path, name, policy_dir, rollouts):
    out, metrics = tmp_path / f"data/steps/{name}", tmp_path / f"metrics/steps/{name}.json"
    cache = tmp_path / "cache"
    argv = [name, "--rollouts", str(rollouts), "--model", str(policy_dir), "--out", str(out)]
    steps_stage.main([*argv, "--cache", str(cache), "--metrics", str(metrics)])
    return out, json.loads(metrics.read_text())


def test_mc_and_binary_search_on_the_real_model(tmp_path, params_file, policy_dir, stage_log):
    params = tiny_params()
    config = {"k": 2, "segment": {"strategy": "sentences"}, "continuation": {"max_new_tokens": 16}}
    params["steps"] = {
        "mc": {"tasks": ["math"], "config": {**config, "method": "mc"}},
        "bs": {"tasks": ["math"], "config": {**config, "method": "binary_search"}},
    }
    params_file(params)
    rollouts = write_rollouts(tmp_path)

    mc_out, mc = run(tmp_path, "mc", policy_dir, rollouts)
    bs_out, bs = run(tmp_path, "bs", policy_dir, rollouts)

    for out, metrics in ((mc_out, mc), (bs_out, bs)):
        manifest = json.loads((out / "_manifest.json").read_text())
        assert manifest["schema"] == "step_label_v1" and manifest["rejects"] == {"no_reference": 1}
        assert manifest["selection"] == {"rollouts": 5, "other_tasks": 1, "not_sampled": 0, "selected": 4}
        # the continuing model's provenance is its fingerprint file (an absent file would digest to a constant)
        model = digest_path(policy_dir / FINGERPRINT_FILE)
        assert manifest["inputs"]["model"] == model != digest_path(tmp_path / "absent")
        assert pq.read_schema(next(out.glob("*.parquet"))).remove_metadata() == STEP_LABEL_V1.remove_metadata()
        assert metrics["rollouts"] == 3 and metrics["steps"] == 11  # 4 + 4 + 3 sentences
    rows = {name: read_rows(str(out), STEP_LABEL_V1) for name, out in (("mc", mc_out), ("bs", bs_out))}
    for row in rows["mc"] + rows["bs"]:
        text = next(t for pid, t, _ in COMPLETIONS if row["prompt_id"] == pid)
        assert text[row["char_start"] : row["char_end"]] == row["step_text"]
    # exhaustive MC estimates every step but the last (3 + 3 + 2 prefixes x k=2); the right answer (p1) needs
    # nothing under binary search, the wrong ones a midpoint or two each
    assert mc["continuations"] == 16 and mc["this_run"]["continuations_generated"] == 16
    assert bs["continuations"] < mc["continuations"] / 2 + 1
    assert bs["this_run"]["continuations_generated"] == 0  # every prefix it asked for, MC had already generated
    firsts = {n: {r["rollout_id"]: r["first_error_step"] for r in rs} for n, rs in rows.items()}
    assert firsts["bs"]["p1-r0"] == -1 and firsts["bs"]["p2-r0"] >= 0 and firsts["bs"]["p3-r0"] >= 0
    assert {r["method"] for r in rows["mc"]} == {"mc"} and {r["method"] for r in rows["bs"]} == {"binary_search"}
    # progress: the selected rollouts as the total, with a share, elapsed<remaining and a rate (tqdm's meter)
    lines = [r.getMessage() for r in stage_log.records if r.getMessage().startswith("steps@mc: ")]
    assert any(re.fullmatch(r"steps@mc: 4/4 \(100%\) \[\d\d:\d\d<00:00, .+/rollout\]", x) for x in lines), lines

    _, again = run(tmp_path, "mc", policy_dir, rollouts)  # a rerun: every continuation from the cache
    assert again["this_run"]["continuations_generated"] == 0 and again["continuations"] == 16


def test_mc_with_vllm_continuations(tmp_path, params_file, policy_dir, vllm_engine):
    """steps with `backend: vllm` (vLLM's CPU build; the session's engine): the same labels' shape and accounting."""
    params = tiny_params()
    config = {"k": 2, "segment": {"strategy": "sentences"}, "continuation": {"max_new_tokens": 16}, "method": "mc"}
    params["steps"] = {"mc": {"tasks": ["math"], "config": config, "backend": "vllm"}}
    params_file(params)
    out, metrics = run(tmp_path, "mc", policy_dir, write_rollouts(tmp_path))
    assert metrics["rollouts"] == 3 and metrics["steps"] == 11
    assert metrics["continuations"] == 16 and metrics["this_run"]["continuations_generated"] == 16
    rows = read_rows(str(out), STEP_LABEL_V1)
    assert {r["method"] for r in rows} == {"mc"} and all(r["n_continuations"] in (0, 2) for r in rows)
    assert {r["rollout_id"] for r in rows} == {"p1-r0", "p2-r0", "p3-r0"}


def test_consensus_with_the_real_model_as_step_judge(tmp_path, params_file, policy_dir):
    """MC and the 135M step critic: a rollout is kept only where both name the same first error; every other one
    is a counted reject with the reason, and the judge's reply is kept in raw."""
    params = tiny_params()
    judge = {"backend": {"model": str(policy_dir), "batch_size": 4}, "max_tokens": 8}
    config = {"k": 2, "segment": {"strategy": "sentences"}, "continuation": {"max_new_tokens": 16}, "judge": judge}
    params["steps"] = {"both": {"tasks": ["math"], "config": {**config, "method": "consensus", "search": "mc"}}}
    params_file(params)
    out, metrics = run(tmp_path, "both", policy_dir, write_rollouts(tmp_path))
    manifest = json.loads((out / "_manifest.json").read_text())
    rejects = manifest["rejects"]
    assert set(rejects) <= {"no_reference", "judge_unreadable", "first_error_disagrees"}
    assert rejects["no_reference"] == 1
    rows = read_rows(str(out), STEP_LABEL_V1)
    kept = {r["rollout_id"] for r in rows}
    assert len(kept) + sum(rejects.values()) == 4 and metrics["rollouts"] == len(kept)  # nothing lost
    for row in rows:
        raw = json.loads(row["raw"])
        assert row["method"] == "consensus" and raw["judge"]["first_error"] == row["first_error_step"]
        assert raw["search"]["first_error"] == row["first_error_step"]


PSEUDO = [  # math prompts; q1 and q2 have no reference
    ("q1", 0, "Tom has 3 apples. He buys 4 more. So he has 3 + 4 = 7 apples. The answer is 7.", None),
    ("q1", 1, "Three apples and four apples. That makes 7. The answer is 7.", None),
    ("q1", 2, "Tom has 3 apples. He buys 4 more. So he has 3 + 4 = 8 apples. The answer is 8.", None),
    ("q2", 0, "Five it is. The answer is 5.", None),  # q2: one vote each for 5 and 6, no majority
    ("q2", 1, "Six it is. The answer is 6.", None),
    ("q3", 0, "We add the numbers. The sum is 12. The answer is 12.", "9"),  # a given reference
]


def test_step_labels_against_the_prompts_majority_answer(tmp_path, params_file, policy_dir):
    """Prompts without a reference get step labels checked against their rollouts' majority answer (TTRL), flagged in
    `method`; a prompt whose rollouts have no majority is rejected, saying why; a given reference is kept
    (given_or_pseudo; which rows vote under each mode is tests/transforms/steps/test_pseudo_reference.py)."""
    mode = "given_or_pseudo"
    params = tiny_params()
    config = {"k": 1, "segment": {"strategy": "sentences"}, "continuation": {"max_new_tokens": 8}}
    config["method"] = "binary_search"  # a final answer that agrees with the vote needs no continuation
    params["steps"] = {"mc": {"tasks": ["math"], "config": {**config, "reference": mode}}}
    params_file(params)
    out_dir = tmp_path / "data/rollouts"
    out_dir.mkdir(parents=True)
    rows = [rollout(pid, i, text, reference=ref) for pid, i, text, ref in PSEUDO]
    write_table(rows_to_table(rows, ROLLOUT_V2), str(out_dir / "part-00000-of-00001.parquet"))
    (out_dir / "_manifest.json").write_text(json.dumps({"rows": len(rows)}))

    out, metrics = run(tmp_path, "mc", policy_dir, out_dir)
    steps = read_rows(str(out), STEP_LABEL_V1)
    rejects = {r["row_id"]: r for r in read_rows(str(out / "_rejects"))}
    by_rollout = {}
    for row in steps:
        by_rollout.setdefault(row["rollout_id"], []).append(row)
    q1 = [by_rollout[f"q1-r{i}"] for i in range(3)]
    for labeled in q1:
        assert {r["method"] for r in labeled} == {"binary_search+pseudo_reference"}
        assert json.loads(labeled[0]["raw"])["pseudo_reference"] == {"answer": "7", "vote_share": pytest.approx(2 / 3)}
    finals = [json.loads(labeled[0]["raw"])["final_correct"] for labeled in q1]
    assert finals == [True, True, False]  # 7, 7 and 8 against the majority's 7
    assert [labeled[0]["first_error_step"] for labeled in q1][:2] == [-1, -1] and q1[2][0]["first_error_step"] >= 0
    prm, rejected = build_prm_row(rows[2], rows[2], q1[2])  # a PRM row keeps the flag
    assert rejected is None and prm["method"] == "binary_search+pseudo_reference", rejected
    assert {rejects[f"q2-r{i}"]["reason"] for i in range(2)} == {"no_pseudo_reference"}
    assert "no majority" in rejects["q2-r0"]["detail"]
    assert {r["method"] for r in by_rollout["q3-r0"]} == {"binary_search"}  # q3 keeps its reference
    assert metrics["rollouts"] + sum(metrics["rejects"].values()) == len(PSEUDO)
