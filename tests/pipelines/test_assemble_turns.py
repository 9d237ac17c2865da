"""assemble on trajectories: the environment's reward as the gate, and one turn-level PRM row per trajectory that the
PRM suite validates, beside the single-turn outputs. Hand-made ROLLOUT_V3 rows in the shapes the rollouts stage
writes (tests/pipelines/test_rollouts_environment.py runs the real episodes), so every case is present: a recovery,
a failure, a clean tool call, and an episode whose environment raised before any turn."""

import json
from pathlib import Path

import pytest

from rewardmill.pipelines import assemble, label
from rewardmill.schemas import PAIR_V3, RL_V2, ROLLOUT_V3, SFT_V2
from rewardmill.schemas.common import schema_id
from rewardmill.transforms.config import ConfigError
from rewardmill.transforms.environments.summary import episode_summary
from rewardmill.transforms.io.parquet import read_rows, read_table, rows_to_table, write_table
from rewardmill.transforms.stage.outputs import count_rejects, write_manifest
from rewardmill.transforms.validation.runner import validate_folder
from tests.conftest import tiny_params
from tests.pipelines.test_label_and_assemble import rollout

ENV = {"name": "feedback", "version": "1", "config": "{}"}
CALL = {"id": "call_0_0", "type": "function", "function": {"name": "python", "arguments": '{"code": "print(2+2)"}'}}
CALL_TEXT = '<tool_call>{"name": "python", "arguments": {"code": "print(2+2)"}}</tool_call>'  # the text protocol
TOOLS = json.dumps([{"type": "function", "function": {"name": "python", "parameters": {"type": "object"}}}])


def assistant(content, tool_calls=None, n=3, **info):
    turn = {"role": "assistant", "content": content, "reasoning": None, "tool_calls": tool_calls, "n_tokens": n}
    return {**turn, "tool_call_id": None, "name": None, "finish_reason": "stop", "info": json.dumps(info)}


def other(role, content, **names):
    turn = {"role": role, "content": content, "reasoning": None, "tool_calls": None, "n_tokens": None}
    return {**turn, "finish_reason": None, "info": None, "tool_call_id": names.get("call"), "name": names.get("name")}


PROTOCOL = {"role": "system", "content": "You can call tools. To call one, write ..."}
TRY_AGAIN = other("user", "That is not correct. Try again.")
RESULT = other("tool", "4", call="call_0_0", name="python")
WRONG = assistant("\\boxed{5}", verdict="incorrect")
RIGHT = {**assistant("\\boxed{4}", verdict="correct"), "reasoning": "2 + 2 = 4"}  # its trace, kept apart
EPISODES = {
    # (prompt, index): (turns, stop reason, reward, last info)
    ("p1", 0): ([WRONG, TRY_AGAIN, RIGHT],
                "done", 1.0, {"verdict": "correct"}),  # recovered at the second attempt
    ("p1", 1): ([WRONG, TRY_AGAIN, assistant("\\boxed{3}", verdict="incorrect")],
                "done", 0.0, {"verdict": "incorrect"}),  # never solved
    ("p2", 0): ([assistant(CALL_TEXT, [CALL], calls=1, tool_errors=0), RESULT,
                 assistant("\\boxed{4}", calls=1, verdict="correct")], "done", 1.0, {"verdict": "correct"}),
    ("p2", 1): ([], "error", None, {"error": "ValueError: boom", "at": "reset"}),  # no turn at all
}  # fmt: skip


def trajectory(prompt_id, index, turns, stop, reward, info):
    final = [t for t in turns if t["role"] == "assistant"]
    row = rollout(prompt_id, index, (final[-1]["content"] or "") if final else "")
    row["messages"] = [{"role": "user", "content": f"What is 2 + 2? ({prompt_id})"}]  # distinct prompts (dedup)
    # p2 ran with a tool protocol's system message (python_tool on a template without tools): the prompt as fed
    fed = [PROTOCOL, *row["messages"]] if prompt_id == "p2" else None
    return {**row, "n_tokens": sum(t["n_tokens"] for t in final), "reasoning": None, "reasoning_status": None,
            "reasoning_tokens": None, "turns": turns, "tools": TOOLS, "environment": ENV, "stop_reason": stop,
            "env_reward": reward, "env_info": json.dumps(info), "prompt_messages": fed}  # fmt: skip


def write_trajectories(root) -> Path:
    """EPISODES as the rollouts stage writes them (ROLLOUT_V3 and a manifest with its `episodes`) under `root`."""
    rows = [trajectory(p, i, *episode) for (p, i), episode in EPISODES.items()]
    out = root / "data/rollouts"
    out.mkdir(parents=True)
    write_table(rows_to_table(rows, ROLLOUT_V3), str(out / "part-00000-of-00001.parquet"))
    write_manifest(out, stage="rollouts", schema=ROLLOUT_V3, config={}, extra={"episodes": episode_summary(rows)})
    return out


@pytest.fixture
def trajectories(tmp_path):
    return write_trajectories(tmp_path)


def params_for() -> dict:
    params = tiny_params()
    params["labelers"] = {"env": {"labeler": "environment"}, "turns": {"labeler": "turns"}}
    # the README's combination: the outcome gates, the turn rewards rank within its class, normalized per prompt
    params["assemble"]["aggregate"].update(gates=["env"], weights={"turns": 1.0}, normalize={"turns": "prompt"})
    params["assemble"]["filters"]["dedup"].update(exact=False, near_threshold=None)
    params.pop("steps")  # no steps labeler: prm/ holds the turn rows alone
    return params


def build_datasets(tmp_path, trajectories):
    """The label stages of params_for(), then assemble: the labels' and the datasets' folders."""
    labels = tmp_path / "data/labels"
    for key in ("env", "turns"):
        label.main([key, "--rollouts", str(trajectories), "--out", str(labels / key)])
    out = tmp_path / "data/datasets"
    assemble.main(["--rollouts", str(trajectories), "--labels", str(labels), "--out", str(out)])
    return labels, out


@pytest.mark.slow  # two label stages and two assemble stages
def test_trajectories_make_turn_rows_that_validate(tmp_path, params_file, trajectories):
    params_file(params_for())
    labels, out = build_datasets(tmp_path, trajectories)
    env = {r["rollout_id"]: (r["score"], r["verdict"]) for r in read_rows(str(labels / "env"))}
    assert env == {"p1-r0": (1.0, "correct"), "p1-r1": (0.0, "incorrect"), "p2-r0": (1.0, "correct"),
                   "p2-r1": (None, "error")}  # fmt: skip

    rewards = {r["rollout_id"]: r["reward"] for r in read_rows(str(out / "_rewards"))}
    # p1: the recovered episode's turn scores (1 of 2 turns good, solved at attempt 2) are its group's best, the
    # failed one's its worst: 1.0 and 0.0. p2-r0 is alone in its group (p2-r1 has no turns): neutral 0.5 -> 0.875.
    assert rewards == pytest.approx({"p1-r0": 1.0, "p1-r1": 0.0, "p2-r0": 0.875, "p2-r1": None}, nan_ok=True)
    pairs = read_rows(str(out / "pairs"))  # the environment's reward decides correctness, as a rule verifier's
    assert {(p["chosen_rollout_id"], p["rejected_rollout_id"]) for p in pairs} == {("p1-r0", "p1-r1")}
    # multi-turn datasets: every message after the prompt, in TRL's format with tool calls, and the tools beside them
    for name, schema in (("pairs", PAIR_V3), ("sft", SFT_V2), ("rl", RL_V2)):
        (shard,) = (out / name).glob("part-*.parquet")
        assert read_table(str(shard)).schema.equals(schema, check_metadata=True), name
        report = validate_folder(str(out / name), schema_id(schema), dataset=name)
        assert report["success"], (name, [e for e in report["expectations"] if not e["success"]])
    (pair,) = pairs
    assert [(m["role"], m["content"]) for m in pair["chosen"]] == [
        ("assistant", "\\boxed{5}"), ("user", "That is not correct. Try again."), ("assistant", "\\boxed{4}"),
    ]  # fmt: skip
    assert pair["rejected"][-1]["content"] == "\\boxed{3}" and pair["tools"] == TOOLS
    sft = {r["rollout_id"]: r for r in read_rows(str(out / "sft"))}
    assert set(sft) == {"p1-r0", "p2-r0"}
    # the prompt a trainer sees is the one the turns followed: with the tool protocol's system message where the
    # environment added one, the prompt's own messages where it added none
    assert sft["p2-r0"]["prompt"] == [PROTOCOL, {"role": "user", "content": "What is 2 + 2? (p2)"}]
    assert sft["p1-r0"]["prompt"] == pair["prompt"] == [{"role": "user", "content": "What is 2 + 2? (p1)"}]
    tool_turn, tool_result, final = sft["p2-r0"]["completion"]
    assert tool_turn["tool_calls"][0]["function"] == CALL["function"] and tool_turn["content"] == CALL_TEXT
    assert (tool_result["role"], tool_result["tool_call_id"], final["content"]) == ("tool", "call_0_0", "\\boxed{4}")
    assert {r["prompt_id"]: r["environment"] for r in read_rows(str(out / "rl"))} == {"p1": ENV, "p2": ENV}
    prm = {r["rollout_id"]: r for r in read_rows(str(out / "prm"))}
    assert set(prm) == {"p1-r0", "p1-r1", "p2-r0"}
    assert (prm["p1-r0"]["labels"], prm["p1-r0"]["first_error_step"]) == ([False, True], 0)  # recovered, kept
    assert prm["p1-r0"]["completions"][1] == "[user] That is not correct. Try again.\n\\boxed{4}"
    assert (prm["p1-r1"]["labels"], prm["p2-r0"]["labels"]) == ([False, False], [True, True])
    assert {(r["method"], r["labeler"]) for r in prm.values()} == {("turns", "turns")}
    assert count_rejects(str(out / "prm")) == {"no_steps": 1}  # the episode that raised: said, not dropped
    manifest = json.loads((out / "prm/_manifest.json").read_text())
    assert manifest["step_methods"] == {"turns": "turns"} and manifest["rows"] == 3
    report = validate_folder(str(out / "prm"), "prm_v1", dataset="prm")
    assert report["success"], [e for e in report["expectations"] if not e["success"]]

    params = params_for()
    params["assemble"]["prm_turns"] = False  # no turn rows: no prm/ folder at all
    params_file(params)
    again = tmp_path / "again"
    assemble.main(["--rollouts", str(trajectories), "--labels", str(labels), "--out", str(again)])
    assert not (again / "prm").exists() and (again / "pairs").exists()


def test_a_steps_labeler_named_turns_is_refused(tmp_path, params_file, trajectories):
    params = params_for()
    params["steps"] = {"turns": {"tasks": ["math"], "config": {"method": "mc"}}}
    params_file(params)
    with pytest.raises(ConfigError, match="steps.turns: the turn-level PRM rows"):
        assemble.main(
            ["--rollouts", str(trajectories), "--labels", str(tmp_path / "labels"), "--out", str(tmp_path / "o")]
        )


@pytest.mark.model  # one step of TRL's DPO and SFT trainers on the real default model
def test_trl_trains_a_step_on_the_multi_turn_pairs_and_sft_rows(tmp_path, params_file, trajectories, policy_dir):
    """The multi-turn pairs (feedback turns inside chosen and rejected) and SFT rows (a tool call, its result, the
    answer; `tools` as TRL reads it) go into TRL's trainers as they are, with the default model's chat template."""
    from datasets import load_dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer

    params_file(params_for())
    _, out = build_datasets(tmp_path, trajectories)
    tokenizer = AutoTokenizer.from_pretrained(policy_dir)
    common = {"max_steps": 1, "per_device_train_batch_size": 1, "report_to": [], "use_cpu": True,
              "save_strategy": "no", "max_length": 256}  # fmt: skip
    for trainer_cls, config_cls, name in ((DPOTrainer, DPOConfig, "pairs"), (SFTTrainer, SFTConfig, "sft")):
        rows = load_dataset("parquet", data_files=str(out / name / "*.parquet"))["train"]
        args = config_cls(output_dir=str(tmp_path / name), **common)
        model = AutoModelForCausalLM.from_pretrained(policy_dir)
        trainer = trainer_cls(model=model, processing_class=tokenizer, train_dataset=rows, args=args)
        loss = trainer.train().training_loss
        assert loss == loss, name  # a number, not NaN


@pytest.mark.model  # label, assemble, validate and export stages; export reads the policy folder's fingerprint
def test_validate_and_export_take_the_multi_turn_datasets(tmp_path, params_file, trajectories, policy_dir):
    """The stages after assemble on a trajectory run: validate's suites (rollout_v3, pair_v3, sft_v2, rl_v2, prm with
    turn rows), its audit of the trajectory labelers, its metrics and view; export's configs and card."""
    from rewardmill.pipelines import export, validate
    from rewardmill.schemas import PROMPT_V1

    params = params_for()
    params["validate"].update(audit_judges=False, min_sft_rows=1)
    params_file(params)
    labels, out = build_datasets(tmp_path, trajectories)
    prompts = tmp_path / "data/prompts"
    prompts.mkdir(parents=True)
    write_manifest(prompts, stage="prompts", schema=PROMPT_V1, config={}, extra={})
    root = tmp_path
    validate.main(["--prompts", str(prompts), "--rollouts", str(trajectories), "--labels", str(labels),
                   "--steps", str(root / "data/steps"), "--datasets", str(out), "--reports", str(root / "reports"),
                   "--metrics", str(root / "metrics/validate.json"), "--plots", str(root / "plots")])  # fmt: skip
    metrics = json.loads((root / "metrics/validate.json").read_text())
    assert metrics["validation"] and all(v["success"] for v in metrics["validation"].values()), metrics["validation"]
    assert {"pairs", "sft", "rl", "prm", "rollouts"} <= set(metrics["validation"])
    assert "bad turn" in (root / "reports/view.html").read_text()  # the chat view's turn labels (the page's JS)
    export.main(["--datasets", str(out), "--model", str(policy_dir), "--out", str(root / "export")])
    card = (root / "export/README.md").read_text()
    assert "Multi-turn preference pairs" in card and "tool calls" in card


@pytest.mark.model  # reads the policy folder's fingerprint (the continuation model), generates nothing
def test_a_steps_stage_rejects_trajectories_saying_where_their_steps_are(
    tmp_path, params_file, trajectories, policy_dir
):
    """Monte Carlo continuations of an episode's final answer alone would ignore the turns before it: each selected
    trajectory is a counted reject that names the turn-level rows, and the stage (and so `dvc repro`) goes on."""
    from rewardmill.pipelines import steps

    params = tiny_params()
    params_file(params)
    out = tmp_path / "steps/mc"
    steps.main(["mc", "--rollouts", str(trajectories), "--model", str(policy_dir), "--out", str(out)])
    selected = json.loads((out / "_manifest.json").read_text())["selection"]["selected"]
    assert selected > 0 and read_rows(str(out)) == []
    rejects = read_rows(str(out / "_rejects"))
    assert {r["reason"] for r in rejects} == {"trajectory"} and len(rejects) == selected
    assert "assemble.prm_turns" in rejects[0]["detail"]
