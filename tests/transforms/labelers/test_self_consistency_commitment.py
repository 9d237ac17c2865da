"""self_consistency votes with math_answer's reading of the final committed answer (math_answer.read_answer)."""

import json

import pytest

from rewardmill.transforms.labelers.self_consistency import SelfConsistencyVerifier


@pytest.fixture(scope="module")
def verifier():
    v = SelfConsistencyVerifier()
    yield v
    v.teardown()


@pytest.mark.parametrize(
    "odd_one",
    [
        "The answer is 5 or 6.",  # a hedge
        "\\boxed{5}\n\nActually 6.",  # a retraction
        "not 5",  # a negation
        "at least 5",  # a range
        "<think>The answer is 5.</think>I am not sure.",  # an answer only inside reasoning
        "\\boxed{5}\n\nErratum: 6",  # superseded by a later value
        "He said the answer is 5.",  # someone else's answer
        "probably 5",  # tentative
        "**Answer: 5** or six",  # a number word as the alternative, Markdown around it
    ],
)
def test_an_answer_that_commits_to_no_value_has_no_vote(verifier, odd_one):
    labels = verifier.label_group([("$5$", None), ("The answer is 5.", None), ("$7$", None), (odd_one, None)])
    raw = json.loads(labels[3].raw)
    assert raw["answer"] is None and labels[3].score == 0.0  # no vote, and not credited with the majority
    assert raw["pseudo_reference"] == "5" and raw["votes"] == {"5": 2, "7": 1}
