"""Fold look-alike characters before a verifier reads untrusted text for its words ("or", "not", "at least").

A policy that writes "5 оr 6" with a Cyrillic о, or "５ ｏｒ ６" in fullwidth, must read as "5 or 6": NFKC folds the
compatibility forms (fullwidth, ligatures, circled digits), invisible format characters (zero-width spaces and
joiners, soft hyphens) are dropped, and a small confusables map folds the Cyrillic and Greek letters that look like
Latin ones. Greek letters with a meaning in math (α, π, θ, ...) are kept.
"""

import unicodedata

# Cyrillic and Greek look-alikes of Latin letters (Unicode confusables, the letters a reader cannot tell apart).
_CONFUSABLES = {
    # Cyrillic lower case
    "а": "a", "в": "b", "е": "e", "һ": "h", "і": "i", "ј": "j", "к": "k", "ӏ": "l", "м": "m", "н": "h", "о": "o",
    "р": "p", "ԛ": "q", "г": "r", "ѕ": "s", "т": "t", "у": "y", "ԝ": "w", "х": "x", "ԁ": "d", "с": "c", "ь": "b",
    # Cyrillic upper case
    "А": "A", "В": "B", "Е": "E", "Н": "H", "І": "I", "Ј": "J", "К": "K", "М": "M", "О": "O", "Р": "P", "С": "C",
    "Ѕ": "S", "Т": "T", "Х": "X", "У": "Y", "Ԝ": "W", "Ԛ": "Q",
    # Greek: the capitals and omicron (no math meaning when written as a Unicode character)
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O", "Ρ": "P",
    "Τ": "T", "Υ": "Y", "Χ": "X", "ο": "o",
    # a minus sign reads as a hyphen-minus; superscript digits keep their meaning as powers (NFKC would make x² x2)
    "−": "-", "⁰": "^0", "¹": "^1", "²": "^2", "³": "^3", "⁴": "^4", "⁵": "^5", "⁶": "^6", "⁷": "^7", "⁸": "^8",
    "⁹": "^9",
}  # fmt: skip
_TABLE = str.maketrans(_CONFUSABLES)


def fold_lookalikes(text: str) -> str:
    """`text` with confusable letters as their Latin twins, NFKC-normalized, without invisible format characters."""
    text = unicodedata.normalize("NFKC", text.translate(_TABLE))
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf").translate(_TABLE)
