"""transforms/labelers/text_normalize.py: look-alike letters fold before a verifier looks for words."""

import pytest

from rewardmill.transforms.labelers.text_normalize import fold_lookalikes


@pytest.mark.parametrize(
    "text, folded",
    [
        ("5 \u043er 6", "5 or 6"),  # Cyrillic о
        ("5 \u03bfr 6", "5 or 6"),  # Greek omicron
        ("\u041e\u0420", "OP"),  # Cyrillic capitals
        ("\uff15 \uff4f\uff52 \uff16", "5 or 6"),  # fullwidth
        ("o\u200br", "or"),  # zero-width space
        ("n\u00adot", "not"),  # soft hyphen
        ("x\u00b2", "x^2"),  # a superscript stays a power (NFKC alone would give x2)
        ("\u22125", "-5"),  # minus sign
        ("\u03c0 \u03b1 \u03b8", "\u03c0 \u03b1 \u03b8"),  # Greek letters with a math meaning are kept
        ("\\boxed{\\frac{1}{2}}", "\\boxed{\\frac{1}{2}}"),  # LaTeX is untouched
    ],
)
def test_fold_lookalikes(text, folded):
    assert fold_lookalikes(text) == folded
