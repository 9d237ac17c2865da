"""The environment's outcome reward as a label: every way an episode can end, and the ways its record can be bad."""

import json
import pickle

import pytest

from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.labelers import get_labeler_class
from rewardmill.transforms.labelers.environment import EnvironmentRewardConfig, EnvironmentRewardVerifier

ENV = {"name": "feedback", "version": "1", "config": "{}"}


@pytest.mark.parametrize(
    ("env_reward", "stop_reason", "env_info", "environment", "score", "verdict"),
    [
        (1.0, "done", '{"verdict": "correct"}', ENV, 1.0, "correct"),  # solved
        (0.0, "done", '{"verdict": "incorrect"}', ENV, 0.0, "incorrect"),  # failed every attempt
        (0.5, "done", None, ENV, 0.5, "incorrect"),  # partial credit stays a score, below the pass threshold
        (None, "max_turns", None, ENV, 0.0, "incorrect"),  # ran out of turns before the environment rewarded it
        (None, "max_tokens", None, ENV, 0.0, "incorrect"),  # ran out of tokens
        (None, "done", None, ENV, None, "abstain"),  # an environment with no verifier for the task
        (None, "error", '{"error": "ValueError: no verifier", "at": "reset"}', ENV, None, "error"),  # env raised
        (1.0, "error", '{"error": "boom"}', ENV, None, "error"),  # a reward beside an error is not trusted
        (float("nan"), "done", None, ENV, None, "abstain"),  # NaN is no reward
        (2.0, "done", None, ENV, None, "error"),  # outside [0, 1]: a broken environment, said so
        (-0.1, "done", None, ENV, None, "error"),
        (1.0, "done", "not json", ENV, 1.0, "correct"),  # unreadable info: the reward still counts, info kept
        (None, None, None, None, None, "abstain"),  # a single-turn rollout: no environment ran
    ],
)
def test_every_end_of_an_episode(env_reward, stop_reason, env_info, environment, score, verdict):
    label = EnvironmentRewardVerifier().label(env_reward, stop_reason, env_info, environment)
    assert (label.score, label.verdict) == (score, verdict), label
    assert label.rationale  # always says why
    if environment:
        assert json.loads(label.raw)["environment"] == "feedback@1"


def test_the_error_and_the_info_are_kept():
    label = EnvironmentRewardVerifier().label(None, "error", '{"error": "ValueError: no verifier"}', ENV)
    assert "no verifier" in label.rationale
    label = EnvironmentRewardVerifier().label(1.0, "done", "not json", ENV)
    assert json.loads(label.raw)["info"] == {"unreadable": "not json"}


def test_config_moves_the_threshold_and_the_unfinished_score():
    lenient = EnvironmentRewardVerifier(EnvironmentRewardConfig(pass_threshold=0.5))
    assert lenient.label(0.5, "done", None, ENV).verdict == "correct"
    abstaining = EnvironmentRewardVerifier(EnvironmentRewardConfig(unfinished_score=None))
    assert (abstaining.label(None, "max_turns", None, ENV).verdict) == "abstain"
    for bad in ({"pass_threshold": 0.0}, {"unfinished_score": 1.5}, {"nope": 1}):
        with pytest.raises((ValueError, ConfigError)):
            from_dict(EnvironmentRewardConfig, bad, "labelers.env.config")


def test_registered_and_pickles():
    assert get_labeler_class("environment") is EnvironmentRewardVerifier
    assert pickle.loads(pickle.dumps(EnvironmentRewardVerifier())).config == EnvironmentRewardConfig()
