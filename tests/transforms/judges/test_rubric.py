import pickle

import pytest

from rewardmill.transforms.judges.rubric import (
    Principle,
    PrincipleScore,
    PrometheusVerdict,
    Rubric,
    build_principles,
    build_prometheus,
    parse_principles,
    parse_prometheus,
    principles_score,
)

DESCRIPTIONS = {1: "wrong", 2: "mostly wrong", 3: "half right", 4: "mostly right", 5: "fully right"}
RUBRIC = Rubric("Is the answer correct?", DESCRIPTIONS)
PRINCIPLES = [
    Principle("accuracy", "The response is factually correct.", 2.0),
    Principle("concise", "The response is short."),
    Principle("no_hallucination", "The response invents nothing."),
]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"criteria": "Correct?", "descriptions": DESCRIPTIONS}, Rubric("Correct?", DESCRIPTIONS)),  # int keys
        (
            {"criteria": "Correct?", "descriptions": {str(k): v for k, v in DESCRIPTIONS.items()}},
            Rubric("Correct?", DESCRIPTIONS),
        ),  # string keys, as YAML may give them
        (
            {"criteria": "Correct?", **{f"score{k}_description": v for k, v in DESCRIPTIONS.items()}},
            Rubric("Correct?", DESCRIPTIONS),
        ),  # Prometheus' flat layout
    ],
)
def test_rubric_from_dict(data, expected):
    assert Rubric.from_dict(data) == expected


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"criteria": "x", "descriptions": DESCRIPTIONS, "scale": 5}, "unknown rubric keys"),  # typo'd / extra key
        ({"descriptions": DESCRIPTIONS}, "needs criteria"),  # no criteria
        ({"criteria": " ", "descriptions": DESCRIPTIONS}, "criteria must be a non-empty string"),  # blank criteria
        ({"criteria": "x", "descriptions": {1: "a", 2: "b"}}, "exactly the scores"),  # missing scores
        ({"criteria": "x", "descriptions": {**DESCRIPTIONS, 6: "extra"}}, "exactly the scores"),  # extra score
        ({"criteria": "x", "descriptions": {**DESCRIPTIONS, 3: ""}}, "score 3 must be a non-empty"),  # empty text
        ({"criteria": "x", "descriptions": {"one": "a"}}, "keys must be the scores"),  # non-numeric key
        ({"criteria": "x", "descriptions": ["a", "b"]}, "must be a mapping"),  # a list
        (
            {"criteria": "x", "descriptions": DESCRIPTIONS, "score1_description": "a"},
            "not both",
        ),  # both layouts at once
        ({"criteria": "x", "score1_description": "a"}, "exactly the scores"),  # flat layout, incomplete
        ("criteria: x", "must be a mapping"),  # not a mapping at all
    ],
)
def test_rubric_from_dict_rejects(data, error):
    with pytest.raises(ValueError, match=error):
        Rubric.from_dict(data)


@pytest.mark.parametrize(
    ("reference", "has_reference"),
    [
        ("12", True),  # reference-guided grading
        (None, False),  # without a reference answer
    ],
)
def test_build_prometheus(reference, has_reference):
    system, user = build_prometheus("What is 7+5?", "It is 12.", RUBRIC, reference)
    content = user["content"]
    assert system["role"] == "system"
    assert content.startswith("###Task Description:") and content.endswith("###Feedback:")
    assert "###The instruction to evaluate:\nWhat is 7+5?" in content
    assert "###Response to evaluate:\nIt is 12." in content
    assert "[Is the answer correct?]\nScore 1: wrong\nScore 2: mostly wrong" in content
    assert "Score 5: fully right" in content and "[RESULT]" in content
    assert ("###Reference Answer (Score 5):\n12" in content) is has_reference
    assert ("reference answer that gets a score of 5" in content) is has_reference


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Feedback: Correct and complete. [RESULT] 5", PrometheusVerdict(5, "Correct and complete.")),  # format
        ("The answer is off by one. [RESULT] 2", PrometheusVerdict(2, "The answer is off by one.")),  # no label
        ("Feedback: ok\n[RESULT]: 4", PrometheusVerdict(4, "ok")),  # colon after [RESULT]
        ("Feedback: ok [RESULT] 3 [RESULT] 4", PrometheusVerdict(4, "ok [RESULT] 3")),  # the last one counts
        ("Feedback: ok. Score: 4", PrometheusVerdict(4, "ok.")),  # "Score:" instead of [RESULT]
        ("Feedback: fine [RESULT] 6", PrometheusVerdict(None, None)),  # malformed: off the 1-5 scale
        ("Feedback: fine [RESULT] (an integer between 1 and 5)", PrometheusVerdict(None, None)),  # template echo
        ("Feedback: fine", PrometheusVerdict(None, None)),  # malformed: no score
        (None, PrometheusVerdict(None, None)),  # malformed: no reply
    ],
)
def test_parse_prometheus(text, expected):
    assert parse_prometheus(text) == expected


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"name": "", "text": "x"}, "non-empty"),  # empty name
        ({"name": "a: b", "text": "x"}, "without ':'"),  # a colon would break "name: yes" lines
        ({"name": "a", "text": " "}, "non-empty text"),  # empty text
        ({"name": "a", "text": "x", "weight": 0}, "positive number"),  # zero weight
        ({"name": "a", "text": "x", "weight": True}, "positive number"),  # bool weight
        ({"name": "a", "text": "x", "weight": float("inf")}, "finite"),  # infinite weight
    ],
)
def test_principle_rejects(kwargs, error):
    with pytest.raises(ValueError, match=error):
        Principle(**kwargs)


def test_build_principles_lists_each_principle():
    system, user = build_principles("Add 7 and 5.", "12", PRINCIPLES)
    assert "accuracy: yes or no\nconcise: yes or no\nno_hallucination: yes or no" in system["content"]
    assert "- accuracy: The response is factually correct." in user["content"]
    assert "Add 7 and 5." in user["content"] and "\n12\n" in user["content"]


@pytest.mark.parametrize(
    "principles",
    [
        [],  # none
        [Principle("accuracy", "a"), Principle("Accuracy", "b")],  # names equal once normalized
    ],
)
def test_build_principles_rejects_bad_lists(principles):
    with pytest.raises(ValueError, match="distinct names"):
        build_principles("q", "r", principles)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "accuracy: yes\nconcise: no\nno_hallucination: yes",
            {"accuracy": True, "concise": False, "no_hallucination": True},
        ),  # the requested format
        (
            "1. **Accuracy**: Yes.\n2. Concise - NO\n3. no hallucination = yes, nothing invented",
            {"accuracy": True, "concise": False, "no_hallucination": True},
        ),  # numbering, bold, case, other separators, "_" as a space
        (
            "accuracy: yes\naccuracy: no\nconcise: maybe",
            {"accuracy": True, "concise": None, "no_hallucination": None},
        ),  # first line counts; unclear and missing lines give None
        (
            "accuracy: yes or no\nstyle: yes",
            {"accuracy": None, "concise": None, "no_hallucination": None},
        ),  # malformed: template echoed; an unknown principle is ignored
        ("The response is good.", {"accuracy": None, "concise": None, "no_hallucination": None}),  # malformed: prose
        (
            "accuracy" + " " * 100_000 + "x",
            {"accuracy": None, "concise": None, "no_hallucination": None},
        ),  # malformed: a long line without separator (parsing stays linear)
        (None, {"accuracy": None, "concise": None, "no_hallucination": None}),  # malformed: no reply
    ],
)
def test_parse_principles(text, expected):
    assert parse_principles(text, PRINCIPLES) == expected


@pytest.mark.parametrize(
    ("results", "expected"),
    [
        ({"accuracy": True, "concise": True, "no_hallucination": True}, PrincipleScore(1.0, 1.0)),  # all satisfied
        ({"accuracy": True, "concise": False, "no_hallucination": False}, PrincipleScore(0.5, 1.0)),  # weight 2 of 4
        ({"accuracy": False, "concise": True, "no_hallucination": None}, PrincipleScore(1 / 3, 0.75)),  # one missing
        ({"accuracy": None, "concise": True, "no_hallucination": None}, PrincipleScore(1.0, 0.25)),  # low coverage
        ({"accuracy": None, "concise": None, "no_hallucination": None}, None),  # nothing parsed
        ({}, None),  # empty results
    ],
)
def test_principles_score(results, expected):
    assert principles_score(results, PRINCIPLES) == expected


def test_values_pickle():
    for value in (RUBRIC, PRINCIPLES[0], parse_prometheus("[RESULT] 3"), PrincipleScore(0.5, 1.0)):
        assert pickle.loads(pickle.dumps(value)) == value
