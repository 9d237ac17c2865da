"""transforms/labelers/text_normalize.py: look-alike letters fold before a verifier looks for words."""

import pytest

from rewardmill.transforms.labelers.text_normalize import fold_lookalikes, skeleton, visible_text


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


@pytest.mark.parametrize(
    "text, seen",
    [
        ("u\u200bn\u2060d\u00ader", "under"),  # zero-width space, word joiner, soft hyphen
        ("ba\ufe0fd ba\u034fd", "bad bad"),  # a variation selector, the combining grapheme joiner
        ("one\u3164two\u2800three", "one two three"),  # a Hangul filler and the braille blank read as spaces
        ("caf\u00e9 b\u0332", "caf\u00e9 b\u0332"),  # visible marks stay
    ],
)
def test_visible_text(text, seen):
    assert visible_text(text) == seen


@pytest.mark.parametrize(
    "text, looks",
    [
        ("b\u0251d", "bad"),  # Latin alpha (Unicode confusables)
        ("\ua4e7ello \ua4d0ad", "Hello Bad"),  # Lisu letters
        ("b\u0332a\u0332d\u0332 caf\u00e9", "bad cafe"),  # combining low lines and accents dropped
        ("ba\u3164d ba\u200bd", "bad bad"),  # blank-looking and invisible characters dropped inside a word
        ("b&#97;d &amp;", "bad &"),  # HTML character references
        ("a\u201a b\ua4f9 c\u3001 d\u060c", "a, b, c, d,"),  # comma look-alikes and the commas of other scripts
        ("a\ua4f8 b\u0589 c\u06d4", "a. b. c."),  # full-stop look-alikes and full stops of other scripts
        ("\uff42\uff41\uff44 b\u0430d", "bad bad"),  # fullwidth, Cyrillic (as fold_lookalikes)
        ("plain text, kept.", "plain text, kept."),
    ],
)
def test_skeleton(text, looks):
    assert skeleton(text) == looks


@pytest.mark.parametrize(
    "comma", ["\uff64", "\ufe51", "\ufe11", "\ua60d", "\ua6f5", "\U0001144d", "\U00016e97", "\u2e4c", "\u2e49"]
)
def test_skeleton_reads_every_punctuation_named_comma_as_a_comma(comma):
    assert skeleton(f"one{comma} two") == "one, two"


def test_skeleton_keeps_letters_named_after_a_comma():
    assert "," not in skeleton("Hawai\u02bbi, Bucure\u0219ti, \u021aara".replace(",", ""))
