import pickle

import pytest

from rewardmill.transforms.judges.pairwise import (
    PairOutcome,
    PairVerdict,
    build_pairwise,
    combine_orders,
    parse_pairwise,
    swap_consistency,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Winner: A\nReason: more complete.", PairVerdict("A", "Winner: A")),  # the requested format
        ("winner: b", PairVerdict("B", "winner: b")),  # lower case, verdict at the end
        ("**Winner:** Tie", PairVerdict("tie", "Winner: Tie")),  # markdown bold, tie
        ("Winner: Answer B", PairVerdict("B", "Winner: Answer B")),  # "Answer B"
        ("Verdict: both are equally good", PairVerdict("tie", "Verdict: both")),  # tie word
        ("The better answer is A.", PairVerdict("A", "better answer is A")),  # sentence form
        ("Feedback: B is clearer. [RESULT] B", PairVerdict("B", "[RESULT] B")),  # Prometheus relative grading
        ("Reasoning... [[B]]", PairVerdict("B", "[[B]]")),  # MT-Bench brackets
        ("[[A]] at first, but finally [[C]]", PairVerdict("tie", "[[C]]")),  # the last bracket counts; C = tie
        ("Answer B is better than answer A.", PairVerdict("B", "Answer B is better")),  # "X is better"
        ("B", PairVerdict("B", "B")),  # a lone letter
        ("a.", PairVerdict("A", "a.")),  # a lone lower-case letter
        ("Tie", PairVerdict("tie", "Tie")),  # a lone tie
        ("A: 12", PairVerdict("A", "A")),  # the letter first, then the answer it picked (SmolLM2-135M does this)
        ("(B) because it is right", PairVerdict("B", "(B")),  # the letter first, in brackets
        ("A (12)\n\nThe answer is", PairVerdict("A", "A")),  # the letter, then the answer it picked in brackets
        ("B.\nA is shorter but wrong.", PairVerdict("B", "B")),  # the leading letter beats a later sentence
        ("A great answer.", PairVerdict(None, None)),  # malformed: a leading article is not a letter
        ("Winner: A\nReason: B is shorter but wrong.", PairVerdict("A", "Winner: A")),  # the label beats the reason
        ("Winner: A or B or tie", PairVerdict(None, None)),  # malformed: template echoed
        ("Winner: A, B", PairVerdict(None, None)),  # malformed: two winners
        ("The answer is a good one.", PairVerdict(None, None)),  # malformed: "a" is an article here
        ("Both answers have merit.", PairVerdict(None, None)),  # malformed: no verdict
        ("", PairVerdict(None, None)),  # malformed: empty
        (None, PairVerdict(None, None)),  # malformed: no reply
    ],
)
def test_parse_pairwise(text, expected):
    assert parse_pairwise(text) == expected


def test_build_pairwise_labels_both_answers():
    system, user = build_pairwise("Q?", "first answer", "second answer", "helpfulness")
    assert system["role"] == "system" and user["role"] == "user"
    assert "helpfulness" in system["content"] and "order" in system["content"]
    assert "one letter, A or B" in user["content"]
    assert user["content"].index("first answer") < user["content"].index("second answer")
    assert "[Answer A]\nfirst answer\n[End of Answer A]" in user["content"]


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ("A", "B", PairOutcome("x", True)),  # x wins in both orders
        ("B", "A", PairOutcome("y", True)),  # y wins in both orders
        ("tie", "tie", PairOutcome("tie", True)),  # tie in both orders
        ("A", "A", PairOutcome("tie", False)),  # position bias: always the first answer
        ("B", "B", PairOutcome("tie", False)),  # position bias: always the second answer
        ("A", "tie", PairOutcome("tie", False)),  # a win in one order only is not a win
        ("tie", "A", PairOutcome("tie", False)),  # y wins in the swapped order only
        (None, "A", PairOutcome(None, None)),  # first order did not parse
        ("B", None, PairOutcome(None, None)),  # second order did not parse
        (None, None, PairOutcome(None, None)),  # neither parsed
    ],
)
def test_combine_orders(first, second, expected):
    assert combine_orders(first, second) == expected


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("x", "A"),  # an outcome passed where a verdict belongs
        ("A", "a"),  # lower case is the parser's job
    ],
)
def test_combine_orders_rejects_unknown_verdicts(first, second):
    with pytest.raises(ValueError, match="verdict must be one of"):
        combine_orders(first, second)


@pytest.mark.parametrize(
    ("pairs", "expected"),
    [
        ([("A", "B"), ("B", "A")], 1.0),  # both consistent
        ([("A", "A"), ("A", "A")], 0.0),  # always picks A
        ([("A", "B"), ("A", "A"), ("tie", "tie"), (None, "A")], 2 / 3),  # unparsed pair left out
        ([(None, None)], None),  # nothing parsed
        ([], None),  # no pairs
    ],
)
def test_swap_consistency(pairs, expected):
    assert swap_consistency(pairs) == expected


def test_results_pickle():
    for value in (parse_pairwise("Winner: A"), combine_orders("A", "B")):
        assert pickle.loads(pickle.dumps(value)) == value
