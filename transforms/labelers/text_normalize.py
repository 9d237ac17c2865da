"""Fold look-alike characters before a verifier reads untrusted text for its words ("or", "not", "at least").

A policy that writes "5 оr 6" with a Cyrillic о, or "５ ｏｒ ６" in fullwidth, must read as "5 or 6": NFKC folds the
compatibility forms (fullwidth, ligatures, circled digits), invisible format characters (zero-width spaces and
joiners, soft hyphens) are dropped, and a small confusables map folds the Cyrillic and Greek letters that look like
Latin ones. Greek letters with a meaning in math (α, π, θ, ...) are kept.

`visible_text` and `skeleton` serve checks that count or forbid words (IFEval): the first is the text a reader sees
(invisible characters gone, blank-looking letters as spaces); the second is how a word *looks*, for a check that
forbids it: Unicode's confusables folded for every script, marks under or over a letter dropped, HTML character
references decoded, comma-like (any punctuation Unicode names a comma) and full-stop-like punctuation as "," and
".".
"""

import functools
import html
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


# Characters a reader does not see: format characters (zero-width spaces and joiners, soft hyphens, bidi controls,
# tags) and the variation selectors and the combining grapheme joiner, which are marks that draw nothing.
_INVISIBLE_MARKS = frozenset("\u034f\u180b\u180c\u180d\u180f") | frozenset(map(chr, range(0xFE00, 0xFE10)))
_INVISIBLE_MARKS |= frozenset(map(chr, range(0xE0100, 0xE01F0)))
# Letters and symbols that draw as blank space: the Hangul fillers, the halfwidth filler and the braille blank.
BLANK_LOOKING = "\u115f\u1160\u3164\uffa0\u2800"


def _invisible(ch: str) -> bool:
    return ch in _INVISIBLE_MARKS or unicodedata.category(ch) == "Cf"


def visible_text(text: str) -> str:
    """`text` as a reader sees it: invisible characters removed, blank-looking letters (a Hangul filler) as spaces.
    A count of words or an emptiness test must count what is seen, not what pads it."""
    return "".join(" " if ch in BLANK_LOOKING else ch for ch in text if not _invisible(ch))


# Unicode's confusables (confusables.txt, as confusable-homoglyphs 3.3.1 ships it in confusables.json): every single
# character that is not NFKC-equal to a printable ASCII character but is listed as confusable with one, mapped to
# it ("ɑ" -> "a", Lisu "ꓧ" -> "H", "‚" -> ","). Generated once from that file; the Cyrillic and Greek letters of
# _CONFUSABLES above are folded first and agree with it.
_SKELETON_FROM = (
    "\u2010\u2011\u2012\u2013\ufe58\u2043\u02d7\u2212\u2796\u2cba\u201a\xb8\ua4f9\u0589\u16ec\ufe30\u1803\u1809"
    "\u205a\u02f8\ua789\u2236\u02d0\ua4fd\u01c3\u2d51\u0294\u0241\u097d\u13ae\ua6eb\ua60e\u06f0\ua4f8\u055d\u2018"
    "\u2019\u201b\u2032\u2035\u055a\xb4\u0384\u1ffd\u1fbd\u1fbf\u1ffe\u02b9\u0374\u02c8\u02ca\u02cb\u02f4\u02bb"
    "\u02bd\u02bc\u02be\ua78c\u144a\u16cc\u2768\u2772\u3014\ufd3e\u2769\u2773\u3015\ufd3f\u2774\U0001d114\u2775"
    "\u204e\u2217\U0001031f\u1735\u2041\u2215\u2044\u2571\u27cb\u29f8\U0001d23a\u31d3\u3033\u2cc6\u30ce\u4e3f"
    "\u2f03\u2216\u27cd\u29f5\u29f9\U0001d20f\U0001d23b\u31d4\u4e36\u2f02\ua778\u02c4\u02c6\u16ed\u2795\U0001029b"
    "\u2039\u276e\u02c2\U0001d236\u1438\u16b2\u1400\u2e40\u30a0\ua4ff\u203a\u276f\u02c3\U0001d237\u1433\U00016f3f"
    "\u2053\u02dc\u1fc0\u223c\ua75a\u01a7\u03e8\ua644\u14bf\ua6ef\U0001d206\ua7ab\u021c\u01b7\ua76a\u2ccc\u0417"
    "\u04e0\U00016f3b\U000118ca\u13ce\U000118af\u01bc\U000118bb\u2cd2\u0431\u13ee\U000118d5\U0001d212\U000104d2"
    "\U000118c6\u09ea\u0a6a\u0223\u0222\U0001031a\u0a67\u0b68\u09ed\u0d6d\ua76e\u2cca\U000118cc\U000118ac"
    "\U000118d6\u237a\u0251\u03b1\U0001d6c2\U0001d6fc\U0001d736\U0001d770\U0001d7aa\u0430\u0391\U0001d6a8"
    "\U0001d6e2\U0001d71c\U0001d756\U0001d790\u0410\u13aa\u15c5\ua4ee\U00016f40\U000102a0\u0184\u042c\u13cf\u1472"
    "\u15af\ua7b4\u0392\U0001d6a9\U0001d6e3\U0001d71d\U0001d757\U0001d791\u0412\u13f4\u15f7\ua4d0\U00010282"
    "\U000102a1\U00010301\u1d04\u03f2\u2ca5\u0441\uabaf\U0001043d\U0001f74c\U000118f2\U000118e9\u03f9\u2ca4\u0421"
    "\u13df\ua4da\U000102a2\U00010302\U00010415\U0001051c\u0501\u13e7\u146f\ua4d2\u13a0\u15de\u15ea\ua4d3\u212e"
    "\uab32\u0435\u04bd\u22ff\u0395\U0001d6ac\U0001d6e6\U0001d720\U0001d75a\U0001d794\u0415\u2d39\u13ac\ua4f0"
    "\U000118a6\U000118ae\U00010286\uab35\ua799\u1e9d\u0584\U0001d213\ua798\u03dc\U0001d7ca\u15b4\ua4dd\U000118c2"
    "\U000118a2\U00010287\U000102a5\U00010525\u0261\u1d83\u018d\u0581\u050c\u13c0\u13f3\ua4d6\u04bb\u0570\u13c2"
    "\u0397\U0001d6ae\U0001d6e8\U0001d722\U0001d75c\U0001d796\u2c8e\u041d\u13bb\u157c\ua4e7\U000102cf\u02db\u2373"
    "\u0131\U0001d6a4\u026a\u0269\u03b9\u1fbe\u037a\U0001d6ca\U0001d704\U0001d73e\U0001d778\U0001d7b2\u0456\ua647"
    "\u04cf\uab75\u13a5\U000118c3\u03f3\u0458\ua7b2\u037f\u0408\u13ab\u148d\ua4d9\u039a\U0001d6b1\U0001d6eb"
    "\U0001d725\U0001d75f\U0001d799\u2c94\u041a\u13e6\u16d5\ua4d7\U00010518\u2223\u23fd\uffe8\u06f1\U00010320"
    "\u0196\u01c0\u0399\U0001d6b0\U0001d6ea\U0001d724\U0001d75e\U0001d798\u2c92\u0406\u04c0\u2d4f\u16c1\ua4f2"
    "\U00016f28\U0001028a\U00010309\U0001d22a\u2cd0\u13de\u14aa\ua4e1\U00016f16\U000118a3\U000118b2\U0001041b"
    "\U00010526\u039c\U0001d6b3\U0001d6ed\U0001d727\U0001d761\U0001d79b\u03fa\u2c98\u041c\u13b7\u15f0\u16d6\ua4df"
    "\U000102b0\U00010311\u0578\u057c\u039d\U0001d6b4\U0001d6ee\U0001d728\U0001d762\U0001d79c\u2c9a\ua4e0"
    "\U00010513\u0966\u0a66\u0ae6\u0be6\u0c66\u0ce6\u0d66\u0e50\u0ed0\u1040\u06f5\u1d0f\u1d11\uab3d\u03bf"
    "\U0001d6d0\U0001d70a\U0001d744\U0001d77e\U0001d7b8\u03c3\U0001d6d4\U0001d70e\U0001d748\U0001d782\U0001d7bc"
    "\u2c9f\u043e\u10ff\u0585\u0d20\u101d\U000104ea\U000118c8\U000118d7\U0001042c\u09e6\u0b66\u3007\U000114d0"
    "\U000118e0\u039f\U0001d6b6\U0001d6f0\U0001d72a\U0001d764\U0001d79e\u2c9e\u041e\u0555\u2d54\u12d0\u0b20"
    "\U000104c2\ua4f3\U000118b5\U00010292\U000102ab\U00010404\U00010516\u2374\u03c1\u03f1\U0001d6d2\U0001d6e0"
    "\U0001d70c\U0001d71a\U0001d746\U0001d754\U0001d780\U0001d78e\U0001d7ba\U0001d7c8\u2ca3\u0440\u03a1\U0001d6b8"
    "\U0001d6f2\U0001d72c\U0001d766\U0001d7a0\u2ca2\u0420\u13e2\u146d\ua4d1\U00010295\u051b\u0563\u0566\u2d55"
    "\uab47\uab48\u1d26\u2c85\u0433\uab81\U0001d216\u01a6\u13a1\u13d2\U000104b4\u1587\ua4e3\U00016f35\ua731\u01bd"
    "\u0455\uabaa\U000118c1\U00010448\u0405\u054f\u13d5\u13da\ua4e2\U00016f3a\U00010296\U00010420\u22a4\u27d9"
    "\U0001f768\u03a4\U0001d6bb\U0001d6f5\U0001d72f\U0001d769\U0001d7a3\u2ca6\u0422\u13a2\ua4d4\U00016f0a"
    "\U000118bc\U00010297\U000102b1\U00010315\ua79f\u1d1c\uab4e\uab52\u028b\u03c5\U0001d6d6\U0001d710\U0001d74a"
    "\U0001d784\U0001d7be\u057d\U000104f6\U000118d8\u222a\u22c3\u054d\u1200\U000104ce\u144c\ua4f4\U00016f42"
    "\U000118b8\u2228\u22c1\u1d20\u03bd\U0001d6ce\U0001d708\U0001d742\U0001d77c\U0001d7b6\u0475\U00011706\uaba9"
    "\U000118c0\U0001d20d\u06f7\u0474\u2d38\u13d9\u142f\ua6df\ua4e6\U00016f08\U000118a0\U0001051d\u026f\u1d21"
    "\u0461\u051d\u0561\U0001170a\U0001170e\U0001170f\uab83\U000118ef\U000118e6\u051c\u13b3\u13d4\ua4ea\u166e\xd7"
    "\u292b\u292c\u2a2f\u0445\u1541\u157d\u166d\u2573\U00010322\U000118ec\ua7b3\u03a7\U0001d6be\U0001d6f8"
    "\U0001d732\U0001d76c\U0001d7a6\u2cac\u0425\u2d5d\u16b7\ua4eb\U00010290\U000102b4\U00010317\U00010527\u0263"
    "\u1d8c\u028f\u1eff\uab5a\u03b3\u213d\U0001d6c4\U0001d6fe\U0001d738\U0001d772\U0001d7ac\u0443\u04af\u10e7"
    "\U000118dc\u03a5\u03d2\U0001d6bc\U0001d6f6\U0001d730\U0001d76a\U0001d7a4\u2ca8\u0423\u04ae\u13a9\u13bd\ua4ec"
    "\U00016f43\U000118a4\U000102b2\u1d22\uab93\U000118c4\U000102f5\U000118e5\u0396\U0001d6ad\U0001d6e7\U0001d721"
    "\U0001d75b\U0001d795\u13c3\ua4dc\U000118a9"
)
_SKELETON_TO = (
    "----------,,,:::::::::::!!?????...''''''''''''''''''''''''''(((()))){{}***//////////////\\\\\\\\\\\\\\\\\\&^"
    "^+++<<<<<<====>>>>>>~~~~22222233333333334455666677788888999999999aaaaaaaaaAAAAAAAAAAAAbbbbbBBBBBBBBBBBBBBccc"
    "cccCCCCCCCCCCCCddddDDDDeeeeEEEEEEEEEEEEEEffffFFFFFFFFFFFggggGGGGhhhHHHHHHHHHHHHiiiiiiiiiiiiiiiiiiiijjJJJJJJK"
    "KKKKKKKKKKKllllllllllllllllllllllLLLLLLLLLLMMMMMMMMMMMMMMMnnNNNNNNNNNooooooooooooooooooooooooooooooooooooOOO"
    "OOOOOOOOOOOOOOOOOOOOOpppppppppppppppPPPPPPPPPPPPqqqQrrrrrrRRRRRRRRssssssSSSSSSSSTTTTTTTTTTTTTTTTTTuuuuuuuuuu"
    "uuuuUUUUUUUUUvvvvvvvvvvvvvVVVVVVVVVVVwwwwwwwwwWWWWWWxxxxxxxxXXXXXXXXXXXXXXXXXXXXyyyyyyyyyyyyyyyyYYYYYYYYYYYY"
    "YYYYzzzZZZZZZZZZZZ"
)
_SKELETON = str.maketrans(_SKELETON_FROM, _SKELETON_TO)
# Punctuation that reads as a comma or as a sentence's end in some script (not always a look-alike: the ideographic
# comma and the Armenian full stop are the comma and full stop of their scripts). Applied before the confusables,
# which would make the Armenian full stop a colon.
_PUNCTUATION = str.maketrans(
    {**dict.fromkeys("\u3001\u060c\u055d\u066b\u066c\u07f8\u1363\u1802\u1808\u2e32\u2e34\u2e41\ua4fe", ","),
     **dict.fromkeys("\u0589\u06d4\u0964\u0965\u3002\ua4f8\ua4ff\u1362\u0701\u0702", "."),
     "\u061f": "?"}
)  # fmt: skip


@functools.cache
def _comma_like(ch: str) -> bool:
    """True for punctuation that Unicode names a comma, as itself or after NFKC (the halfwidth, small and vertical
    ideographic commas are compatibility forms of U+3001): Vai, Bamum, Newa, medieval, double stacked... Letters and
    marks named after a comma (ș, the modifier letter turned comma ʻ, a combining comma above) and the comma quotation
    mark ornaments are not commas."""
    folded = unicodedata.normalize("NFKC", ch)
    return any(
        unicodedata.category(c) == "Po" and "COMMA" in unicodedata.name(c, "") for c in {ch, folded} if len(c) == 1
    )


def _commas(text: str) -> str:
    return "".join("," if ch > "\x7f" and _comma_like(ch) else ch for ch in text)


def skeleton(text: str) -> str:
    """How `text` looks, for a check that forbids a word or a character: HTML character references decoded, invisible
    and blank-looking characters dropped (so "ba\u3164d" is "bad"), comma- and full-stop-like punctuation as "," and
    ".", compatibility forms and accents decomposed and every mark dropped ("b\u0332a\u0332d\u0332" is "bad"), and
    Unicode's confusables folded to their ASCII twin. Case is kept. For matching words only, never for reading a
    value."""
    text = html.unescape(text)
    text = "".join(ch for ch in text if not _invisible(ch) and ch not in BLANK_LOOKING)
    text = unicodedata.normalize("NFKD", _commas(text).translate(_PUNCTUATION).translate(_TABLE))
    text = "".join(ch for ch in text if not unicodedata.category(ch).startswith("M"))
    return unicodedata.normalize("NFKC", text.translate(_SKELETON)).translate(_SKELETON)


def ascii_digits(text: str) -> str:
    """`text` with every decimal digit of another script (Arabic-Indic "٦", Devanagari "६", fullwidth "６") written as
    the ASCII digit of the same value, so "5 or ٦" offers two numbers, as a reader sees it."""
    return "".join(
        str(unicodedata.digit(ch)) if ch > "\x7f" and unicodedata.category(ch) == "Nd" else ch for ch in text
    )
