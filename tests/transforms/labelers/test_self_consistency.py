"""transforms/labelers/self_consistency.py: the majority answer of a prompt's rollouts as a pseudo-reference."""

import json
import pickle

import pytest

from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.labelers.self_consistency import SelfConsistencyConfig, SelfConsistencyVerifier


@pytest.fixture(scope="module")
def verifier():
    v = SelfConsistencyVerifier()
    yield v
    v.teardown()


def group(*completions, reference=None) -> list[tuple]:
    return [(c, reference) for c in completions]


@pytest.mark.parametrize(
    "completions, scores, pseudo",
    [
        # 3 of 4 say 5: the majority; the odd one out is wrong by agreement
        (("The answer is $5$.", "$5$", "I get $5$", "It is $7$"), [1.0, 1.0, 1.0, 0.0], "5"),
        # equivalent forms are one vote (math-verify): 1/2, 0.5 and \frac{1}{2}
        (("$\\frac{1}{2}$", "$0.5$", "$1/2$", "$3$"), [1.0, 1.0, 1.0, 0.0], "\\frac{1}{2}"),
        # a rollout with no answer counts against the share and is labeled 0
        (("$4$", "$4$", "I do not know", "$4$"), [1.0, 1.0, 0.0, 1.0], "4"),
    ],
)
def test_majority_is_the_pseudo_reference(verifier, completions, scores, pseudo):
    labels = verifier.label_group(group(*completions))
    assert [lab.score for lab in labels] == scores
    raw = json.loads(labels[0].raw)
    assert raw["pseudo_reference"] == pseudo and raw["vote_share"] == 0.75
    assert all(lab.confidence == 0.75 for lab in labels)  # the vote share is the confidence
    assert [lab.verdict for lab in labels] == ["correct" if s else "incorrect" for s in scores]


@pytest.mark.parametrize(
    "completions, reason",
    [
        # two answers with two votes each: no majority, nothing is labeled
        (("$5$", "$5$", "$6$", "$6$"), "no majority, 2 answers tie with 2 votes each"),
        # 2 of 5 is the largest cluster but below min_vote_share 0.5
        (("$1$", "$1$", "$2$", "$3$", "$4$"), "vote share 0.40, below min_vote_share"),
        # one answer among four rollouts: fewer than min_answers
        (("$1$", "no idea", "hmm", "?"), "1 of 4 rollouts state an answer"),
        # a single rollout cannot vote
        (("$1$",), "1 of 1 rollouts state an answer"),
    ],
)
def test_it_abstains_without_a_clear_majority(verifier, completions, reason):
    labels = verifier.label_group(group(*completions))
    assert all(lab.score is None and lab.verdict == "abstain" for lab in labels)
    assert reason in labels[0].rationale and labels[0].rationale.startswith("pseudo-reference: ")


def test_a_prompt_with_a_reference_is_left_to_math_answer_or_checked(verifier):
    skipped = verifier.label_group(group("$5$", "$5$", "$6$", reference="5"))
    assert all(lab.score is None and "has a reference" in lab.rationale for lab in skipped)
    voting = SelfConsistencyVerifier(SelfConsistencyConfig(with_reference="vote"))
    try:
        right = voting.label_group(group("$5$", "$5$", "$6$", reference="5"))
        wrong = voting.label_group(group("$6$", "$6$", "$5$", reference="5"))
    finally:
        voting.teardown()
    assert [lab.score for lab in right] == [1.0, 1.0, 0.0] and json.loads(right[0].raw)["reference_agrees"] is True
    assert [lab.score for lab in wrong] == [1.0, 1.0, 0.0] and json.loads(wrong[0].raw)["reference_agrees"] is False
    summary = SelfConsistencyVerifier.summarize([{"raw": lab.raw, "score": lab.score} for lab in [*right, *wrong]])
    assert summary == {"decided": 6, "mean_vote_share": pytest.approx(2 / 3), "pseudo_reference_accuracy": 0.5}


@pytest.mark.parametrize(
    "config, message",
    [
        ({"min_vote_share": 0}, "min_vote_share must be in (0, 1]"),
        ({"min_answers": 0}, "min_answers must be >= 1"),
        ({"extraction": ["nope"]}, "must be one of"),
        ({"with_reference": "maybe"}, "with_reference"),
    ],
)
def test_bad_config(config, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("]", r"\]")):
        from_dict(SelfConsistencyConfig, config, "labelers.sc.config")


def test_pickles(verifier):
    copy = pickle.loads(pickle.dumps(verifier))
    try:
        assert [lab.score for lab in copy.label_group(group("$2$", "$2$", "$3$"))] == [1.0, 1.0, 0.0]
    finally:
        copy.teardown()
