"""Reading the criteria a writer wrote: a table of replies, well-formed, drifting and malformed."""

import pytest

from rewardmill.transforms.rubrics.criteria import Criterion, parse_criteria, parse_line, render, rubric_id

SHOWN = "What should a good answer include? Question: What is 6 + 8? The correct answer: 14"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("1. [hard] (weight 5) The answer is 12.", ("The answer is 12.", 5.0, "hard")),  # the asked format
        ("2. (weight 3) [principle] Explains each step", ("Explains each step", 3.0, "principle")),  # swapped order
        ("- Essential: States the final answer as 12", ("States the final answer as 12", 5.0, "principle")),  # RaR
        ("- Pitfall: Gives two different answers", ("Gives two different answers", 5.0, "hard")),  # RaR pitfall
        ("* Important: Mentions units of the answer", ("Mentions units of the answer", 3.0, "principle")),
        ("3. Must not include code blocks here", ("Must not include code blocks here", 1.0, "hard")),  # "must"
        ("4) The response is concise and direct (2 points)", ("The response is concise and direct", 2.0, "principle")),
        (
            "5. weight: 4 - Uses correct arithmetic throughout",
            ("Uses correct arithmetic throughout", 4.0, "principle"),
        ),
        ("[hard] Gives exactly one answer", ("Gives exactly one answer", 1.0, "hard")),  # a tag without a marker
        ("6. [hard] (weight 50) States the result clearly", ("States the result clearly", 1.0, "hard")),  # off-scale
        ("1. 6 + 8 = 14", ("6 + 8 = 14", 1.0, "principle")),  # what the 135M writes: short, still checkable
        ("Here is the rubric:", None),  # a preamble: no marker, no tag
        ("Optional details are included", None),  # prose starting with a tier word is not a tag
        ("- ok", None),  # too few words
        ("1. [hard] (weight 5) <a rule every acceptable response must satisfy>", None),  # a template slot copied
        ("2. [principle] (weight 3)", None),  # tags and no criterion
        ("", None),
    ],
)
def test_parse_line(line, expected):
    got = parse_line(line)
    assert (got if got is None else (got.criterion, got.weight, got.kind)) == expected


@pytest.mark.parametrize(
    ("reply", "max_criteria", "expected"),
    [
        ("1. The answer is 14.\n2. The answer is 14.\n3. the answer is 14", 8, ["The answer is 14."]),  # repeats once
        ("Sure!\n1. States 14 as the sum\n2. Shows 6 + 8\nThanks.", 8, ["States 14 as the sum", "Shows 6 + 8"]),
        (
            "1. States 14 as the sum\n2. Shows the addition\n3. Is one line only",
            2,
            ["States 14 as the sum", "Shows the addition"],
        ),
        ("1. What is 6 + 8?\n2. The correct answer: 14", 8, []),  # echoes of the request are no criteria
        ("1. The answer is 14 because 6 + 8 = 14", 8, ["The answer is 14 because 6 + 8 = 14"]),  # not all echo
        ("14\n\nThe answer is: 14", 8, []),  # no list at all
        (None, 8, []),  # a failed call's empty text
    ],
)
def test_parse_criteria(reply, max_criteria, expected):
    assert [c.criterion for c in parse_criteria(reply, max_criteria, SHOWN)] == expected


def test_criterion_checks_and_rubric_id():
    with pytest.raises(ValueError, match="kind"):
        Criterion("States the answer", 1.0, "soft")
    with pytest.raises(ValueError, match="weight"):
        Criterion("States the answer", 0.0)
    a = [Criterion("States 14 as the sum", 5.0, "hard"), Criterion("Shows the sum", 1.0)]
    assert rubric_id(a) == rubric_id(list(a)) and len(rubric_id(a)) == 64
    assert rubric_id(a) != rubric_id(a[::-1]) != rubric_id([a[0], Criterion("Shows the sum", 2.0)])
    assert parse_criteria(render(a)) == a  # what a refine round shows the writer reads back the same
