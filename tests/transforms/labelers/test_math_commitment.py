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
