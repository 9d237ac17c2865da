"""A verifiers environment end to end on the real default model: the prompts stage reads its taskset (source kind
`verifiers`), the rollouts stage runs its episodes (`rollouts.environment.name: verifiers`), and the label stage turns
its rubric into labels. The environments are modules written for the tests (tests/transforms/environments/vf_envs):
a single-turn sum task with a two-function rubric, and a calculator tool task with a stop condition.

On every row, each reward function's label equals the score verifiers computes: the one the environment recorded
when the episode ended (verifiers' `Task.score` on the trace it built as the episode ran), and the one this test
computes itself from the written row with verifiers' own types (a trace built here, not by rewardmill's code)."""

import asyncio
import json
from pathlib import Path

import pytest

from rewardmill.pipelines import label as label_stage
from rewardmill.pipelines import rollouts
from rewardmill.transforms.io.parquet import read_rows
from tests.conftest import tiny_params
from tests.pipelines.stage_data import make_prompts

ENVS = Path(__file__).parents[1] / "transforms/environments/vf_envs"


@pytest.fixture
def vf_envs(monkeypatch):
    monkeypatch.syspath_prepend(str(ENVS))
    monkeypatch.setenv("PYTHONPATH", str(ENVS))


def verifiers_params(env_id: str, args: dict) -> dict:
    params = tiny_params()
    params["prompts"]["sources"] = [{"name": "vf", "kind": "verifiers", "id": env_id, "args": args}]
    params["rollouts"].update(n=2, max_new_tokens=24, batch_size=4)
    params["rollouts"]["environment"] = {"name": "verifiers", "config": {"id": env_id, "args": args}, "max_turns": 3}
    params["labelers"] = {"rubric": {"labeler": "verifiers", "tasks": ["environment"]}}
    return params


def run(tmp_path, params_file, params, policy_dir) -> tuple[list[dict], list[dict], list[dict]]:
    prompts = make_prompts(tmp_path, params_file, params)
    out = tmp_path / "rollouts"
    rollouts.main(["--prompts", str(prompts), "--model", str(policy_dir), "--out", str(out)])
    labels = tmp_path / "labels"
    label_stage.main(["rubric", "--rollouts", str(out), "--prompts", str(prompts), "--out", str(labels)])
    return read_rows(str(prompts)), read_rows(str(out)), read_rows(str(labels))


def verifiers_own_scores(prompt: dict, rollout: dict) -> dict[str, tuple[float, float]]:
    """The rubric on the written row, built with verifiers' own API: the task from the taskset the prompt names, a
    Trace of its opening messages and the row's turns, `Task.score`."""
    import verifiers.v1 as vf
    from verifiers.v1.configs.agent import AgentConfig
    from verifiers.v1.graph import MessageNode
    from verifiers.v1.trace import AgentInfo, TraceTask
    from verifiers.v1.utils.loaders import taskset_config_type

    spec = json.loads(prompt["metadata"])["verifiers"]
    env = spec["environment"]
    taskset = vf.load_taskset(taskset_config_type(env["id"]).model_validate({**env["args"], "id": env["id"]}))
    task = next(t for t in taskset if t.key == spec["task"]["key"])
    messages = [vf.SystemMessage(content=task.data.system_prompt)] if task.data.system_prompt else []
    messages.append(vf.UserMessage(content=task.data.prompt))
    sampled = [False] * len(messages)
    for turn in rollout["turns"]:
        if turn["role"] == "assistant":
            calls = [
                vf.ToolCall(id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
                for c in turn["tool_calls"] or []
            ]
            messages.append(vf.AssistantMessage(content=turn["content"], tool_calls=calls or None))
        else:
            messages.append(
                vf.ToolMessage(tool_call_id=turn["tool_call_id"], content=turn["content"], name=turn["name"])
            )
        sampled.append(turn["role"] == "assistant")
    nodes = [
        MessageNode(parent=i - 1 if i else None, message=m, sampled=s)
        for i, (m, s) in enumerate(zip(messages, sampled, strict=True))
    ]
    trace = vf.Trace(
        task=TraceTask(type=type(task).__name__, data=task.data), agent=AgentInfo(config=AgentConfig()), nodes=nodes
    )
    asyncio.run(task.score(trace))
    return {name: (r.score, r.weight) for name, r in trace.rewards.items()}


def check_labels_equal_verifiers(prompts: list[dict], rows: list[dict], labels: list[dict]) -> None:
    by_prompt = {p["prompt_id"]: p for p in prompts}
    by_rollout: dict[str, dict] = {}
    for label in labels:
        by_rollout.setdefault(label["rollout_id"], {})[label["aspect"]] = label
    assert set(by_rollout) == {r["rollout_id"] for r in rows}  # every row labeled
    for row in rows:
        own = verifiers_own_scores(by_prompt[row["prompt_id"]], row)
        mine = by_rollout[row["rollout_id"]]
        assert {name: (label["score"], json.loads(label["raw"])["weight"]) for name, label in mine.items()} == own
        for label in mine.values():
            assert label["verdict"] == ("correct" if label["score"] >= 1.0 else "incorrect")
        # as the episode ended, in the rollouts stage; an episode the stage cut (max_turns) ended with no score
        recorded = json.loads(row["env_info"] or "{}").get("rewards")
        if recorded is None:
            assert row["stop_reason"] in ("max_turns", "max_tokens") and row["env_reward"] is None
            continue
        assert {name: (r["score"], r["weight"]) for name, r in recorded.items()} == own, row["turns"]
        assert row["env_reward"] == pytest.approx(sum(s * w for s, w in own.values()))


def test_a_single_turn_verifiers_environment_on_the_default_model(tmp_path, params_file, policy_dir, vf_envs):
    params = verifiers_params("vf_math_env", {"count": 4, "task": {"max_words": 6}})
    prompts, rows, labels = run(tmp_path, params_file, params, policy_dir)
    assert len(prompts) == 4 and {p["task"] for p in prompts} == {"environment"}
    for p in prompts:  # the task's system prompt and prompt open the conversation; its answer is the reference
        assert [m["role"] for m in p["messages"]] == ["system", "user"]
        task = json.loads(p["metadata"])["verifiers"]["task"]
        assert p["reference"] == str(task["data"]["answer"]) and task["type"] == "SumTask"
    assert len(rows) == 8
    manifest = json.loads((tmp_path / "rollouts" / "_manifest.json").read_text())
    (environment,) = manifest["environments"]  # what ran the episodes, as resolved: the card names it
    assert environment["name"] == "verifiers" and environment["config"]["module"]["module"] == "vf_math_env"
    for row in rows:
        environment = json.loads(row["environment"]["config"])
        assert row["environment"]["name"] == "verifiers" and environment["args"] == {
            "count": 4,
            "task": {"max_words": 6},
        }
        assert environment["library"] == "0.4.0" and len(environment["module"]["source_sha256"]) == 64
        assert row["stop_reason"] == "done" and json.loads(row["env_info"])["stop"] == "agent_completed"
        assert row["tools"] is None and [t["role"] for t in row["turns"]] == ["assistant"]
    check_labels_equal_verifiers(prompts, rows, labels)
    assert {label["aspect"] for label in labels} == {"correct", "brief"}
    # the rubric's max_words arg reached the task: `brief` is exactly "at most 6 words" on every row
    for label in labels:
        if label["aspect"] == "brief":
            row = next(r for r in rows if r["rollout_id"] == label["rollout_id"])
            assert label["score"] == float(len(row["completion"].strip().split()) <= 6)


def test_a_tool_verifiers_environment_on_the_default_model(tmp_path, params_file, policy_dir, vf_envs):
    params = verifiers_params("vf_calc_env", {"count": 3})
    prompts, rows, labels = run(tmp_path, params_file, params, policy_dir)
    assert len(rows) == 6
    for row in rows:  # the toolset's tool as verifiers advertises it, offered in the text protocol
        assert [t["function"]["name"] for t in json.loads(row["tools"])] == ["calc_evaluate"]
        assert (
            row["prompt_messages"][0]["role"] == "system" and "calc_evaluate" in row["prompt_messages"][0]["content"]
        )
        assert row["stop_reason"] in ("done", "max_turns")
    check_labels_equal_verifiers(prompts, rows, labels)
    assert {label["aspect"] for label in labels} == {"correct", "used_tool"}
