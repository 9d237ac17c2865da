"""transforms/labelers/math_commitment.py: whether the final answer commits to one value."""

import pytest

from rewardmill.transforms.labelers.math_commitment import flaw
from rewardmill.transforms.labelers.math_final import final_site


def differ(a: str, b: str) -> bool:
    """A stand-in for math-verify: plain numbers compared by value, anything else as text."""

    def value(text: str):
        text = text.strip(" $")
        try:
            return float(text.replace(",", ""))
        except ValueError:
            return text

    return value(a) != value(b)


@pytest.mark.parametrize(
    "text, reason",
    [
        ("I first got \\boxed{5}, but 5 is wrong.", "retraction"),
        ("\\boxed{5}\n\nActually 6.", "retraction"),
        ("\\boxed{5}\n\nRecomputing: 4 + 4 = 8", "retraction"),
        ("The answer is 5.\n\n4 + 4 = 8", "retraction"),  # ends on another result that does not use the answer
        ("not 5", "negation"),
        ("at least 5", "range"),
        ("5 or more", "range"),
        ("5 and 6", "several values"),
        ("The answer is 12. Or maybe 13.", "several values"),  # the next sentence opens with an alternative
        ("So it is \\boxed{5}. The answer is 6.", "two different final answers"),
        ("77 - 45 = \\boxed{}", "empty"),
        ("\\boxed{5}", None),
        ("The answer is 5, not 6.", None),
        ("The answer is 5. Check: 5 + 1 = 6", None),  # a check that uses the answer
        ("The answer is 6. Wait, no: \\boxed{5}", None),  # corrected before the final answer
    ],
)
def test_flaw(text, reason):
    found = flaw(text, final_site(text), differ)
    assert (found.split(":")[0] if found else None) == reason, found


def test_flaw_switches():
    """Without `hedges` several values pass (hedge: last); a reference with several values allows lists and ranges."""
    assert flaw("5 and 6", final_site("5 and 6"), differ, hedges=False) is None
    assert flaw("at least 5", final_site("at least 5"), differ, single_valued=False) is None
    assert flaw("\\boxed{5}\n\nActually 6.", final_site("\\boxed{5}\n\nActually 6."), differ, hedges=False)


@pytest.mark.parametrize(
    "text, reason",
    [
        # the last committed value decides: a later value stated as a result supersedes the box
        ("\\boxed{5}\n\nErratum: 6", "retraction"),  # a short clause that ends on a value
        ("\\boxed{5}\n\nThat was a typo; I meant 6.", "retraction"),  # a result cue before it
        ("The answer is 5; the correct method gives 7.", "retraction"),
        ("\\boxed{5} \\to 7", "several values"),  # an arrow joins two values in the statement itself
        ("\\boxed{5}\n\n\\to 7", "retraction"),  # after it, the arrow replaces the value
        ("The answer is 5. If not, 6.", "retraction"),
        # not a new result: a mistake named, a thing named, a restatement, a computation, a count, a negation
        ("\\boxed{5}\n\nNote: 6 is incorrect because the endpoint is excluded.", None),
        ("\\boxed{5}\n\nCheck: the other two sides sum to 4 + 6 = 10.", None),
        ("\\boxed{5}\n\nSee Lemma 6.", None),
        ("The answer is 5 apples and the remainder is 2.", None),  # another quantity, not the value
        ("\\boxed{5}. Alternatively, count: 1, 2, 3, 4, 5.", None),  # a list that ends on the value
        # someone else's answer, or a supposition
        ("The textbook claims the answer is 5. I disagree.", "attribution"),
        ("Suppose the answer is 5.", "attribution"),
        ("\\boxed{6} is wrong, the answer is \\boxed{5}", None),  # a rejected box is no attribution of the final one
        # approximate or unsure
        ("probably 5", "tentative"),
        ("\\boxed{5 \\text{ (not sure)}}", "tentative"),
        ("5?", "tentative"),
        # several values in final-answer positions
        ("5 oder 6", "several values"),  # a single foreign word between two values
        ("5–6", "several values"),  # a dash
        ("\\boxed{5 \\lor 6}", "several values"),
        ("Option A: 5\nOption B: 6", "several values"),  # lines of one shape
        ("The answer is 5. The answer is 6.", "two different final answers"),
        ("\\boxed{5}\n\nAlso valid: \\boxed{6}", "two different final answers"),
        ("\\boxed{5} (6 + 1)", "several values"),  # working that computes another value
        ("\\boxed{5}\n\n* 8", "retraction"),  # a bullet, not a multiplication
        ("The answer is 5.\n\nTo summarize: start with 2, add 3.", None),  # operands
        ("10^{5}", None),  # one value
        ("The answer is $\\frac{1}{3}$, approximately 0.333.", None),  # an approximation restates it
    ],
)
def test_final_answer_positions(text, reason):
    found = flaw(text, final_site(text), differ)
    assert (found.split(":")[0] if found else None) == reason, found


@pytest.mark.parametrize(
    "text, reason, value",
    [
        # the numerals an operation names ("add 6 and 4", "Add 4 to 4") are its operands, not alternatives
        ("To add 6 and 4, we get 10. This is adding 4 and 6. Adding these numbers results in 10.", None, "10"),
        ('"Add 4 and 4. Add 4 to 4 and it becomes 8."', None, "8"),
        # a value after the pair, or a pair joined by a strong alternative, is still offered
        ("Add 4 and 4. It becomes 8 or 4.", "several values", "8"),
        ("Adding these numbers results in 10, or maybe 4.", "several values", "10"),
        ("Add 4 and 4. The answer is 8 or add 4 to 5.", "several values", "8"),
        # an "answer is" that holds no value is no answer statement: the later statement of a result decides
        ("The answer is a math problem. 70 + 81 equals 151.", None, "151"),
        ("The answer is a math problem. 70 + 81 equals 151 or 150.", "several values", "151"),
    ],
)
def test_operands_and_valueless_answer_statements(text, reason, value):
    """Judged around the value the verifier scores (`value`: math-verify's reading of the statement)."""
    found = flaw(text, final_site(text), differ, extracted=value)
    assert (found.split(":")[0] if found else None) == reason, found


@pytest.mark.parametrize(
    "text, extracted, reason",
    [
        ("The answer is 5 over 2.", "5", "not a result"),
        ("The answer is 5 and a half.", "5", "not a result"),
        ("The answer is 5 squared.", "5", "not a result"),
        ("The answer is 5!.", "5", "not a result"),
        ("The answer is 5i.", "5", "not a result"),
        ("The answer is x + 5.", "5", "not a result"),
        ("The answer is the square root of 5.", "5", "not a result"),
        ("\\boxed{5}0", "5", "not a result"),
        ("\\boxed{5_{x}}", "5", "not a result"),
        ("The answer is 5 apples.", "5", None),  # what is counted may follow the value
        ("The answer is 5 cm.", "5", None),
        ("The answer is 5!", "5", None),  # an exclamation mark ends the sentence
        ("\\boxed{5} apples", "5", None),
    ],
)
def test_what_stands_next_to_the_value(text, extracted, reason):
    found = flaw(text, final_site(text), differ, extracted=extracted)
    assert (found.split(":")[0] if found else None) == reason, found
