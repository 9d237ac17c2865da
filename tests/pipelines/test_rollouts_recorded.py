"""Recorded transcripts as rollouts: a `traces` prompts source, `rollouts.backend: recorded`, the label stage and
assemble, on a JSONL file of OpenAI-format transcripts with tool calls written here. Pairs come only from one
prompt's own traces; the rows say they were recorded (policy, file digest, line), never sampled; a malformed line is
the prompts stage's reject naming the line and the reason. The tokenizer that counts tokens is the default model's."""

import json

import pytest

from rewardmill.pipelines import assemble, export, label, rollouts
from rewardmill.schemas import PAIR_V3, ROLLOUT_V3
from rewardmill.schemas.common import schema_id
from rewardmill.transforms.io.parquet import read_rows, read_table
from rewardmill.transforms.sources.traces import file_digest
from rewardmill.transforms.stage.outputs import count_rejects
from rewardmill.transforms.validation.runner import validate_folder
from tests.conftest import tiny_params
from tests.pipelines.stage_data import make_prompts

CALC = {"type": "function", "function": {"name": "calc", "parameters": {"type": "object"}}}


def transcript(question: str, *turns, reference: str) -> dict:
    return {"messages": [{"role": "user", "content": question}, *turns], "tools": [CALC], "reference": reference,
            "task": "math"}  # fmt: skip


def call(expression: str) -> list[dict]:
    arguments = json.dumps({"expression": expression})
    return [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "calc", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "calc", "content": str(eval(expression))},  # noqa: S307
    ]  # fmt: skip


LINES = [
    transcript("What is 6 * 7?", *call("6*7"), {"role": "assistant", "content": "The answer is 42."}, reference="42"),
    transcript("What is 2 + 2?", {"role": "assistant", "content": "5"}, reference="4"),
    transcript("What is 6 * 7?", {"role": "assistant", "content": "I think 41."}, reference="42"),
    transcript("What is 2 + 2?", {"role": "assistant", "content": "4"}, reference="4"),
    {"messages": [{"role": "user", "content": "What is 1 + 1?"}]},  # line 5: no answer
    transcript("What is 6 * 7?", *call("6*8"), {"role": "assistant", "content": "48"}, reference="42"),
]


@pytest.fixture
def recorded(tmp_path, params_file, policy_dir):
    path = tmp_path / "agent_logs.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    params = tiny_params()
    params["prompts"]["sources"] = [{"name": "logs", "kind": "traces", "path": str(path)}]
    params["rollouts"]["backend"] = "recorded"
    params["labelers"] = {"math_answer": params["labelers"]["math_answer"]}
    params["assemble"]["aggregate"].update(gates=["math_answer"], weights={})
    params["assemble"]["filters"]["dedup"].update(exact=False, near_threshold=None)
    params["assemble"]["filters"]["decontaminate"]["files"] = []
    params.pop("steps")
    prompts = make_prompts(tmp_path, params_file, params)
    out = tmp_path / "data/rollouts"
    rollouts.main(["--prompts", str(prompts), "--model", str(policy_dir), "--out", str(out)])
    return path, prompts, out


def test_recorded_traces_are_rollouts_that_say_so(recorded):
    path, prompts, out = recorded
    assert count_rejects(str(prompts)) == {"no_answer": 1}
    (reject,) = read_rows(str(prompts / "_rejects"))
    assert reject["row_id"] == f"{path}:5" and "line 5" in reject["detail"]
    rows = read_rows(str(out))
    (shard,) = out.glob("part-*.parquet")
    assert read_table(str(shard)).schema.equals(ROLLOUT_V3, check_metadata=True)
    assert len(rows) == 5  # every good line, once
    digest = file_digest(str(path))
    lines = set()
    for row in rows:
        assert row["policy"]["name"] == "recorded" and row["policy"]["backend"] == "recorded"
        assert row["policy"]["fingerprint"].startswith("recorded:") and row["logprob_sum"] is None
        where = json.loads(row["environment"]["config"])
        assert row["environment"]["name"] == "recorded" and where["sha256"] == digest and where["file"] == path.name
        lines.add(where["line"])
        assert row["completion"] == row["turns"][-1]["content"] and row["n_tokens"] > 0
        assert json.loads(row["tools"]) == [CALC]
    assert lines == {1, 2, 3, 4, 6}
    called = next(r for r in rows if json.loads(r["environment"]["config"])["line"] == 1)
    assert [t["role"] for t in called["turns"]] == ["assistant", "tool", "assistant"]
    assert json.loads(called["turns"][0]["tool_calls"][0]["function"]["arguments"]) == {"expression": "6*7"}


def test_labels_and_pairs_come_from_a_prompts_own_traces_and_validate(tmp_path, recorded, policy_dir, params_file):
    _, prompts, out = recorded
    labels = tmp_path / "data/labels"
    label.main(["math_answer", "--rollouts", str(out), "--out", str(labels / "math_answer")])
    verdicts = {r["rollout_id"]: r["verdict"] for r in read_rows(str(labels / "math_answer"))}
    rows = {r["rollout_id"]: r for r in read_rows(str(out))}
    by_line = {json.loads(r["environment"]["config"])["line"]: verdicts[rid] for rid, r in rows.items()}
    assert by_line == {1: "correct", 2: "incorrect", 3: "incorrect", 4: "correct", 6: "incorrect"}
    datasets = tmp_path / "data/datasets"
    assemble.main(["--rollouts", str(out), "--labels", str(labels), "--out", str(datasets)])
    pairs = read_rows(str(datasets / "pairs"))
    assert pairs
    for pair in pairs:  # within one prompt: chosen and rejected are that prompt's own recorded traces
        chosen, rejected = rows[pair["chosen_rollout_id"]], rows[pair["rejected_rollout_id"]]
        assert chosen["prompt_id"] == rejected["prompt_id"] == pair["prompt_id"]
        assert (
            verdicts[pair["chosen_rollout_id"]] == "correct" and verdicts[pair["rejected_rollout_id"]] == "incorrect"
        )
    (shard,) = (datasets / "pairs").glob("part-*.parquet")
    assert read_table(str(shard)).schema.equals(PAIR_V3, check_metadata=True)
    report = validate_folder(str(datasets / "pairs"), schema_id(PAIR_V3), dataset="pairs")
    assert report["success"], [e for e in report["expectations"] if not e["success"]]

    # the card says where the rows came from: recorded transcripts, off-policy, the traces file's digest
    card_dir = tmp_path / "export"
    export.main(
        ["--datasets", str(datasets), "--model", str(policy_dir), "--rollouts", str(out), "--out", str(card_dir)]
    )
    card = (card_dir / "README.md").read_text()
    policy = rows[pair["chosen_rollout_id"]]["policy"]["fingerprint"]
    assert "recorded transcripts, **off-policy**" in card and policy in card
    assert "Built with rewardmill from the policy's own samples" not in card
    # a verifiers user loads the exported `rl` prompts with the project's labelers as the rubric
    check_verifiers_taskset(card_dir, tmp_path / "params.yaml", prompts)


def test_recorded_is_a_runs_only_policy_and_needs_recorded_prompts(tmp_path, params_file, policy_dir):
    from rewardmill.pipelines.rollouts import RolloutsConfig
    from rewardmill.transforms.environments.params import EnvironmentParams
    from rewardmill.transforms.sampling.pool import PolicySpec

    with pytest.raises(ValueError, match="only policy"):
        RolloutsConfig(backend="recorded", environment=EnvironmentParams("feedback"))
    with pytest.raises(ValueError, match="only policy"):
        RolloutsConfig(policies={"logs": PolicySpec(backend="recorded")})
    params = tiny_params()  # the arithmetic and code prompts: nothing recorded
    params["rollouts"]["backend"] = "recorded"
    prompts = make_prompts(tmp_path, params_file, params)
    with pytest.raises(SystemExit, match="no prompt has recorded traces: add a prompts source of kind traces"):
        rollouts.main(["--prompts", str(prompts), "--model", str(policy_dir), "--out", str(tmp_path / "r")])
    assert not (tmp_path / "r").exists()


def check_verifiers_taskset(export_dir, params_path, prompts_dir) -> None:
    """The exported rl config as a verifiers taskset (rewardmill.rewards.verifiers_taskset): one task per row, and
    its rubric's score for a completion equals the labeler's label of it."""
    import asyncio

    from rewardmill.rewards.verifiers_taskset import ExportedConfig, ExportedTaskset
    from rewardmill.transforms.labelers.math_answer import MathAnswerVerifier
    from rewardmill.transforms.sources.vf_tasks import prompt_messages, trace_of

    task_config = {
        "params": str(params_path),
        "labelers": ["math_answer"],
        "prompts": str(prompts_dir),
        "cache": False,
    }
    tasks = list(ExportedTaskset(ExportedConfig(export=str(export_dir), task=task_config)))  # the docstring's snippet
    rl = read_rows(str(export_dir / "data/rl")) if (export_dir / "data/rl").exists() else None
    assert tasks and (rl is None or len(tasks) == len([r for r in rl if r["split"] == "train"]))
    verifier = MathAnswerVerifier()
    for task in tasks:
        for text in (f"The answer is {task.data.reference}.", "I do not know."):
            trace = trace_of(task, prompt_messages(task.data), [{"role": "assistant", "content": text}])
            asyncio.run(task.score(trace))
            expected = verifier.label(text, task.data.reference).score
            assert trace.rewards["math_answer"].score == expected, (text, trace.rewards)
