"""transforms/steps/pseudo_reference.py: which rollouts vote, and what a selected rollout carries after the vote."""

import pytest

from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.self_consistency import SelfConsistencyConfig, SelfConsistencyVerifier
from rewardmill.transforms.steps.labeler import StepsConfig
from rewardmill.transforms.steps.pseudo_reference import attach, needs_vote, outcome

WITH, WITHOUT, BLANK = {"reference": "4"}, {"reference": None}, {"reference": "  "}


@pytest.mark.parametrize(
    "row, mode, votes",
    [
        (WITH, "pseudo", True),  # pseudo: every prompt votes, a given reference is ignored
        (WITHOUT, "pseudo", True),
        (WITH, "given_or_pseudo", False),  # the given reference wins
        (WITHOUT, "given_or_pseudo", True),
        (BLANK, "given_or_pseudo", True),  # a blank reference is none
        (WITHOUT, "given", False),  # given: never votes (the labeler rejects no_reference)
    ],
)
def test_needs_vote(row, mode, votes):
    assert needs_vote(row, mode) is votes


def test_attach_sets_the_majority_or_says_why_not_and_never_mutates():
    row = {"prompt_id": "p", "reference": None, "completion": "x"}
    decided = attach(row, {"p": {"answer": "7", "vote_share": 0.75}}, "given_or_pseudo")
    assert decided == {**row, "reference": "7", "reference_source": "pseudo", "vote_share": 0.75}
    missing = attach(row, {"p": {"missing": "abstain: no majority"}}, "pseudo")
    assert missing["pseudo_reference_missing"] == "abstain: no majority" and missing["reference"] is None
    assert row == {"prompt_id": "p", "reference": None, "completion": "x"}
    given = {"prompt_id": "g", "reference": "3"}
    assert attach(given, {}, "given_or_pseudo") is given  # no vote needed, none looked up


def test_outcome_reads_the_self_consistency_vote():
    verifier = SelfConsistencyVerifier(SelfConsistencyConfig(min_vote_share=0.5))
    try:
        voted = outcome(verifier.label_group([("The answer is 7.", None), ("So 7.", None), ("It is 8.", None)]))
        tied = outcome(verifier.label_group([("The answer is 5.", None), ("The answer is 6.", None)]))
    finally:
        verifier.teardown()
    assert voted == {"answer": "7", "vote_share": pytest.approx(2 / 3)}
    assert tied["missing"].startswith("abstain: pseudo-reference: no majority")
    assert outcome([Label(None, 0.0, "timeout", "vote took too long")]) == {"missing": "timeout: vote took too long"}


def test_reference_settings_are_checked():
    assert from_dict(StepsConfig, {"reference": "pseudo"}, "steps.mc.config").reference == "pseudo"
    with pytest.raises(ConfigError, match="reference"):
        from_dict(StepsConfig, {"reference": "majority"}, "steps.mc.config")
    with pytest.raises(ConfigError, match="min_vote_share"):
        from_dict(StepsConfig, {"reference": "pseudo", "pseudo_reference": {"min_vote_share": 0}}, "steps.mc.config")
    with pytest.raises(ConfigError, match="method"):  # the flag is the stage's to add, not a method to ask for
        from_dict(StepsConfig, {"method": "mc+pseudo_reference"}, "steps.mc.config")
