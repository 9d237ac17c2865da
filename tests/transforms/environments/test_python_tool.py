"""transforms/environments/python_tool.py in the real bwrap sandbox: issue 35's table of bad tool calls and bad
tools (malformed JSON, an unknown tool, a hang, a crash, 1 MB of output, a network attempt). Each is recorded in
the trajectory and counted, and no episode, let alone the stage, crashes."""

import json
import socket

import pytest

from rewardmill.transforms.environments.episodes import EpisodeLimits, by_stop_reason, run_episodes
from rewardmill.transforms.environments.python_tool import PythonToolConfig, PythonToolEnvironment
from rewardmill.transforms.sampling.params import Sample

pytestmark = pytest.mark.slow  # sandbox runs, one of them a timeout

MATH = {"prompt_id": "m", "task": "math", "messages": [{"role": "user", "content": "What is 6*7?"}], "reference": "42"}


def call(code: str) -> str:
    return "<tool_call>" + json.dumps({"name": "python", "arguments": {"code": code}}) + "</tool_call>"


def answers(*texts: str):
    def generate(requests):
        out = []
        for r in requests:
            k = sum(m["role"] == "assistant" for m in r.messages)
            out.append(Sample(0, r.seed, texts[min(k, len(texts) - 1)], 3, "stop", -1.0))
        return out

    return generate


@pytest.fixture(scope="module")
def env():
    environment = PythonToolEnvironment(PythonToolConfig(timeout_seconds=2, max_output_chars=500))
    yield environment
    environment.close()


def episode(env, first: str, final: str = "The answer is \\boxed{42}."):
    (per_prompt,) = run_episodes(env, [MATH], 1, 0, answers(first, final), EpisodeLimits(max_turns=3))
    return per_prompt[0]


def tool_reply(t) -> str:
    (reply,) = [m for m in t.turns if m["role"] == "tool"]
    return reply["content"]


def test_a_good_call_runs_and_the_final_answer_is_verified(env):
    t = episode(env, "Let me check. " + call("print(6 * 7)"))
    assert t.turns[0]["tool_calls"][0]["function"]["arguments"] == {"code": "print(6 * 7)"}
    assert tool_reply(t) == "42" and t.turns[1]["tool_call_id"] == t.turns[0]["tool_calls"][0]["id"]
    assert t.stop_reason == "done" and t.reward == 1.0 and t.info == {"calls": 1, "attempt": 1, "verdict": "correct"}


@pytest.mark.parametrize(
    "first, reply_has, counted",
    [
        (
            '<tool_call>{"name": "python", "arguments": {"code": </tool_call>',
            "error: the call is not JSON",
            "tool_errors",
        ),
        (
            '<tool_call>{"name": "shell", "arguments": {"cmd": "ls"}}</tool_call>',
            "unknown tool 'shell'",
            "tool_errors",
        ),
        (call("while True:\n    pass"), "[killed: exceeded 2", "timeouts"),
        (call("import os\nos._exit(3)"), "[exit 3]", "crashes"),
        (call("raise SystemExit('boom')"), "boom", "crashes"),
        (call("print('x' * 1_000_000)"), "[output cut]", "truncated"),
    ],
)
def test_bad_calls_and_bad_tools_are_recorded_and_counted(env, first, reply_has, counted):
    t = episode(env, first)
    assert reply_has in tool_reply(t) and len(tool_reply(t)) < 600
    assert t.turns[0]["step_info"][counted] == 1
    assert t.stop_reason == "done" and t.reward == 1.0  # the episode went on to its answer
    assert by_stop_reason([[t]])["error"] == 0


def test_a_network_attempt_fails_inside_the_sandbox(env):
    with socket.socket() as server:  # a server the test process can reach: the tool's code must not
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        code = (
            "import socket\n"
            "try:\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
            "    print('CONNECTED')\n"
            "except OSError as e:\n"
            "    print('blocked', type(e).__name__)"
        )
        t = episode(env, call(code))
    assert "blocked" in tool_reply(t) and "CONNECTED" not in tool_reply(t)


def test_calls_past_max_calls_are_refused():
    environment = PythonToolEnvironment(PythonToolConfig(max_calls=1))
    try:
        t = episode(environment, call("print(1)") + call("print(2)"))
    finally:
        environment.close()
    replies = [m["content"] for m in t.turns if m["role"] == "tool"]
    assert replies[0] == "1" and "no more tool calls" in replies[1]
    info = {"calls": 1, "tool_errors": 1, "timeouts": 0, "crashes": 0, "truncated": 0, "parse_errors": 0}
    assert t.turns[0]["step_info"] == info  # the refused call is a tool error, not an unparsed one


def test_the_protocol_reaches_the_policy_as_a_system_message(env):
    seen = []

    def generate(requests):
        seen.extend(r.messages for r in requests)
        return [Sample(0, r.seed, "42", 1, "stop", -1.0) for r in requests]

    run_episodes(env, [MATH], 1, 0, generate, EpisodeLimits())
    assert seen[0][0]["role"] == "system" and "<tool_call>" in seen[0][0]["content"]
    assert seen[0][1:] == MATH["messages"]


def test_the_policy_sees_its_own_calls_as_it_wrote_them_in_the_text_protocol(env):
    """A template without a tool format (the default model's) renders only `content`: the next turn's conversation
    must hold the call the policy wrote, malformed ones too, or the policy answers a tool result it never asked for.
    In the text protocol an assistant message's content is what the policy wrote; tool_calls are the parsed calls."""
    seen = []
    first = "Let me check. " + call("print(6 * 7)") + " <tool_call>{oops</tool_call>"

    def generate(requests):
        seen.extend(r.messages for r in requests)
        return answers(first, "The answer is \\boxed{42}.")(requests)

    (per_prompt,) = run_episodes(env, [MATH], 1, 0, generate, EpisodeLimits(max_turns=3))
    earlier = [m for m in seen[-1] if m["role"] == "assistant"]
    assert earlier[0]["content"] == first  # the valid call and the malformed one, verbatim
    assert earlier[0]["tool_calls"][0]["function"]["arguments"] == {"code": "print(6 * 7)"}
    assert per_prompt[0].turns[0]["content"] == first and per_prompt[0].reward == 1.0

    native = PythonToolEnvironment(PythonToolConfig(system_prompt=False))  # a template with its own tool format
    try:
        assert native.parse(first, 0)["content"] == "Let me check."  # it renders the calls itself
    finally:
        native.close()


def test_an_episode_cut_at_a_tool_call_has_no_final_answer(env):
    """The text protocol keeps a turn's calls in its content. An episode stopped by max_turns while calling a tool
    never answered: its `completion` (what every labeler reads) is empty, so an answer written inside the call's code
    (`print('\\boxed{42}')`) earns nothing."""
    gaming = call("print('\\\\boxed{42}')")
    (per_prompt,) = run_episodes(env, [MATH], 1, 0, answers(gaming), EpisodeLimits(max_turns=2))
    t = per_prompt[0]
    assert t.stop_reason == "max_turns" and "\\boxed{42}" in t.turns[-2]["content"]  # the call, as written
    assert t.completion == "" and t.reward is None
    malformed = "\\boxed{42} <tool_call>{oops"  # a turn whose call did not parse is no answer either
    (per_prompt,) = run_episodes(env, [MATH], 1, 0, answers(malformed), EpisodeLimits(max_turns=1))
    assert per_prompt[0].completion == ""


def test_a_wrong_answer_gets_feedback_and_another_attempt():
    """max_attempts: a wrong answer is not the end. The user's feedback never carries the reference, the tool stays
    available, and only answers count as attempts (a tool-call turn is none)."""
    environment = PythonToolEnvironment(PythonToolConfig(max_attempts=3))
    try:
        texts = ["It is \\boxed{41}.", call("print(6 * 7)"), "So \\boxed{42}."]
        (per_prompt,) = run_episodes(environment, [MATH], 1, 0, answers(*texts), EpisodeLimits(max_turns=5))
    finally:
        environment.close()
    t = per_prompt[0]
    assert [m["role"] for m in t.turns] == ["assistant", "user", "assistant", "tool", "assistant"]
    assert t.turns[1]["content"] == "That is not correct. Try again." and "42" not in t.turns[1]["content"]
    verdicts = [m["step_info"].get("verdict") for m in t.turns if m["role"] == "assistant"]
    assert verdicts == ["incorrect", None, "correct"]
    assert t.stop_reason == "done" and t.reward == 1.0 and t.info == {"calls": 1, "attempt": 2, "verdict": "correct"}


def test_the_last_allowed_wrong_answer_ends_the_episode_with_reward_zero():
    environment = PythonToolEnvironment(PythonToolConfig(max_attempts=2))
    try:
        (per_prompt,) = run_episodes(environment, [MATH], 1, 0, answers("\\boxed{41}"), EpisodeLimits(max_turns=5))
    finally:
        environment.close()
    t = per_prompt[0]
    assert [m["role"] for m in t.turns] == ["assistant", "user", "assistant"]  # two answers, one feedback
    assert t.stop_reason == "done" and t.reward == 0.0 and t.info["attempt"] == 2
    with pytest.raises(ValueError, match="max_attempts"):
        PythonToolConfig(max_attempts=0)
