import json
import pickle
from dataclasses import dataclass

import pytest

from rewardmill.transforms import labelers
from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.format import FormatVerifier
from rewardmill.transforms.labelers.instruction_following import InstructionFollowingVerifier
from rewardmill.transforms.labelers.length import LengthPenaltyVerifier
from rewardmill.transforms.labelers.tiered import TieredConfig, TieredVerifier

GOOD = "<think>7 + 5</think><answer>\\boxed{12}</answer>"
# syntax -> execution -> quality: tags, then the answer, then a length near GOOD's (2 chars over still passes).
PARAMS = {
    "tiers": [
        {"name": "syntax", "labeler": "format", "config": {"required_tags": ["think", "answer"]}},
        {"name": "execution", "labeler": "math_answer"},
        {
            "name": "quality",
            "labeler": "length",
            "config": {"unit": "chars", "target": len(GOOD), "tolerance": 0, "falloff": 8},
            "min_score": 0.5,
        },
    ]
}


class Exploding:
    """A labeler that raises, to show a crashing tier is recorded rather than crashing the row."""

    @dataclass(frozen=True)
    class Config:
        pass

    name, version, reads = "exploding", "1", ("completion",)

    def __init__(self, config=None):
        pass

    def label(self, completion):
        raise RuntimeError("boom")


@pytest.fixture(autouse=True)
def registry(monkeypatch):
    for key, cls in {"format": FormatVerifier, "length": LengthPenaltyVerifier}.items():
        monkeypatch.setitem(labelers.LABELERS, key, cls)
    monkeypatch.setitem(labelers.LABELERS, "instruction_following", InstructionFollowingVerifier)


def tiered(params=PARAMS) -> TieredVerifier:
    return TieredVerifier(from_dict(TieredConfig, params, "labelers.tiered.config"))


@pytest.mark.parametrize(
    ("completion", "reference", "verdict", "score", "reached"),
    [
        (GOOD, "12", "correct", 1.0, 3),  # every tier passes with 1.0
        (GOOD + "  ", "12", "correct", (2 + 0.75) / 3, 3),  # quality 0.75 >= 0.5 passes: top band
        (GOOD + "      ", "12", "incorrect", (2 + 0.25) / 3, 3),  # quality 0.25 fails: still above any wrong answer
        ("<think>7 + 5</think><answer>\\boxed{13}</answer>", "12", "incorrect", 1 / 3, 2),  # wrong answer stops
        ("\\boxed{12}", "12", "incorrect", 0.0, 1),  # right answer, no tags: syntax fails first
        ("", "12", "incorrect", 0.0, 1),  # empty completion
        (GOOD, None, "abstain", None, 2),  # execution tier cannot verify without a reference: None, not 0
        (GOOD, "\\frac{", "abstain", None, 2),  # unparseable reference: never rewarded
        (None, "12", "abstain", None, 1),  # malformed row: no completion text
    ],
)
def test_verdict_table(completion, reference, verdict, score, reached):
    label = tiered().label(completion, reference)
    assert (label.verdict, label.aspect) == (verdict, "tiered") and label.rationale
    assert label.score == (None if score is None else pytest.approx(score))
    results = json.loads(label.raw)
    assert [r["tier"] for r in results] == ["syntax", "execution", "quality"]
    assert [r.get("skipped", False) for r in results] == [False] * reached + [True] * (3 - reached)


def test_per_tier_results_are_kept():
    results = json.loads(tiered().label("<answer>\\boxed{12}</answer>", "12").raw)
    assert results[0]["labeler"] == "format" and results[0]["verdict"] == "incorrect" and not results[0]["passed"]
    assert "think" in results[0]["rationale"] and results[0]["raw"] == '{"tags": false}'
    assert results[1:] == [
        {"tier": "execution", "labeler": "math_answer", "skipped": True},
        {"tier": "quality", "labeler": "length", "skipped": True},
    ]


def test_a_crashing_tier_is_an_error_label(monkeypatch):
    monkeypatch.setitem(labelers.LABELERS, "exploding", Exploding)
    v = tiered({"tiers": [{"labeler": "format", "config": {"pattern": "x"}}, {"labeler": "exploding"}]})
    label = v.label("x")
    assert (label.verdict, label.score) == ("error", None) and "RuntimeError: boom" in label.rationale


def test_reads_are_the_union_and_tasks_the_intersection(monkeypatch):
    assert tiered().reads == ("completion", "reference")
    assert tiered().tasks == ("math",)  # only math_answer names tasks; format and length apply to any
    with_if = tiered(
        {"tiers": [{"labeler": "format", "config": {"pattern": "."}}, {"labeler": "instruction_following"}]}
    )
    assert with_if.reads == ("completion", "constraints") and with_if.tasks == ("instruction",)
    with_tokens = tiered({"tiers": [{"labeler": "math_answer"}, {"labeler": "length"}]})
    assert with_tokens.reads == ("completion", "reference", "n_tokens")
    assert with_tokens.label("\\boxed{3}", "3", 256).score == 1.0


@pytest.mark.parametrize(
    "raw",
    [
        {"tiers": []},  # no tier
        {"tiers": [{"labeler": "nope"}]},  # unknown labeler key
        {"tiers": [{"labeler": "format", "config": {"required_tags": []}}]},  # inner config invalid: no check
        {"tiers": [{"labeler": "math_answer", "config": {"timeout": 5}}]},  # inner config typo
        {"tiers": [{"labeler": "math_answer", "min_score": 2}]},  # min_score outside [0, 1]
        {"tiers": [{"labeler": "math_answer"}, {"labeler": "math_answer"}]},  # same name twice
        {"tiers": [{"labeler": "math_answer", "config": {}, "weight": 1}]},  # unknown tier key
        {"tier": [{"labeler": "math_answer"}]},  # typo
    ],
)
def test_bad_config_is_rejected(raw):
    with pytest.raises(ConfigError):
        from_dict(TieredConfig, raw, "labelers.tiered.config")


def test_inner_config_error_names_the_tier():
    with pytest.raises(ConfigError, match=r"tiers\[1\]\.config.*timeout"):
        from_dict(
            TieredConfig, {"tiers": [{"labeler": "length"}, {"labeler": "math_answer", "config": {"timeout": 1}}]}, "t"
        )


def test_default_tiers_are_format_then_math_answer():
    v = TieredVerifier(from_dict(TieredConfig, {}, "labelers.tiered.config"))
    assert [t["tier"] for t in json.loads(v.label(GOOD, "12").raw)] == ["syntax", "correctness"]
    assert v.label(GOOD, "12").score == 1.0 and v.label("\\boxed{12}", "12").score == 0.0


def test_pickle_round_trip_and_teardown():
    v = tiered()
    copy = pickle.loads(pickle.dumps(v))
    assert copy.reads == v.reads and copy.label(GOOD, "12") == v.label(GOOD, "12")
    assert isinstance(copy.label(GOOD, "12"), Label)
    copy.teardown()
