"""The `verifiers` labeler: a verifiers environment's rubric as labels, one per reward function, on written rows of
the vf_envs test environments. Equality with verifiers' own scores on the real model's rollouts is checked on every
row in tests/pipelines/test_rollouts_verifiers.py."""

import json
from pathlib import Path

import pytest

from rewardmill.transforms.labelers.verifiers import VerifiersRubricConfig, VerifiersRubricVerifier
from rewardmill.transforms.sources import verifiers as source

pytestmark = pytest.mark.slow  # the first import of verifiers takes about 4 s

ENVS = Path(__file__).parents[1] / "environments/vf_envs"


@pytest.fixture
def sums(monkeypatch):
    monkeypatch.syspath_prepend(str(ENVS))
    return [json.dumps(r["metadata"]) for _, r in source.generate("vf", "vf_math_env", {"count": 2}, None)]


@pytest.mark.parametrize(
    "completion, correct, brief",
    [
        ("3", 1.0, 1.0),  # 1 + 2
        ("The answer is 3", 1.0, 1.0),  # the last integer decides
        ("3 or maybe 4", 0.0, 1.0),  # ... so a hedge ending on a wrong number is wrong (this rubric's rule)
        ("one two three four five six seven eight nine 3", 1.0, 0.0),  # right, not brief (max_words 8)
        ("", 0.0, 1.0),  # nothing: not correct; zero words is brief
    ],
)
def test_one_label_per_reward_function_with_its_weight(sums, completion, correct, brief):
    labels = VerifiersRubricVerifier().label(completion, None, sums[0])
    by_aspect = {label.aspect: label for label in labels}
    assert {a: label.score for a, label in by_aspect.items()} == {"correct": correct, "brief": brief}
    assert {a: json.loads(label.raw)["weight"] for a, label in by_aspect.items()} == {"correct": 1.0, "brief": 0.5}
    assert all(json.loads(label.raw)["reward"] == correct + 0.5 * brief for label in labels)
    assert by_aspect["correct"].verdict == ("correct" if correct else "incorrect")


def test_the_turns_are_read_when_the_row_has_them(sums):
    turns = [{"role": "assistant", "content": "3", "tool_calls": None, "reasoning": None}]
    assert VerifiersRubricVerifier().label("ignored", turns, sums[0])[0].score == 1.0  # brief, from the turns


def test_reward_keeps_one_function_as_one_decided_label_for_a_gate(sums):
    label = VerifiersRubricVerifier(VerifiersRubricConfig(reward="correct")).label("3", None, sums[0])
    assert len(label) == 1 and (label[0].aspect, label[0].verdict) == ("correct", "correct")
    missing = VerifiersRubricVerifier(VerifiersRubricConfig(reward="nope")).label("3", None, sums[0])
    assert missing.verdict == "error" and "has no reward 'nope'" in missing.rationale


def test_no_task_abstains_and_a_changed_environment_is_an_error_that_says_rerun(sums):
    assert VerifiersRubricVerifier().label("3", None, None).verdict == "abstain"
    stale = json.loads(sums[0])
    stale["verifiers"]["environment"]["module"]["source_sha256"] = "0" * 64  # the environment's code was edited
    label = VerifiersRubricVerifier().label("3", None, json.dumps(stale))
    assert label.verdict == "error" and label.score is None and "rerun the prompts" in label.rationale
