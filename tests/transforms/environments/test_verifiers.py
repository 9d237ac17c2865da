"""The `verifiers` environment's episode logic on written assistant turns (what a policy could send, hostile ones
included), with the calculator tool environment of vf_envs: tool calls through the in-memory MCP server, the
rubric at the end, the task's stop condition, and what it refuses. The real model's episodes are in
tests/pipelines/test_rollouts_verifiers.py."""

import json
from pathlib import Path

import pytest

from rewardmill.transforms.environments.verifiers import VerifiersConfig, VerifiersEnvironment
from rewardmill.transforms.sources import verifiers as source

pytestmark = pytest.mark.slow  # the first import of verifiers takes about 4 s

ENVS = Path(__file__).parent / "vf_envs"


@pytest.fixture
def calc(monkeypatch):
    monkeypatch.syspath_prepend(str(ENVS))
    env = VerifiersEnvironment(VerifiersConfig(id="vf_calc_env", args={"count": 2}))
    prompts = [
        {"messages": record["messages"], "metadata": json.dumps(record["metadata"])}
        for _, record in source.generate("vf", "vf_calc_env", {"count": 2}, None)
    ]
    return env, prompts


def call(expression, turn=0, name="calc_evaluate"):
    body = json.dumps({"name": name, "arguments": {"expression": expression}})
    return f"Let me compute.<tool_call>{body}</tool_call>"


def test_a_tool_call_runs_through_the_toolset_and_the_answer_is_scored_by_the_rubric(calc):
    env, prompts = calc
    state = env.reset(prompts[0])  # What is 3 * 4?
    state, result = env.step(state, env.parse(call("3 * 4"), 0))
    assert not result.done and result.messages == [
        {"role": "tool", "tool_call_id": "call_0_0", "content": "12", "name": "calc_evaluate"}
    ]
    state, result = env.step(state, env.parse("It is 12.", 1))
    assert result.done and result.reward == 1.25
    assert result.info["rewards"] == {
        "correct": {"score": 1.0, "weight": 1.0},
        "used_tool": {"score": 1.0, "weight": 0.25},
    }
    assert result.info["stop"] == "agent_completed"


@pytest.mark.parametrize(
    "text, error",
    [
        (call("__import__('os').system('id')"), "only + - * of integers"),  # code is parsed, never run
        (call("1", name="calc_shell"), "unknown tool 'calc_shell'"),  # not in the toolset: refused by the parser
        ('<tool_call>{"name": "calc_evaluate", "arguments": "{bad"}</tool_call>', "not JSON"),
        ('<tool_call>{"name": "calc_evaluate", "arguments": {"expr": "1"}}</tool_call>', "expression"),  # bad args
        ("<tool_call>not json", "without"),  # unclosed
    ],
)
def test_a_bad_call_is_an_error_result_the_episode_goes_on(calc, text, error):
    env, prompts = calc
    state, result = env.step(env.reset(prompts[0]), env.parse(text, 0))
    assert not result.done and len(result.messages) == 1 and result.messages[0]["role"] == "tool"
    assert error in result.messages[0]["content"] and result.info["tool_errors"] == 1


def test_the_tasks_stop_condition_ends_the_episode_and_it_is_still_scored(calc):
    env, prompts = calc
    state = env.reset(prompts[0])
    state, result = env.step(state, env.parse(call("1 + 1"), 0))
    assert not result.done
    state, result = env.step(state, env.parse(call("2 + 2"), 1))  # max_calls 2: `enough_calls` fires
    assert result.done and result.info["stop"] == "enough_calls"
    assert result.info["rewards"]["used_tool"]["score"] == 1.0 and result.info["rewards"]["correct"]["score"] == 0.0


def test_a_prompt_from_elsewhere_or_edited_data_is_refused(calc):
    env, prompts = calc
    with pytest.raises(ValueError, match="no verifiers task"):
        env.reset({"messages": prompts[0]["messages"], "metadata": None})
    env.reset(prompts[0])  # the genuine task first: what the environment keeps of it must not vouch for an edit
    edited = json.loads(prompts[0]["metadata"])
    edited["verifiers"]["task"]["data"]["answer"] = 13  # a reference edited after the prompts were made
    with pytest.raises(ValueError, match="hashes to"):
        env.reset({"messages": prompts[0]["messages"], "metadata": json.dumps(edited)})


def test_the_config_records_the_environments_code_and_refuses_a_stale_one(monkeypatch):
    monkeypatch.syspath_prepend(str(ENVS))
    config = VerifiersConfig(id="vf_math_env")
    assert config.library == "0.4.0" and config.module["module"] == "vf_math_env" and config.module["version"] is None
    assert len(config.module["source_sha256"]) == 64
    with pytest.raises(ValueError, match="is not what is installed"):
        VerifiersConfig(id="vf_math_env", library="0.3.0")
    with pytest.raises(ModuleNotFoundError, match="not found"):
        VerifiersConfig(id="vf_no_such_env")
