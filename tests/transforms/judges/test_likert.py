import math
import pickle

import pytest

from rewardmill.transforms.judges.client import TokenLogprob
from rewardmill.transforms.judges.likert import (
    GEval,
    LikertVerdict,
    SelfConsistency,
    build_pointwise,
    class_mass,
    geval_score,
    normalize_score,
    parse_likert,
    self_consistency,
    token_text,
)


def pos(token: str, probs: dict[str, float]) -> TokenLogprob:
    """One generated position from probabilities (the chosen token's own probability taken from `probs`)."""
    return TokenLogprob(token, math.log(probs.get(token, 1e-9)), {t: math.log(p) for t, p in probs.items()})


@pytest.mark.parametrize(
    ("text", "scale", "expected"),
    [
        ("Score: 4\nReason: Correct but terse.", (1, 5), LikertVerdict(4, "Correct but terse.", "Score: 4")),  # format
        (
            "Score: 4\nReason: a score of 5 needs more.",
            (1, 5),
            LikertVerdict(4, "a score of 5 needs more.", "Score: 4"),
        ),
        # the first labeled score counts, not one quoted in the reason
        ("score:5", (1, 5), LikertVerdict(5, None, "score:5")),  # lower case, no space, no reason
        ("**Score:** 3\n**Reason:** vague", (1, 5), LikertVerdict(3, "vague", "Score: 3")),  # markdown bold
        ("Score: 4/5. Mostly right.", (1, 5), LikertVerdict(4, "Mostly right.", "Score: 4/5")),  # with denominator
        ("Feedback: good. [RESULT] 4", (1, 5), LikertVerdict(4, "good.", "[RESULT] 4")),  # Prometheus
        ("[RESULT] 2 ... [RESULT] 5", (1, 5), LikertVerdict(5, "[RESULT] 2 ...", "[RESULT] 5")),  # last RESULT counts
        ("4", (1, 5), LikertVerdict(4, None, "4")),  # a lone digit
        ("  (2).  ", (1, 5), LikertVerdict(2, None, "(2).")),  # lone digit with punctuation
        ("3\nThe answer misses a step.", (1, 5), LikertVerdict(3, "The answer misses a step.", "3")),  # first line
        ("I would give it 4 out of 5.", (1, 5), LikertVerdict(4, "I would give it", "4 out of 5")),  # "n out of hi"
        ("Rating - 2", (1, 5), LikertVerdict(2, None, "Rating - 2")),  # other label and separator
        ("The score is 1", (1, 5), LikertVerdict(1, "The", "score is 1")),  # "is" separator
        ("Score: four", (1, 5), LikertVerdict(4, None, "Score: four")),  # number word
        ("Score: 4.0", (1, 5), LikertVerdict(4, None, "Score: 4.0")),  # integral decimal
        ("Score: 0", (0, 3), LikertVerdict(0, None, "Score: 0")),  # zero-based scale
        ("Score: 8\nReason: ok", (1, 10), LikertVerdict(8, "ok", "Score: 8")),  # 10-point scale
        ("Score: 7", (1, 5), LikertVerdict(None, None, None)),  # malformed: above the scale
        ("Score: 0", (1, 5), LikertVerdict(None, None, None)),  # malformed: below the scale
        ("Score: 4.5", (1, 5), LikertVerdict(None, None, None)),  # malformed: not an integer
        ("Score: 4/10", (1, 5), LikertVerdict(None, None, None)),  # malformed: another scale's maximum
        ("Score: <a number from 1 to 5>", (1, 5), LikertVerdict(None, None, None)),  # malformed: template echoed
        ("Score: 1-5", (1, 5), LikertVerdict(None, None, None)),  # malformed: range echoed
        ("2 + 2 = 4, which is right.", (1, 5), LikertVerdict(None, None, None)),  # malformed: numbers in prose
        ("The answer is good.", (1, 5), LikertVerdict(None, None, None)),  # malformed: no score at all
        ("Score: " + "9" * 5000, (1, 5), LikertVerdict(None, None, None)),  # malformed: a huge number
        ("[RESULT]" + " " * 100_000 + "x", (1, 5), LikertVerdict(None, None, None)),  # malformed: long, stays linear
        ("", (1, 5), LikertVerdict(None, None, None)),  # malformed: empty reply
        (None, (1, 5), LikertVerdict(None, None, None)),  # malformed: no reply (failed request)
    ],
)
def test_parse_likert(text, scale, expected):
    assert parse_likert(text, scale) == expected


@pytest.mark.parametrize(
    ("scale", "error"),
    [
        ((5, 1), "low < high"),  # reversed
        ((3, 3), "low < high"),  # empty
        ((1.0, 5), "integers"),  # float bound
        ((True, 5), "integers"),  # bool is not a score
    ],
)
def test_bad_scale_raises(scale, error):
    with pytest.raises(ValueError, match=error):
        parse_likert("Score: 3", scale)


def test_build_pointwise_is_short_and_constrained():
    messages = build_pointwise("What is 2+2?", "4", "correctness", (1, 5))
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "Score: <a number from 1 to 5>" in messages[0]["content"]
    assert "correctness" in messages[0]["content"]
    assert "What is 2+2?" in messages[1]["content"] and "\n4\n" in messages[1]["content"]
    assert sum(len(m["content"]) for m in messages) < 400  # a 135M judge needs a short prompt


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        (" 4", "4"),  # leading space
        ("▁4", "4"),  # SentencePiece marker
        ("Ġ4", "4"),  # byte-level BPE marker
        ("Yes", "Yes"),  # unchanged
    ],
)
def test_token_text(token, expected):
    assert token_text(token) == expected


@pytest.mark.parametrize(
    ("logprobs", "expected"),
    [
        ((pos("4", {"4": 1.0}),), GEval(4.0, 0.0, 1.0)),  # certain
        ((pos("4", {"4": 0.5, "5": 0.5}),), GEval(4.5, 0.5, 1.0)),  # split between two scores
        ((pos(" 4", {" 4": 0.3, "4": 0.3, " 2": 0.4}),), GEval(3.2, 0.979796, 1.0)),  # variants add up
        ((pos("4", {"4": 0.4, "2": 0.1, "The": 0.5}),), GEval(3.6, 0.8, 0.5)),  # renormalized over score tokens
        (
            (pos("Score", {"Score": 0.9, "3": 0.05}), pos(":", {":": 1.0}), pos(" 5", {" 5": 0.8, " 4": 0.2})),
            GEval(4.8, 0.4, 1.0),
        ),  # first position where score tokens carry the mass, not the stray "3" before it
        ((pos("7", {"7": 0.9, "5": 0.1}),), None),  # malformed: chosen "7" is off the scale, "5" holds too little
        ((pos("The", {"The": 0.9, "4": 0.1}),), None),  # malformed: score tokens never carry the mass
        ((TokenLogprob("4", 0.0, {}),), GEval(4.0, 0.0, 1.0)),  # top_logprobs=0: only the chosen token is known
        ((), None),  # malformed: no positions
        (None, None),  # backend gave no logprobs
    ],
)
def test_geval_score(logprobs, expected):
    got = geval_score(logprobs, (1, 5))
    if expected is None:
        assert got is None
    else:
        assert (got.expected, got.spread, got.mass) == pytest.approx(
            (expected.expected, expected.spread, expected.mass), abs=1e-6
        )


def test_class_mass_counts_chosen_token_outside_top():
    # the chosen token is not among the returned alternatives (top-k cut it): it still counts
    position = TokenLogprob("4", math.log(0.3), {"The": math.log(0.6)})
    assert class_mass((position,), lambda t: 4 if t == "4" else None) == {4: pytest.approx(0.3)}


@pytest.mark.parametrize(
    ("score", "scale", "expected"),
    [
        (1, (1, 5), 0.0),  # bottom
        (5, (1, 5), 1.0),  # top
        (3, (1, 5), 0.5),  # middle
        (4.5, (1, 5), 0.875),  # G-Eval expectation
        (7, (0, 10), 0.7),  # zero-based scale
        (None, (1, 5), None),  # no score stays None
    ],
)
def test_normalize_score(score, scale, expected):
    assert normalize_score(score, scale) == expected


def test_normalize_score_out_of_scale_raises():
    with pytest.raises(ValueError, match="outside the scale"):
        normalize_score(6, (1, 5))


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ([4, 4, 4], SelfConsistency(4.0, 1.0, 3)),  # unanimous
        ([4, 4, 5, None], SelfConsistency(13 / 3, 2 / 3, 3)),  # one unparsed sample left out
        ([1, 2, 3, 4], SelfConsistency(2.5, 0.25, 4)),  # no agreement at all
        ([None, None], SelfConsistency(None, None, 0)),  # nothing parsed
        ([], SelfConsistency(None, None, 0)),  # no samples
    ],
)
def test_self_consistency(scores, expected):
    assert self_consistency(scores) == expected


def test_results_pickle():
    verdict = parse_likert("Score: 4", (1, 5))
    assert pickle.loads(pickle.dumps(verdict)) == verdict
    assert pickle.loads(pickle.dumps(GEval(4.0, 0.1, 0.9))) == GEval(4.0, 0.1, 0.9)
