import pickle

import pytest

from rewardmill.transforms.judges.panel import (
    DEFAULT_PERSONAS,
    PanelDecision,
    Persona,
    aggregate_votes,
    apply_persona,
    build_reflection,
)

STRICT = Persona("strict", "Be strict.")


@pytest.mark.parametrize(
    ("votes", "threshold", "kind", "expected"),
    [
        ([True, True, True], 2 / 3, "binary", PanelDecision(True, 1.0, 1.0, 3, (True, True, True))),  # unanimous
        ([1, 0, 1], 2 / 3, "binary", PanelDecision(True, 1.0, 2 / 3, 3, (1, 0, 1))),  # 2 of 3 at threshold 2/3
        ([False, False, True], 2 / 3, "binary", PanelDecision(True, 0.0, 2 / 3, 3, (False, False, True))),  # no
        ([1, 0, 1], 0.8, "binary", PanelDecision(False, None, 2 / 3, 3, (1, 0, 1))),  # split under the threshold
        ([1, 0], 0.5, "binary", PanelDecision(False, None, 0.5, 2, (1, 0))),  # tie for the top always abstains
        ([1, None, None], 0.5, "binary", PanelDecision(False, None, 1.0, 1, (1, None, None))),  # too few valid
        ([None, None], 0.5, "binary", PanelDecision(False, None, 0.0, 0, (None, None))),  # nothing parsed
        ([4, 4, 5], 2 / 3, "likert", PanelDecision(True, 4.0, 2 / 3, 3, (4, 4, 5))),  # mode 4
        ([4, 4, None, 5], 2 / 3, "likert", PanelDecision(True, 4.0, 2 / 3, 3, (4, 4, None, 5))),  # None left out
        ([1, 3, 5], 0.5, "likert", PanelDecision(False, None, 1 / 3, 3, (1, 3, 5))),  # no agreement
        ([4, 4, 5, 5], 0.5, "likert", PanelDecision(False, None, 0.5, 4, (4, 4, 5, 5))),  # two modes: abstain
        ([], 0.5, "likert", PanelDecision(False, None, 0.0, 0, ())),  # no votes
    ],
)
def test_aggregate_votes(votes, threshold, kind, expected):
    assert aggregate_votes(votes, threshold, kind) == expected


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"votes": [1], "threshold": 0.5, "kind": "median"}, "kind must be"),  # unknown kind
        ({"votes": [1], "threshold": 0.0, "kind": "binary"}, "threshold"),  # threshold 0 accepts anything
        ({"votes": [1], "threshold": 1.5, "kind": "binary"}, "threshold"),  # above 1
        ({"votes": [4, 1], "threshold": 0.5, "kind": "binary"}, "binary vote"),  # a Likert vote in a binary panel
        ({"votes": [1], "threshold": 0.5, "kind": "binary", "min_valid": 0}, "min_valid"),  # min_valid < 1
    ],
)
def test_aggregate_votes_rejects_bad_arguments(kwargs, error):
    with pytest.raises(ValueError, match=error):
        aggregate_votes(**kwargs)


def test_min_valid_one_accepts_a_single_vote():
    assert aggregate_votes([None, 5], 1.0, "likert", min_valid=1) == PanelDecision(True, 5.0, 1.0, 1, (None, 5))


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        (
            ({"role": "system", "content": "Grade."}, {"role": "user", "content": "Q"}),
            ({"role": "system", "content": "Be strict.\nGrade."}, {"role": "user", "content": "Q"}),
        ),  # persona goes before the task's system message
        (
            ({"role": "user", "content": "Q"},),
            ({"role": "system", "content": "Be strict."}, {"role": "user", "content": "Q"}),
        ),  # no system message: one is added
    ],
)
def test_apply_persona(messages, expected):
    before = [dict(m) for m in messages]
    assert apply_persona(messages, STRICT) == expected
    assert [dict(m) for m in messages] == before  # the shared messages are not changed


def test_default_personas_are_distinct():
    assert len({p.name for p in DEFAULT_PERSONAS}) == len(DEFAULT_PERSONAS) >= 3
    assert all(p.system_prompt for p in DEFAULT_PERSONAS)


@pytest.mark.parametrize(
    ("others", "max_chars", "expected_block"),
    [
        (
            [("lenient", "Right idea."), ("expert", "Wrong unit.")],
            300,
            "- lenient: Right idea.\n- expert: Wrong unit.",
        ),
        ([("expert", "A very long\nrationale indeed")], 12, "- expert: A very lo...\n"),  # cut and kept on one line
        ([("expert", None)], 300, "- expert: "),  # a judge without rationale
        ([], 300, "- (none)"),  # no other judge answered
    ],
)
def test_build_reflection(others, max_chars, expected_block):
    original = ({"role": "system", "content": "Grade."}, {"role": "user", "content": "Q"})
    messages = build_reflection(original, "Score: 4", others, max_chars=max_chars)
    assert messages[:2] == original and messages[:2][0] is not original[0]  # copies, same content
    assert messages[2] == {"role": "assistant", "content": "Score: 4"}
    assert messages[3]["role"] == "user" and expected_block in messages[3]["content"]
    assert "same format" in messages[3]["content"]


def test_values_pickle():
    decision = aggregate_votes([4, 4, 5], 0.6)
    for value in (decision, STRICT, DEFAULT_PERSONAS):
        assert pickle.loads(pickle.dumps(value)) == value
