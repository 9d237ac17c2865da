"""transforms/environments/feedback.py with its real verifiers: math-verify for math, the bwrap sandbox for code."""

import json
from pathlib import Path

import pytest

from rewardmill.transforms.environments import ENVIRONMENTS, UnknownEnvironment, get_environment_class
from rewardmill.transforms.environments.contract import Environment, check_environment
from rewardmill.transforms.environments.episodes import EpisodeLimits, run_episodes
from rewardmill.transforms.environments.feedback import FeedbackConfig, FeedbackEnvironment
from rewardmill.transforms.labelers import UnknownLabeler
from rewardmill.transforms.sampling.params import Sample

MATH = {"prompt_id": "m", "task": "math", "messages": [{"role": "user", "content": "What is 6*7?"}], "reference": "42"}
CODE = {
    "prompt_id": "c",
    "task": "code",
    "messages": [{"role": "user", "content": "Write triple(x)."}],
    "reference": None,
    "tests": json.dumps(["assert triple(2) == 6", "assert triple(0) == 0"]),
}


def answers(*texts: str):
    """A policy that gives texts[k] as its k-th answer in a conversation."""

    def generate(requests):
        return [
            Sample(
                0,
                r.seed,
                texts[min(sum(m["role"] == "assistant" for m in r.messages), len(texts) - 1)],
                3,
                "stop",
                -1.0,
            )
            for r in requests
        ]

    return generate


REQUIRED_CONFIG = {"verifiers": {"id": "vf_math_env"}}  # an environment module (tests/.../vf_envs)


def test_every_registered_environment_has_the_contract(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parent / "vf_envs"))
    for key, cls in ENVIRONMENTS.items():
        assert check_environment(cls, key) is cls and cls.name == key
        config = cls.Config(**REQUIRED_CONFIG.get(key, {}))
        assert isinstance(cls(config), Environment)
    with pytest.raises(UnknownEnvironment, match="unknown environment 'nope'; known: .*feedback"):
        get_environment_class("nope")


def test_a_wrong_answer_gets_feedback_then_a_right_one_ends_it():
    env = FeedbackEnvironment(FeedbackConfig(max_attempts=3))
    (per_prompt,) = run_episodes(env, [MATH], 1, 0, answers("It is 41.", "The answer is 42."), EpisodeLimits(5))
    (t,) = per_prompt
    assert [m["role"] for m in t.turns] == ["assistant", "user", "assistant"]
    assert t.turns[1]["content"] == "That is not correct. Try again."
    assert "42" not in t.turns[1]["content"]  # the reference never reaches the policy
    assert t.stop_reason == "done" and t.reward == 1.0
    assert [m["step_info"]["verdict"] for m in t.assistant_turns] == ["incorrect", "correct"]
    assert t.info == {"attempt": 2, "verdict": "correct", "verifier": "math_answer"}


def test_attempts_run_out_with_reward_zero():
    env = FeedbackEnvironment(FeedbackConfig(max_attempts=2))
    (per_prompt,) = run_episodes(env, [MATH], 2, 0, answers("41"), EpisodeLimits(max_turns=5))
    for t in per_prompt:
        assert t.stop_reason == "done" and t.reward == 0.0 and len(t.assistant_turns) == 2
        assert t.turns[-1]["role"] == "assistant"  # no feedback after the last attempt


def test_code_answers_run_in_the_sandbox():
    env = FeedbackEnvironment(FeedbackConfig(max_attempts=2, detail=True))
    wrong = "```python\ndef triple(x):\n    return x * 2\n```"
    right = "```python\ndef triple(x):\n    return x * 3\n```"
    (per_prompt,) = run_episodes(env, [CODE], 1, 0, answers(wrong, right), EpisodeLimits(3))
    (t,) = per_prompt
    assert t.reward == 1.0 and [m["step_info"]["verdict"] for m in t.assistant_turns] == ["incorrect", "correct"]
    assert "1/2 tests passed" in t.turns[1]["content"]  # detail: the verifier's rationale comes with the feedback


def test_a_task_without_a_verifier_is_an_error_of_that_trajectory_only():
    env = FeedbackEnvironment(FeedbackConfig(verifiers={"math": "math_answer"}))
    out = run_episodes(env, [CODE, MATH], 1, 0, answers("42"), EpisodeLimits(2))
    assert out[0][0].stop_reason == "error" and "no verifier for task 'code'" in out[0][0].info["error"]
    assert out[1][0].stop_reason == "done" and out[1][0].reward == 1.0


def test_bad_config_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="max_attempts"):
        FeedbackConfig(max_attempts=0)
    with pytest.raises(ValueError, match="verifier_config names labelers no task uses"):
        FeedbackConfig(verifier_config={"code_tests": {}}, verifiers={"math": "math_answer"})
    with pytest.raises(UnknownLabeler):
        FeedbackEnvironment(FeedbackConfig(verifiers={"math": "nope"}))
