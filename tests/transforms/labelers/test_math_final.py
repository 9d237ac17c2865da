"""transforms/labelers/math_final.py: where the final answer is, and whether it commits to one value."""

import pytest

from rewardmill.transforms.labelers.math_final import committed_text, final_site, flaw, site_snippet, unevaluated


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
    "completion, text",
    [
        ("<think>5</think>The answer is 7", "The answer is 7"),  # reasoning is not the answer
        ("<think>5", ""),  # unclosed: no answer
        ("5</think>7", "5 7"),  # a stray close tag hides nothing (tags are markup)
        ("<answer>5</answer>", " 5 "),
        ("5 \u043er 6", "5 or 6"),  # look-alikes folded
    ],
)
def test_committed_text(completion, text):
    assert committed_text(completion) == text


@pytest.mark.parametrize(
    "text, where, snippet",
    [
        ("\\boxed{6} is wrong, the answer is \\boxed{5}", "boxed", "$\\boxed{5}$"),  # the last box
        ("So \\boxed{5}. The answer is 6.", "answer_is", "answer is 6"),  # the later statement
        ("The answer is \\boxed{12}", "boxed", "$\\boxed{12}$"),  # a box inside the sentence is the answer
        ("7 + 5 = 12\nHope this helps!", "last_line", "7 + 5 = 12"),  # the last line that holds math
        ("no math here", None, None),
    ],
)
def test_final_site(text, where, snippet):
    site = final_site(text)
    assert (site and site.where, site and site_snippet(text, site)) == (where, snippet)


@pytest.mark.parametrize(
    "value, undone",
    [
        ("77 - 45", True),
        ("2^{10}", True),
        ("3 \\times 4", True),
        ("5!", True),
        ("x = 3 + 4", True),  # the right-hand side is what is stated
        ("32", False),
        ("-5", False),
        ("5.0", False),
        ("\\frac{10}{2}", False),  # a fraction of integers is a literal
        ("-1/3", False),
        ("1,000", False),
        ("3\\sqrt{2}", False),  # a closed form
        ("2\\pi", False),
        ("x + 1", False),  # an expression in a variable
    ],
)
def test_unevaluated(value, undone):
    assert unevaluated(value) is undone


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
