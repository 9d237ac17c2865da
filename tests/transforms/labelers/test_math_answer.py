import pickle
import threading
import time

import pytest

from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.labelers import LABELERS, get_labeler_class
from rewardmill.transforms.labelers.main_thread import HardTimeout, MainThreadRunner
from rewardmill.transforms.labelers.math_answer import (
    EXTRACTION_MODES,
    HEDGED,
    MathAnswerConfig,
    MathAnswerVerifier,
    answer_snippet,
    check_modes,
    last_box,
    verify_answer,
)


@pytest.mark.parametrize(
    ("completion", "reference", "verdict", "score"),
    [
        ("so the answer is \\boxed{12}", "12", "correct", 1.0),  # boxed
        ("7 + 5 = 12", "12", "correct", 1.0),  # last number, no anchor
        ("The total is 1,000 coins.", "1000", "correct", 1.0),  # thousands separator
        ("$\\frac{1}{3}$", "12/36", "correct", 1.0),  # equivalent fractions
        ("\\boxed{0.5}", "\\frac{1}{2}", "correct", 1.0),  # decimal vs LaTeX fraction
        ("7 + 5 = 13", "12", "incorrect", 0.0),  # wrong value
        ("I don't know.", "3", "incorrect", 0.0),  # no answer at all: wrong, but says so
        ("\\boxed{12}", "\\frac{", "abstain", None),  # gold does not parse: never reward
        ("\\boxed{12}", "", "abstain", None),  # no gold
        ("\\boxed{12}", None, "abstain", None),  # no gold
        ("", "5", "incorrect", 0.0),  # empty completion
    ],
)
def test_verdict_table(completion, reference, verdict, score):
    label = MathAnswerVerifier().label(completion, reference)
    assert (label.verdict, label.score) == (verdict, score)
    assert label.rationale  # every verdict says why


def test_correct_is_more_confident_than_incorrect_and_abstain_has_none():
    v = MathAnswerVerifier()
    assert v.label("\\boxed{2}", "2").confidence > v.label("\\boxed{3}", "2").confidence > 0
    assert v.label("\\boxed{2}", None).confidence == 0.0


def test_extracted_answer_is_kept_raw():
    assert verify_answer("so x = \\boxed{42}", "42", 5).raw == "42"


def test_works_from_a_worker_thread():
    """Beam calls DoFns from worker threads, where signal-based timeouts cannot run directly."""
    v = MathAnswerVerifier()
    out = []
    t = threading.Thread(target=lambda: out.append(v.label("\\boxed{7}", "7")))
    t.start()
    t.join(120)
    v.teardown()
    assert out and out[0].verdict == "correct"


@pytest.mark.slow
def test_hard_timeout_kills_a_hung_call_from_a_thread():
    runner = MainThreadRunner()
    errors = []

    def call():
        try:
            runner.call(time.sleep, (30,), hard_timeout=3)
        except HardTimeout as exc:
            errors.append(exc)

    start = time.monotonic()
    t = threading.Thread(target=call)
    t.start()
    t.join(60)
    assert errors and time.monotonic() - start < 30
    assert runner._pool is None  # killed; the next call starts a fresh process


def test_registry_and_pickle_round_trip():
    assert get_labeler_class("math_answer") is MathAnswerVerifier is LABELERS["math_answer"]
    with pytest.raises(KeyError, match="unknown labeler"):
        get_labeler_class("nope")
    v = pickle.loads(pickle.dumps(MathAnswerVerifier(MathAnswerConfig(timeout_seconds=2))))
    assert v.config.timeout_seconds == 2 and v.label("\\boxed{1}", "1").verdict == "correct"


def test_label_many_matches_label_in_order():
    rows = [("\\boxed{4}", "4"), ("\\boxed{5}", "4"), ("\\boxed{1}", None), ("1/2", "0.5")]
    v = MathAnswerVerifier(MathAnswerConfig(workers=2))
    try:
        assert v.label_many(rows) == [v.label(*row) for row in rows]
    finally:
        v.teardown()


@pytest.mark.parametrize(
    ("completion", "mode", "snippet"),
    [
        ("so \\boxed{12}.", "boxed", "$\\boxed{12}$"),  # plain box
        ("\\boxed{3} then \\boxed{\\frac{1}{2}}", "boxed", "$\\boxed{\\frac{1}{2}}$"),  # the last box wins
        ("\\fbox{7}", "boxed", "$\\boxed{7}$"),  # \fbox counts as a box
        ("The answer is 12", "boxed", None),  # no box
        ("The answer is 12.", "answer_is", "12"),  # trailing full stop dropped
        ("Answer: $\\frac{1}{2}$\nmore text", "answer_is", "$\\frac{1}{2}$"),  # rest of the line only
        ("answer is 3. No wait, the answer is 4", "answer_is", "4"),  # the last anchor wins
        ("the answer = 9", "answer_is", "9"),  # "answer =" anchor
        ("I answered it", "answer_is", None),  # "answered" is not an anchor
        ("7 + 5 = 12", "last_number", "$12$"),  # last number
        ("costs 1,000,000 dollars", "last_number", "$1000000$"),  # thousand separators removed
        ("it is 3/4 of it", "last_number", "$3/4$"),  # a fraction is one number
        ("from -2.5 down", "last_number", "$-2.5$"),  # sign and decimals
        ("1,2,3", "last_number", "$3$"),  # not a thousand separator: a list
        ("x2 and v3", "last_number", None),  # digits inside words are not numbers
        ("no numbers", "last_number", None),  # nothing
        ("   ", "math_verify", None),  # blank completion
        ("anything", "math_verify", "anything"),  # math-verify searches the whole text
    ],
)
def test_snippet_table(completion, mode, snippet):
    assert answer_snippet(completion, mode) == snippet


@pytest.mark.parametrize(
    ("completion", "modes", "verdict"),
    [
        ("The answer is 5. Check: 5 + 1 = 6", ("answer_is",), "correct"),  # anchored answer, not the last number
        ("The answer is 5. Check: 5 + 1 = 6", ("last_number",), "incorrect"),  # last number is 6
        ("\\boxed{5} so 6 apples", ("boxed", "last_number"), "correct"),  # box first
        ("5 apples", ("boxed", "last_number"), "correct"),  # no box: falls back to the last number
        ("5 apples", ("boxed",), "incorrect"),  # strict boxed: no box, no answer
        ("1,005 is it", ("last_number",), "incorrect"),  # 1005, not 5
        ("Final answer: $[1, 2)$", ("answer_is",), "incorrect"),  # interval vs a number
    ],
)
def test_modes_change_the_verdict(completion, modes, verdict):
    label = verify_answer(completion, "5", 5, extraction=modes)
    assert label.verdict == verdict, label.rationale


def test_rationale_names_the_mode_that_matched():
    assert verify_answer("5 apples", "5", 5, extraction=("boxed", "last_number")).rationale.startswith("last_number")


def test_interval_reference():
    assert verify_answer("Answer: $[1, 2)$", "[1,2)", 5, extraction=("answer_is",)).verdict == "correct"


def test_bad_modes_are_refused_early():
    with pytest.raises(ValueError, match="unknown extraction mode 'boxd'"):
        MathAnswerConfig(extraction=("boxd",))
    with pytest.raises(ValueError, match="at least one mode"):
        check_modes(())
    with pytest.raises(ConfigError, match="extraction"):
        from_dict(MathAnswerConfig, {"extraction": ["boxed", "nope"]}, "labelers.math")
    assert from_dict(MathAnswerConfig, {"extraction": ["boxed", "last_number"]}, "x").extraction == (
        "boxed",
        "last_number",
    )


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),  # nested braces
        ("\\boxed{1} and \\boxed{2}", "2"),  # the last one
        ("\\boxed{12", None),  # unclosed: no answer rather than a guess
        ("\\boxed {4}", "4"),  # space before the brace
        ("none", None),  # no box
    ],
)
def test_last_box(text, content):
    assert last_box(text) == content


@pytest.mark.parametrize(
    "completion, reference, verdict",
    [
        ("The answer is 5 or 6.", "5", "incorrect"),  # two values offered: never correct
        ("The answer is either 3 or 4", "4", "incorrect"),  # math-verify alone would take the last (4)
        ("either 5 or 6", "6", "incorrect"),  # no anchor: the last line offers both
        ("$5$ or $6$", "5", "incorrect"),
        ("\\boxed{5} or \\boxed{6}", "5", "incorrect"),
        ("The answer is 12. Or maybe 13.", "12", "incorrect"),
        ("The answer is 5, or maybe 6", "5", "incorrect"),
        ("So it is \\boxed{5}. The answer is 6.", "6", "incorrect"),  # the box and the sentence disagree
        ("The answer is 5.", "5", "correct"),
        ("The answer is 1/2 or 0.5", "1/2", "correct"),  # one value written two ways is no hedge
        ("Whether you add or subtract, the answer is 7.", "7", "correct"),  # prose around "or"
        ("The answer is \\boxed{12}", "12", "correct"),  # box and sentence agree
        ("The solutions are $\\{5, -5\\}$", "\\{5, -5\\}", "correct"),  # a set reference is several values
    ],
)
def test_a_hedge_never_verifies(completion, reference, verdict):
    label = verify_answer(completion, reference, 5)
    assert label.verdict == verdict, label
    if verdict == "incorrect":
        assert label.rationale.startswith("hedged: ") and label.score == 0.0


def test_hedge_last_judges_the_extracted_answer_alone():
    assert verify_answer("The answer is 5 or 6.", "5", 5, hedge_policy="last").verdict == "correct"
    assert from_dict(MathAnswerConfig, {}, "x").hedge == "reject"  # the default rejects
    with pytest.raises(ConfigError, match="hedge"):
        from_dict(MathAnswerConfig, {"hedge": "first"}, "x")


# LaTeX-heavy golds, given with their own delimiters (as datasets such as MATH ship them), and answers to them.
QUADRATIC = "x = \\frac{1}{2}, x = \\frac{-1 \\pm \\sqrt{13}}{4}"
LATEX_GOLDS = [
    (f"$${QUADRATIC}$$", f"${QUADRATIC}$"),  # sympy cannot read it: math-verify compares the text
    (f"$${QUADRATIC}$$", "The solutions are $x = \\frac{1}{2}$ and more."),
    ("$\\{1, 2, 3\\}$", "The set is $\\{1,2,3\\}$"),
    ("$\\{1, 2, 3\\}$", "The set is $\\{1,2\\}$"),
    ("$(1, 2)$", "The point is $(1, 2)$."),
    ("$(1, 2)$", "The point is $(2, 1)$."),
    ("$[0, 1)$", "So $x \\in [0, 1)$"),
    ("$(-\\infty, 2]$", "\\boxed{(-\\infty, 2]}"),
    ("$\\pm 3$", "x = \\boxed{\\pm 3}"),
    ("$x = 5$", "\\boxed{5}"),
    ("\\boxed{3} and \\boxed{4}", "$\\boxed{3, 4}$"),
    ("\\(\\frac{3}{4}\\)", "The answer is $0.75$."),
    ("\\[ \\sqrt{2} \\]", "\\boxed{\\sqrt{2}}"),
    ("$$2\\pi$$", "$2\\pi$"),
    ("$\\{-1, 1\\}$", "x = \\pm 1, so \\boxed{\\{-1, 1\\}}"),
]


@pytest.mark.parametrize("gold, answer", LATEX_GOLDS)
def test_delimited_golds_are_read_as_math_verify_reads_them(gold, answer):
    from math_verify import parse, verify

    expected = verify(parse(gold), parse(answer))  # math-verify's own reading of the gold as given
    label = verify_answer(answer, gold, 5)
    assert label.verdict in ("correct", "incorrect"), label  # never `$$$...$$$` that abstains
    assert (label.verdict == "correct") == expected, label


# The red team's table (reference 5 unless stated): each was scored correct by the shipped defaults. Only the final
# committed answer counts, and one that is taken back, negated, a range or several values is no answer.
RED_TEAM = [
    ("I first got \\boxed{5}, but 5 is wrong.", 5, "retraction"),  # the box is taken back in the same sentence
    ("\\boxed{5}\n\nActually 6.", 5, "retraction"),  # a later change of mind
    ("The answer is \\boxed{5}.\n\nRecomputing: 2 \\times 4 = 8", 5, "retraction"),  # a recomputation ending "= 8"
    ("So \\boxed{5}.\n\nLet me redo it: 3 + 5 = 8", 5, "retraction"),
    ("\\boxed{5}\n\n6", 5, "retraction"),  # the text ends on another bare value
    ("5 is not the answer", 5, "retraction"),
    ("not 5", 5, "negation"),
    ("anything but 5", 5, "negation"),
    ("The answer is not 5.", 5, "negation"),
    ("The answer isn't 5.", 5, "negation"),
    ("$x \\neq 5$", 5, "negation"),
    ("at least 5", 5, "range"),
    ("more than 5", 5, "range"),
    ("5 or greater", 5, "range"),
    ("between 5 and 6", 5, "range"),
    ("\\boxed{x \\geq 5}", 5, "range"),
    ("5+", 5, "range"),
    ("5 and 6", 5, "several values"),  # hedges without the word "or"
    ("5; 6; 7", 5, "several values"),
    ("5 (or 6 if the endpoint counts)", 5, "several values"),
    ("5, although 6 is also plausible", 5, "several values"),
    ("The answer is 5. It could also be 6.", 5, "several values"),
    ("\\boxed{5, 6}", 5, "several values"),
    ("\\boxed{4}\n\\boxed{5}", 5, "several values"),  # a list of boxes: the last one does not win alone
    ("The answer is 5 \u043er 6.", 5, "several values"),  # Cyrillic о
    ("The answer is \uff15 \uff4f\uff52 \uff16", 5, "several values"),  # fullwidth
    ("The answer is 5 o\u200br 6.", 5, "several values"),  # a zero-width space inside "or"
    ("77 - 45 = \\boxed{}", 32, "empty"),  # the demo's pair: an empty box is no answer
    ("\\boxed{77 - 45}", 32, "not a result"),  # the question's arithmetic, unevaluated
    ("The answer is 77 - 45.", 32, "not a result"),
    ("\\boxed{2^{5}}", 32, "not a result"),
]


# Variants the red team did not write, of the same attacks: other words, markup and separators.
VARIANTS = [
    ("\\boxed{5}\n\nThat's off; it should be 6.", 5, "retraction"),
    ("\\boxed{5}\n\nActually six.", 5, "retraction"),  # a number word
    ("5? No.", 5, "retraction"),
    ("n0t 5", 5, "negation"),  # a zero for the o
    ("*not* 5", 5, "negation"),  # markdown around the word
    ("\\boxed{\\text{not } 5}", 5, "negation"),  # the negation inside the box
    ("5 \\pm 1", 5, "range"),
    ("5, or is it 6", 6, "several values"),
    ("x = 5 or x = -5", -5, "several values"),
    ("5 vs 6", 6, "several values"),
    ("5or 6", 6, "several values"),  # no space between the value and "or"
    ("6 or 5apples", 5, "several values"),  # a value glued to a word is still a value
    ("6 or 5wrong", 5, "retraction"),  # and the glued word still counts
    ("5 | 6", 6, "several values"),
    ("5\n6", 6, "several values"),  # a value on each of the last lines
    ("77 - 45 = \\boxed{?}", 32, "empty"),  # a placeholder is no answer
    ("\\boxed{\\quad}", 5, "empty"),
    ("The answer is \\boxed{(77-45)}", 32, "not a result"),
]


@pytest.mark.parametrize("completion, reference, reason", RED_TEAM + VARIANTS)
def test_a_final_answer_that_commits_to_no_value_is_incorrect(completion, reference, reason):
    label = verify_answer(completion, reference, 5)
    assert (label.verdict, label.score) == ("incorrect", 0.0), label
    assert label.rationale.startswith(f"{HEDGED}{reason}"), label.rationale  # final: an appeal never overturns it


@pytest.mark.parametrize(
    "completion",
    [
        "<think>The answer is 5.</think>The answer is 7.",  # reasoning never counts
        "<think>5</think>maybe 7",
        "<think>\\boxed{5}</think>seven",  # a word the verifier cannot read: no answer, not the reasoning's
        "<think>so it is 5",  # an unclosed reasoning block has no answer at all
    ],
)
def test_answers_inside_reasoning_never_count(completion):
    label = verify_answer(completion, "5", 5)
    assert (label.verdict, label.score) == ("incorrect", 0.0), label


@pytest.mark.parametrize(
    "completion, reference",
    [
        ("\\boxed{5}", "5"),
        ("The answer is 5.", "5"),
        ("5", "5"),
        ("x = 5", "5"),
        ("$\\frac{10}{2}$", "5"),  # a fraction of two integers is a literal value
        ("5.0", "5"),
        ("Let me compute 2+3 = 5. The answer is 5", "5"),
        ("between the two options I pick 5", "5"),  # "between" without a range
        (
            "We start with 12 apples and give away 4, leaving 8. Then 3 more go, so 8 - 3 = 5.\n"
            "Therefore 5 apples are left.",
            "5",
        ),  # a long derivation with intermediate numbers
        ("<think>maybe 7</think>The answer is 5", "5"),
        ("\\boxed{6} is wrong, the answer is \\boxed{5}", "5"),  # the reverse error: the final answer decides
        ("The answer is 6. Wait, no: \\boxed{5}", "5"),  # a correction before the final answer
        ("The answer is 5, not 6.", "5"),  # a rejected alternative is no hedge
        ("The answer is 12 since 3 \\times 4 = 12.", "12"),  # an explanation is no second value
        ("\\boxed{5}\n\nCheck: 2 + 3 = 5, and 5 \\times 2 = 10.", "5"),  # a check that uses the answer
        ("\\boxed{5}\n\nWait, let me double-check: 2 + 3 = 5. Yes.", "5"),
        ("\\boxed{1/3}", "\\frac{1}{3}"),  # equivalent forms math-verify accepts
        ("0.5", "1/2"),
        ("The answer is \uff15.", "5"),  # a fullwidth digit is still 5
        ("\\boxed{\\sqrt{8}}", "2\\sqrt{2}"),  # a closed form is a value, not arithmetic left undone
        ("\\boxed{2^{10}}", "2^{10}"),  # the reference itself is written unevaluated
        # honest styles seen in math datasets and model outputs
        ("Natalia sold 48/2 = <<48/2=24>>24 clips.\nShe sold 48+24 = <<48+24=72>>72 clips.\n#### 72", "72"),  # GSM8K
        ("Final Answer: The final answer is $72$. I hope it is correct.", "72"),  # Minerva's format
        ("The probability is $\\frac{1}{4}$, or 25%.", "1/4"),  # a percentage is the same value
        ("The answer is \\boxed{5}. Alternatively, one can count directly: 1, 2, 3, 4, 5.", "5"),  # a second method
        ("\\boxed{5}\n\nA common mistake: forgetting to subtract gives 6.", "5"),  # a warning, not a retraction
        ("The roots are $x = 2$ and $x = 3$, so the sum is $\\boxed{5}$.", "5"),
        ("So the answer is 5 apples, not 6 apples.", "5"),
    ],
)
def test_honest_final_answers_stay_correct(completion, reference):
    label = verify_answer(completion, reference, 5)
    assert (label.verdict, label.score) == ("correct", 1.0), label


@pytest.mark.parametrize("reference", [5, 5.0, "5", "5.0"])
def test_a_numeric_reference_is_read_as_its_value(reference):
    v = MathAnswerVerifier()
    assert v.label("\\boxed{5}", reference).verdict == "correct"
    assert v.label("\\boxed{6}", reference).verdict == "incorrect"
    assert v.label_many([("\\boxed{5}", reference), ("\\boxed{6}", reference)])[0].verdict == "correct"
    v.teardown()


def test_reference_zero_is_a_reference_and_nan_is_none():
    assert verify_answer("\\boxed{0}", 0, 5).verdict == "correct"
    assert verify_answer("\\boxed{0}", float("nan"), 5).verdict == "abstain"
    assert verify_answer("\\boxed{0}", True, 5).verdict == "abstain"  # a flag is not an answer


@pytest.mark.parametrize("completion", [None, 5, ["\\boxed{5}"]])
def test_a_completion_that_is_not_text_is_an_error_that_says_so(completion):
    label = MathAnswerVerifier().label(completion, "5")
    assert (label.verdict, label.score) == ("error", None)
    assert label.rationale.startswith(f"completion is {type(completion).__name__}, not text")


def test_hedge_last_still_rejects_what_is_not_a_hedge():
    """`hedge: last` judges several values by the extracted one; a retraction, negation, range or empty box is no
    value at all and stays incorrect."""
    last = {"hedge_policy": "last"}
    assert not verify_answer("5 and 6", "5", 5, **last).rationale.startswith(HEDGED)  # judged by the value read
    for completion in ("not 5", "at least 5", "\\boxed{5}\n\nActually 6.", "77 - 45 = \\boxed{}"):
        assert verify_answer(completion, "5", 5, **last).rationale.startswith(HEDGED), completion


def test_reasoning_is_skipped_by_every_extraction_mode():
    for mode in EXTRACTION_MODES:
        snippet = answer_snippet("<think>\\boxed{5} so 5</think>The answer is 7", mode)
        assert snippet in ("answer is 7", "7", "$7$", None), (mode, snippet)


@pytest.mark.parametrize("completion", ["5 and 6", "5; 6", "5 (or 6 if it counts)", "5, although 6 is also plausible"])
@pytest.mark.parametrize("reference", ["5", "6"])
def test_a_hedge_is_incorrect_whichever_value_is_the_reference(completion, reference):
    assert verify_answer(completion, reference, 5).rationale.startswith(f"{HEDGED}several values")


def test_answer_tags_are_markup_not_a_comparison():
    assert verify_answer("<think>7 + 5</think><answer>\\boxed{12}</answer>", "12", 5).verdict == "correct"
    assert verify_answer("<answer>5</answer>", "5", 5).verdict == "correct"


@pytest.mark.parametrize(
    "completion, verdict",
    [
        ("I think 6 is wrong; 5.", "correct"),  # the value read (5) is judged, not the first one written
        ("The answer is not 5 and the remainder is 2.", "incorrect"),  # the negated 5 is what would be scored
        ("The answer is 5 apples and the remainder is 2.", "correct"),
    ],
)
def test_the_statement_is_judged_around_the_value_that_is_scored(completion, verdict):
    assert verify_answer(completion, "5", 5).verdict == verdict


def _slow(*args, **kwargs):
    from math_verify.errors import TimeoutException

    raise TimeoutException("slow")


def test_a_completion_that_times_out_math_verify_is_incorrect_and_not_cached(monkeypatch):
    """The reference parsed within the bound, so the time went on the completion's own answer: 0, not 'cannot
    verify' (an unverified rollout would outrank every verified wrong one); a loaded machine may be to blame, so the
    label is not cached."""
    import math_verify

    monkeypatch.setattr(math_verify, "verify", _slow)
    label = verify_answer("\\boxed{5}", "5", 5)
    assert (label.verdict, label.score, label.cacheable) == ("incorrect", 0.0, False)
    assert label.rationale.startswith(HEDGED) and "unverifiable" in label.rationale


def test_a_reference_that_times_out_is_a_timeout(monkeypatch):
    import math_verify

    monkeypatch.setattr(math_verify, "parse", _slow)
    label = verify_answer("\\boxed{5}", "5", 5)
    assert (label.verdict, label.score) == ("timeout", None) and "reference" in label.rationale


def test_an_integral_is_not_handed_to_math_verify(monkeypatch):
    """Calculus written out is a computation left undone, recognised before parsing (it could eat the time bound)."""
    import math_verify

    monkeypatch.setattr(math_verify, "verify", _slow)
    label = verify_answer("\\boxed{\\int_0^1 \\frac{\\ln(1+x^{7})}{1+x^{3}} dx}", "5", 5)
    assert (label.verdict, label.score) == ("incorrect", 0.0) and "left undone" in label.rationale


@pytest.mark.parametrize(
    ("completion", "reference", "verdict"),
    [
        ("**Answer: 5**", "5", "correct"),  # bold is presentation, not "5**"
        ("The answer is *5*.", "5", "correct"),  # italics
        ("Answer: `5`", "5", "correct"),  # code span
        ("The answer is \\$5.", "5", "correct"),  # an escaped currency sign
        ("2**3 = 8", "8", "correct"),  # ** between digits is kept (a power)
        ("\\boxed{25\\%}", "25\\%", "correct"),  # a percentage in a box reads as it does outside one
        ("~~\\boxed{5}~~ \\boxed{6}", "5", "incorrect"),  # struck out is withdrawn
        ("<del>5</del>", "5", "incorrect"),  # struck out, nothing left
        ("x &ge; 5", "5", "incorrect"),  # an entity is the character it names
        ("The answer is 5 or ٦.", "5", "incorrect"),  # digits of another script are digits
    ],
)
def test_what_a_reader_sees_is_what_is_read(completion, reference, verdict):
    assert verify_answer(completion, reference, 5).verdict == verdict


@pytest.mark.parametrize(
    ("completion", "verdict", "hedged"),
    [
        ("The answer is (B).", "correct", False),  # an option letter alone ends the answer
        ("**B**", "correct", False),
        ("The answer is (C).", "incorrect", False),  # another option
        ("The answer is (B) or (C).", "incorrect", True),  # two options
        ("The answer is B. Actually C.", "incorrect", True),  # a later change of mind
        ("The answer is (B). Hope this helps!", "incorrect", False),  # not read: the letter does not end the text
    ],
)
def test_an_option_letter_is_read_only_when_it_alone_ends_the_answer(completion, verdict, hedged):
    label = verify_answer(completion, "B", 5)
    assert label.verdict == verdict and label.rationale.startswith(HEDGED) is hedged, label


@pytest.mark.parametrize(
    ("completion", "reference", "verdict"),
    [
        # demo rollouts of the default model: honest answers the final-answer rules once rejected
        ("The answer is a math problem. 70 + 81 equals 151.", "151", "correct"),  # a valueless "answer is"
        (
            "To add 6 and 4, we need to combine them in a way that yields 10. This can be achieved by adding 4 and 6. "
            "Adding these numbers results in 10.",
            "10",
            "correct",  # 4 and 6 are operands
        ),
        ('"Add 4 and 4. Add 4 to 4 and it becomes 8."', "8", "correct"),
        # and demo rollouts that stay incorrect
        ("1\n\nSo, 9 + 1 is 10.", "10", "incorrect"),  # two final lines, two values: a list is no committed answer
        ("77 - 45 = \\boxed{}", "32", "incorrect"),  # an empty box
        ("To add 50 + 83, you should add 50 + 83 = 225, which is the result of 50 + 83.", "133", "incorrect"),
    ],
)
def test_demo_rollouts(completion, reference, verdict):
    label = MathAnswerVerifier().label(completion, reference)
    assert label.verdict == verdict, label
