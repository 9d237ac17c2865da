"""The episode driver's own rules, with a scripted policy (a function of the conversation and the seed, so every
rule below can be asserted exactly); tests/transforms/environments/test_feedback_model.py runs the real default
model through it."""

import pytest

from rewardmill.transforms.environments.contract import StepResult
from rewardmill.transforms.environments.episodes import (
    EpisodeLimits,
    TurnRequest,
    by_stop_reason,
    run_episodes,
    turn_seed,
)
from rewardmill.transforms.sampling.params import Sample, sample_seed


def prompt(pid: str, text: str = "2+2?") -> dict:
    return {"prompt_id": pid, "task": "math", "messages": [{"role": "user", "content": text}], "reference": "4"}


class Scripted:
    """A policy that answers from a script by attempt number (its assistant turns so far) and records each call."""

    def __init__(self, answers: list[str], tokens: int = 5):
        self.answers = answers
        self.tokens = tokens
        self.calls: list[list[TurnRequest]] = []

    def __call__(self, requests: list[TurnRequest]) -> list[Sample]:
        self.calls.append(requests)
        out = []
        for r in requests:
            attempt = sum(m["role"] == "assistant" for m in r.messages)
            text = self.answers[min(attempt, len(self.answers) - 1)]
            out.append(Sample(0, r.seed, text, self.tokens, "stop", -1.0))
        return out


class UntilFour:
    """Done with reward 1 on "4"; feedback otherwise."""

    name, version = "until_four", "1"

    class Config:
        pass

    def reset(self, prompt):
        return {"tries": 0}

    def step(self, state, assistant):
        state = {"tries": state["tries"] + 1}
        if assistant["content"] == "4":
            return state, StepResult(done=True, reward=1.0, info={"tries": state["tries"]})
        return state, StepResult([{"role": "user", "content": "no"}], info={"tries": state["tries"]})


def test_every_live_trajectory_is_in_one_call_per_round():
    policy = Scripted(["3", "4"])
    out = run_episodes(UntilFour(), [prompt("a"), prompt("b")], 3, 0, policy, EpisodeLimits(max_turns=4))
    assert [len(call) for call in policy.calls] == [6, 6]  # 2 prompts x 3 samples, then all of them again
    for per_prompt in out:
        for t in per_prompt:
            assert [m["role"] for m in t.turns] == ["assistant", "user", "assistant"]
            assert t.stop_reason == "done" and t.reward == 1.0 and t.completion == "4"
            assert t.n_tokens == 10 and t.logprob_sum == -2.0 and t.info == {"tries": 2}
            assert t.turns[0]["step_info"] == {"tries": 1}


def test_a_turn_sees_the_whole_conversation_and_its_own_seed():
    policy = Scripted(["3", "4"])
    (per_prompt,) = run_episodes(UntilFour(), [prompt("a")], 2, 7, policy, EpisodeLimits(max_turns=3))
    first, second = policy.calls
    assert [r.seed for r in first] == [sample_seed(7, "a", 0), sample_seed(7, "a", 1)]
    assert [r.seed for r in second] == [turn_seed(sample_seed(7, "a", j), 1) for j in range(2)]
    assert second[0].messages == [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "3"},  # without the stage's accounting (tokens, step info)
        {"role": "user", "content": "no"},
    ]
    assert [t.seed for t in per_prompt] == [sample_seed(7, "a", j) for j in range(2)]


def test_a_seed_never_depends_on_batch_mates():
    alone, together = Scripted(["3", "4"]), Scripted(["3", "4"])
    run_episodes(UntilFour(), [prompt("a")], 1, 0, alone, EpisodeLimits(max_turns=2))
    run_episodes(UntilFour(), [prompt("z"), prompt("a")], 1, 0, together, EpisodeLimits(max_turns=2))
    assert [c[0].seed for c in alone.calls] == [c[1].seed for c in together.calls]


def test_limits_stop_a_trajectory_with_their_reason():
    never = Scripted(["3"])
    (turns_out,) = run_episodes(UntilFour(), [prompt("a")], 1, 0, never, EpisodeLimits(max_turns=3))
    assert turns_out[0].stop_reason == "max_turns" and len(turns_out[0].assistant_turns) == 3
    (tokens_out,) = run_episodes(UntilFour(), [prompt("a")], 1, 0, Scripted(["3"], 6), EpisodeLimits(5, 12))
    assert tokens_out[0].stop_reason == "max_tokens" and tokens_out[0].n_tokens == 12  # two turns of 6


class Raises(UntilFour):
    def reset(self, prompt):
        if prompt["prompt_id"] == "bad":
            raise KeyError("reference")
        return super().reset(prompt)

    def step(self, state, assistant):
        if assistant["content"] == "boom":
            raise RuntimeError("tool crashed")
        return super().step(state, assistant)


def test_an_environment_error_ends_that_trajectory_alone():
    out = run_episodes(Raises(), [prompt("bad"), prompt("ok")], 1, 0, Scripted(["4"]), EpisodeLimits())
    assert out[0][0].stop_reason == "error" and out[0][0].info == {"error": "KeyError: 'reference'", "at": "reset"}
    assert out[0][0].turns == [] and out[0][0].completion == ""
    assert out[1][0].stop_reason == "done"
    (crashed,) = run_episodes(Raises(), [prompt("x")], 1, 0, Scripted(["boom"]), EpisodeLimits())
    assert crashed[0].stop_reason == "error" and "RuntimeError: tool crashed" in crashed[0].info["error"]
    assert crashed[0].completion == "boom"  # the turn that crashed it is kept
    assert by_stop_reason([out[0], out[1], crashed]) == {"done": 1, "max_turns": 0, "max_tokens": 0, "error": 2}


def test_a_policy_that_returns_the_wrong_count_is_an_error():
    with pytest.raises(RuntimeError, match="returned 0 turns for 1 requests"):
        run_episodes(UntilFour(), [prompt("a")], 1, 0, lambda requests: [], EpisodeLimits())


def test_limits_refuse_nonsense():
    with pytest.raises(ValueError, match="max_turns"):
        EpisodeLimits(max_turns=0)
    with pytest.raises(ValueError, match="max_tokens"):
        EpisodeLimits(max_tokens=0)


def test_a_trajectory_fits_the_v3_rollout_columns():
    import json

    import pyarrow as pa

    from rewardmill.schemas import ROLLOUT_V2, ROLLOUT_V3
    from rewardmill.schemas.trajectory import TURN
    from rewardmill.transforms.environments.columns import trajectory_columns

    class WithCall(UntilFour):
        def parse(self, text, turn):
            call = {"id": "c1", "type": "function", "function": {"name": "python", "arguments": {"code": "1+1"}}}
            return {"role": "assistant", "content": text, "tool_calls": [call]}

    (per_prompt,) = run_episodes(WithCall(), [prompt("a")], 1, 0, Scripted(["3", "4"]), EpisodeLimits())
    columns = trajectory_columns(per_prompt[0], UntilFour(), [{"type": "function", "function": {"name": "python"}}])
    names = [f.name for f in ROLLOUT_V3 if f.name not in ROLLOUT_V2.names]  # the v3 columns
    assert sorted(k for k in columns if k in names) == sorted(names)
    (turns,) = pa.array([columns["turns"]], type=pa.list_(pa.field("element", TURN))).to_pylist()  # raises on a misfit
    assert turns[0]["tool_calls"][0]["function"]["arguments"] == '{"code":"1+1"}'
    assert json.loads(turns[0]["info"]) == {"tries": 1} and turns[1]["info"] is None and turns[1]["role"] == "user"
    assert columns["stop_reason"] == "done" and columns["env_reward"] == 1.0 and columns["completion"] == "4"
    assert columns["environment"] == {"name": "until_four", "version": "1", "config": "{}"}


def test_with_reasoning_the_environment_reads_the_answer_and_the_turn_keeps_the_trace():
    """rollouts.reasoning in an episode: each turn is split as it is sampled. The environment (and a parser) see only
    the answer; a cut trace leaves an empty answer, which gets no credit; the trace stays on the turn, and the
    policy's next turn sees it again as the turn's `reasoning`, never as content."""
    import functools

    from rewardmill.transforms.environments.columns import trajectory_columns
    from rewardmill.transforms.sampling.reasoning import split_reasoning

    policy = Scripted(["<think>maybe 3</think>3", "<think>it is 4, so 4"])  # the second trace is cut
    split = functools.partial(split_reasoning)
    (per_prompt,) = run_episodes(UntilFour(), [prompt("a")], 1, 0, policy, EpisodeLimits(max_turns=2), None, split)
    trajectory = per_prompt[0]
    first, _, second, _ = trajectory.turns  # each answer was told "no"
    assert (first["content"], first["reasoning"], first["reasoning_status"]) == ("3", "maybe 3", "closed")
    assert (second["content"], second["reasoning_status"]) == ("", "unclosed")  # "4" only inside a cut trace
    assert trajectory.stop_reason == "max_turns" and trajectory.reward is None  # never credited
    seen = policy.calls[1][0].messages[1]  # what the policy saw of its first turn
    assert seen == {"role": "assistant", "content": "3", "reasoning": "maybe 3"}
    columns = trajectory_columns(trajectory, UntilFour(), None)
    assert (columns["completion"], columns["reasoning_status"], columns["reasoning"]) == (
        "",
        "unclosed",
        "it is 4, so 4",
    )
