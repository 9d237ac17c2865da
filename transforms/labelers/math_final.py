"""Where a math completion states its final answer, and the values written around it (pure).

The final answer is read the way a grader reads it: in the text after any leading reasoning block (reasoning.py),
with look-alike characters folded (text_normalize.py) and tags dropped, the last answer statement (the last
\\boxed{}, the last "answer is", or else the last line that holds math) decides. An "answer is" that holds no value and
no lack of one ("The answer is a math problem.") is no answer statement: the last later line that states a result is.
Whether that statement commits to one value is math_commitment.py's; `empty` and `unevaluated` say when its value is
no result at all (an empty box, or the question's own arithmetic left undone: "77 - 45" is no result for "what is
77 - 45").
"""

import html
import re
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from rewardmill.transforms.labelers.reasoning import split_reasoning
from rewardmill.transforms.labelers.text_normalize import ascii_digits, fold_lookalikes

# Combining overlays that strike a character through (a long or short stroke or solidus): "5\u0338" renders as a
# struck-out 5.
STRIKE_OVERLAYS = "\u0334\u0335\u0336\u0337\u0338\u20d2\u20e5"


def fraction_slash(text: str) -> str:
    """`text` with the FRACTION SLASH (U+2044, what NFKC makes of "⅓": "1⁄3") and the DIVISION SLASH written as "/"."""
    return text.replace("\u2044", "/").replace("\u2215", "/")


# "The answer is 12.", "Final answer: $\frac{1}{2}$", "answer = 7": the answer runs to the end of its sentence
# (a full stop before a space or the end; "3.5" keeps its decimal point) or line.
ANSWER_IS = re.compile(r"(?i)\banswer\b\s*(?:is\b|[:=])\s*:?\s*(?P<answer>[^\n]{1,200}?)(?=\.\s|\.?$|\n)", re.M)
BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
# 1,000,000 | -3.5 | 3/4 | 42 — thousand separators only in groups of three, so "1,2,3" is three numbers.
NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s*/\s*\d+)?(?![\w])")
_LATEX_VALUE = re.compile(
    r"-?\d*(?:\\[dt]?frac\{[^{}]*\}\{[^{}]*\}|\\sqrt(?:\[[^\]]*\])?\{[^{}]*\}|\\pi\b)(?:\^\{?[^{}\s]*\}?)?"
)
# A number inside words too ("5or 6", "not5"): the values a statement holds, whatever glues them to the prose.
_TOKEN_NUMBER = re.compile(r"(?<!\d)(?<![^.]\.)(?<!^\.)-?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?(?:\s*/\s*\d+)?")
_PERCENT = re.compile(r"(?<![\w.])(?P<n>-?\d+(?:\.\d+)?)\s*\\?%")
_WORDS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen \
seventeen eighteen nineteen".split()
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_WORD_NUMBER = re.compile(rf"(?i)\b(?:{'|'.join(_WORDS[2:] + list(_TENS))})\b")
# Numerals a reader reads as numbers too: CJK digits ("六") and Roman numerals of two letters or more ("VI"; a lone "I"
# or "V" is as often a pronoun or a variable).
_DOZEN = re.compile(r"(?i)\b(?:half\s+a|a|one)\s+dozen\b")  # "half a dozen" is 6
_CJK = "零一二三四五六七八九十"
_CJK_NUMBER = re.compile(f"[{_CJK}]")
_ROMAN = re.compile(r"\b(?=[IVXLC]{2,}\b)C{0,3}(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})\b")
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100}


def _roman(numeral: str) -> int:
    values = [_ROMAN_VALUES[c] for c in numeral]
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))


MATH_SPAN = re.compile(r"\$\$?(?P<m>[^$]+?)\$\$?|\\\((?P<p>.+?)\\\)")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n")

# Arithmetic on plain numerals ("77 - 45", "2^{10}", "3 \times 4", "5!") once LaTeX spacing is gone; a single
# number or fraction of two integers ("\frac{10}{2}", "-1/3") is a literal value, not a computation left undone.
_ARITH = re.compile(r"[\d.()\[\]{}+\-*/^!]+")
_SCIENTIFIC = re.compile(r"[+-]?\d+(?:\.\d+)?\*10\^\{?[+-]?\d+\}?")  # "5 \times 10^3": a value in scientific notation
_LITERAL = re.compile(r"[+-]?\(?(?:\d+(?:\.\d+)?|\d+\)?/\(?\d+)\)?")


@dataclass(frozen=True)
class Site:
    """The final answer statement: `where` it was found (boxed | answer_is | last_line), the span of its value in the
    text (`start`, `end`), and the span it covers with its markup (`outer_start`, `outer_end`: a whole \\boxed{})."""

    where: str
    start: int
    end: int
    outer_start: int
    outer_end: int
    anchor: int  # where math-verify should start reading (the "answer" word of an "answer is")


# How far around the final answer its statement is read, and how many of its values are compared with the answer: a
# completion that writes thousands of numbers on one line costs no more than one that writes a few.
WINDOW = 1000
WINDOW_TOKENS = 50
_TAG = re.compile(r"</?[A-Za-z][\w-]*>")  # <answer>...</answer>: markup, not a comparison


# Struck-out text (<del>, <s>, <strike>, ~~...~~) is withdrawn: it is replaced by STRUCK, never read as a value.
STRUCK = " [struck out] "
_STRIKE = re.compile(r"(?is)<(del|s|strike)>.*?</\1>|~~(?=\S)[^~\n]+?(?<=\S)~~")
# Markdown emphasis and code spans around an answer are presentation ("**Answer: 5**", "*5*", "`5`"), and "\$5" is an
# escaped currency sign: none is part of the value. "**" between two word characters ("2**3") is kept.
_MARKDOWN = (
    (re.compile(r"(?<!\w)(?:\*\*|__)|(?:\*\*|__)(?!\w)"), ""),
    (re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])"), r"\1"),
    (re.compile(r"`+"), ""),
    (re.compile(r"\\\$"), " "),
)


def plain_text(text: str) -> str:
    """`text` with HTML entities decoded ("&ge;" is a "≥"), struck-out text withdrawn, tags and Markdown emphasis
    dropped: what a reader sees."""
    text = _STRIKE.sub(STRUCK, html.unescape(text))
    text = _TAG.sub(" ", text)
    for pattern, repl in _MARKDOWN:
        text = pattern.sub(repl, text)
    return text


def committed_text(completion: str) -> str:
    """The part of `completion` a verifier reads (after a leading reasoning block), look-alikes folded, digits of any
    script written as ASCII, entities, tags, struck-out text and Markdown emphasis gone (plain_text)."""
    answer = _OVERLAID.sub(STRUCK, split_reasoning(completion).answer)  # "5\u0338": a struck-out 5
    return value_phrases(asides(plain_text(fraction_slash(ascii_digits(fold_lookalikes(answer))))))


_OVERLAID = re.compile(f"\\S[{STRIKE_OVERLAYS}]+")
# Asides are no answer statements: a code comment ("x = 6  # the answer is 5", "// ...", "  % ..."), an HTML comment,
# a Markdown footnote ("^[...]") and a parenthetical ("6 (the answer is 5)"). Their answer words are masked, so none
# is the final statement; their values stay, so one that disagrees is still a second value.
_ASIDE = re.compile(
    r"<!--[\s\S]*?(?:-->|\Z)|/\*[\s\S]*?(?:\*/|\Z)|\^\[[^\]]*\]?|\([^()]*\)|\[[^\[\]]*\]|"
    r"(?m:(?<=\S)[ \t]+(?:#|//|--)[ \t].*$|(?:[ \t]{2,}|^)%.*$)"
)
_ANSWER_WORD = re.compile(r"(?i)\b(?:final\s+)?answer\b|\\(?:boxed|fbox)\b")


def asides(text: str) -> str:
    """`text` with the answer words in its asides (comments, footnotes, parentheticals) masked as "aside"."""

    def mask(m: re.Match) -> str:
        words = _ANSWER_WORD if not m.group().startswith(("(", "[")) else _ANSWER_ONLY  # "($\\boxed{5}$)" stays a box
        return words.sub("aside", m.group())

    return _ASIDE.sub(mask, text)


_ANSWER_ONLY = re.compile(r"(?i)\b(?:final\s+)?answer\b")


_NUMBER_WORDS = {w: i for i, w in enumerate(_WORDS)} | _TENS
_NUMBER_WORD = rf"(?:{'|'.join(_TENS)})(?:[- ](?:{'|'.join(_WORDS[1:10])}))?|{'|'.join(_WORDS)}"
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12, "k": 10**3, "M": 10**6}
# A value written in words where a statement states it: after "answer is", "is", "=", ":" or in a \text{} ("five").
_LEAD = r"(?:\banswer\s*(?:is\b|[:=])|\b(?:is|equals|are|was|be)\b|[=:]|\\boxed\{|\\text\{)\s*"
_WORDED = re.compile(
    rf"(?im)(?P<lead>{_LEAD})(?P<sign>(?:negative|minus)\s+)?(?P<n>{_NUMBER_WORD})\b"
    rf"(?![- ]?(?:{'|'.join(_WORDS[1:10])})\b)(?=\s*(?:[.,;!?}}]|$))"
)
_SIGNED = re.compile(rf"(?i)(?P<lead>{_LEAD})(?:negative|minus)\s+(?=\$?\d)(?P<dollar>\$?)")
_SCALED = re.compile(r"(?<![\w.,])(?P<n>\d+(?:\.\d+)?)(?:\s+(?P<w>thousand|million|billion|trillion)\b|(?P<s>k|M)\b)")
# "101_2", "12_{3}", "5_{10}": a numeral with its base (2 to 16) as a subscript is read in that base.
_BASED = re.compile(r"(?<![\w\\_^])(?P<n>[0-9A-Fa-f]+)_\{?(?P<b>\d+)\}?(?![\w{])")


def _word_value(words: str) -> int:
    parts = re.split(r"[- ]", words.lower())
    return sum(_NUMBER_WORDS[p] for p in parts)


def _based(m: re.Match) -> str:
    base = int(m["b"])
    try:
        return str(int(m["n"], base)) if 2 <= base <= 16 else m.group()
    except ValueError:
        return m.group()


def value_phrases(text: str) -> str:
    """`text` with value phrases written as the value they name: "negative five" is -5, "minus 5" after a statement's
    lead is -5, "5 thousand" and "5k" are 5000, "101_2" is 5, "\\text{five}" is 5. Anything else next to a value that
    changes it ("5 over 2", "5 squared") is left as written, for math_commitment to reject."""

    def worded(m: re.Match) -> str:
        sign = "-" if m["sign"] else ""
        return f"{m['lead']}{sign}{_word_value(m['n'])}"

    text = _WORDED.sub(worded, text)
    text = _SIGNED.sub(lambda m: f"{m['lead']}{m['dollar']}-", text)

    def scaled(m: re.Match) -> str:
        value = Decimal(m["n"]) * _SCALES[m["w"].lower() if m["w"] else m["s"]]
        return format(value.normalize(), "f")

    text = _SCALED.sub(scaled, text)

    def scientific(m: re.Match) -> str:  # "5 × 10^3" in prose is $5 \times 10^{3}$, as a grader reads it
        value = f"{m['n']} \\times 10^{{{m['e']}}}"
        return value if text.count("$", 0, m.start()) % 2 else f"${value}$"

    text = _SCIENTIFIC_PROSE.sub(scientific, text)
    text = _REPEATING.sub(_repeating, text)  # "0.\\overline{3}" is 1/3
    return _BASED.sub(_based, text)


_REPEATING = re.compile(r"(?<![\d.])(?P<i>\d*)\.(?P<f>\d*)\\overline\{(?P<r>\d{1,12})\}")


def _repeating(m: re.Match) -> str:
    shift = 10 ** len(m["f"])
    value = Fraction(int(m["i"] or 0)) + Fraction(int(m["f"] or 0), shift)
    value += Fraction(int(m["r"]), (10 ** len(m["r"]) - 1) * shift)
    return f"\\frac{{{value.numerator}}}{{{value.denominator}}}" if value.denominator > 1 else str(value.numerator)


_SCIENTIFIC_PROSE = re.compile(
    r"(?<![\w.^\\])(?P<n>-?\d+(?:\.\d+)?)\s*(?:×|\\times|\*|·|\\cdot)\s*10\^\{?(?P<e>[+-]?\d+)\}?(?![\w.]\d)"
)


def boxes(text: str) -> list[tuple[int, int, int, int]]:
    """(start, content start, content end, end) of every balanced \\boxed{...} / \\fbox{...}, in order."""
    found = []
    for match in BOX.finditer(text):
        depth = 1
        for i in range(match.end(), len(text)):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                found.append((match.start(), match.end(), i, i + 1))
                break
    return [b for b in found if not any(o[0] < b[0] < o[3] for o in found)]  # a box inside a box is part of it


_NOT_THE_ANSWER = re.compile(r"(?i)\b(?:wrong|incorrect|mistaken|false|bad|common|typical|tempting)\s+$")


def final_site(text: str) -> Site | None:
    """The last answer statement, up to any aside in it (_before_aside); see _final_site."""
    return _before_aside(text, _final_site(text))


def _final_site(text: str) -> Site | None:
    """The last answer statement: the last \\boxed{} or "answer is", whichever comes later (a box inside the "answer
    is" sentence is the answer), else the last line that holds a number or LaTeX. A valueless "answer is" gives way to
    the last later line that states a result."""
    candidates = []
    found = boxes(text)
    if found:
        start, inner, inner_end, end = found[-1]
        candidates.append(Site("boxed", inner, inner_end, start, end, start))
    # "Common wrong answer: 6" names a mistake, not the answer
    anchors = [
        a for a in ANSWER_IS.finditer(text) if not _NOT_THE_ANSWER.search(text[max(0, a.start() - 30) : a.start()])
    ]
    if anchors:
        a = anchors[-1]
        candidates.append(Site("answer_is", a.start("answer"), a.end("answer"), a.start("answer"), a.end(), a.start()))
    if candidates:
        site = max(candidates, key=lambda s: (s.outer_start, s.where == "boxed"))
        if site.where == "answer_is" and valueless(text[site.start : site.end]):
            # "The answer is a math problem. 70 + 81 equals 151.": an "answer is" that holds no value is no answer
            # statement; the last later statement that states a result is
            stop = _SENTENCE_END.search(text, site.end)
            later = _last_line(text, stop.end() if stop else len(text), stating_only=True)
            if later:
                return later
        return site
    return _last_line(text, 0)


def _before_aside(text: str, site: Site | None) -> Site | None:
    """`site` ending where an aside in it starts ("x = 6  # the answer is 5" states 6) when a value comes before it."""
    if site is None or site.where == "boxed":
        return site
    for aside in _ASIDE.finditer(text, site.start, site.end):
        if re.search(r"\d", text[site.start : aside.start()]):
            end = len(text[site.start : aside.start()].rstrip()) + site.start
            return Site(site.where, site.start, end, site.outer_start, min(site.outer_end, end), site.anchor)
    return site


def valueless(answer: str) -> bool:
    """An "answer is" that states no value and no lack of one ("a math problem", not "5", "none" or "unknown")."""
    if re.search(r"\d|\\|\$", answer) or _WORD_NUMBER.search(answer) or _CJK_NUMBER.search(answer):
        return False
    return not _NO_VALUE.search(answer)


# Words by which an "answer is" states a value or the lack of one: it stays the answer statement.
_NO_VALUE = re.compile(
    r"(?i)\b(?:no|not|none|nothing|never|undefined|unknown|unclear|uncertain|unsure|impossible|indeterminate|infinit\w*|"
    r"empty|cannot|can't|depends?|either|or|maybe|perhaps|probably|guess|between|range|more|less|true|false|yes|"
    r"zero|one|pi|dne|nan)\b|n't\b|[A-Za-z]\s*=|^\W*[A-Za-z]\W*$"
)


def _last_line(text: str, floor: int, stating_only: bool = False) -> Site | None:
    """The last line (from `floor`) that states a result, else (unless `stating_only`) the last that holds math."""
    offset = floor
    lines = []
    for line in text[floor:].splitlines(keepends=True):
        lines.append((offset, offset + len(line.rstrip("\r\n")), line))
        offset += len(line)
    with_math = [(start, end, line) for start, end, line in lines if re.search(r"\d|\\[A-Za-z]", line)]
    # trailing chatter ("Checked with 3 test cases", "— Page 6") states no result: the last line that does decides
    stating = [found for found in with_math if _STATES_RESULT.search(found[2]) and not CHECK.match(found[2])]
    for start, end, line in (stating if stating_only else stating or with_math)[-1:]:
        lead = len(line) - len(line.lstrip())
        return Site("last_line", start + lead, end, start + lead, end, start + lead)
    return None


# A check of the answer ("Check: 2(5) + 4 = 14") restates the question's equation; it is no result of its own.
CHECK = re.compile(r"(?i)\W*(?:(?:double-?|re-?)?check|verif|sanity|indeed|as\s+a\s+check)")
# A line that states a result: an equation, a copula, or an answer word ("x = 5", "There are 5 ways", "Total: 5").
_STATES_RESULT = re.compile(
    r"(?i)=|\b(?:is|are|was|were|equals?|answer|result|gives?)\b|\btotal\s*[:=]|^\W*-?\d[\d.,/]*\W*$"
)


def unpercent(content: str) -> str:
    """A box's content with a closing percent sign dropped: math-verify reads "$25\\%$" as 25 but "\\boxed{25\\%}" as
    no math at all, so a percentage is read in a box as it is read anywhere else."""
    return re.sub(r"\s*\\?%\s*$", "", content)


def site_snippet(text: str, site: Site) -> str:
    """What math-verify parses for the site: the box alone, the "answer is" sentence from its anchor, the line."""
    if site.where == "boxed":
        return f"$\\boxed{{{unpercent(text[site.start : site.end])}}}$"
    statement = text[site.anchor : site.end]
    exact = _RESTATED.split(statement, maxsplit=1)[0]  # "$\\frac{1}{3}$, approximately 0.333": the exact value
    return exact if re.search(r"\d", exact) else statement


# An approximation after the value restates it; the value before it is the answer.
_RESTATED = re.compile(r"(?i)[,;(]\s*(?:approximately|approx\.?|roughly|about|≈|\\approx)\s")


def sentence(text: str, site: Site) -> tuple[int, int]:
    """The span of the sentence (or line) that holds the site, at most WINDOW characters either side of it."""
    ends = [m.end() for m in _SENTENCE_END.finditer(text, 0, site.outer_start)]
    stop = _SENTENCE_END.search(text, site.outer_end)
    lo, hi = (ends[-1] if ends else 0), (stop.end() if stop else len(text))
    return max(lo, site.outer_start - WINDOW), min(hi, site.outer_end + WINDOW)


def tokens(text: str, lo: int, hi: int, words: bool = False) -> list[tuple[int, int, str]]:
    """Values between lo and hi: boxes (their content), $...$ spans, then bare numbers outside both; with `words`
    also number words from two up ("one" is as often a pronoun), CJK digits and Roman numerals."""
    found = [(b[0], b[3], text[b[1] : b[2]]) for b in boxes(text) if lo <= b[0] and b[3] <= hi]
    for m in MATH_SPAN.finditer(text, lo, hi):
        if not any(s < m.end() and m.start() < e for s, e, _ in found):
            found.append((m.start(), m.end(), m.group("m") or m.group("p")))
    for pattern in (
        _LATEX_VALUE,
        _PERCENT,
        _TOKEN_NUMBER,
        *([_DOZEN, _WORD_NUMBER, _CJK_NUMBER, _ROMAN] if words else []),
    ):
        for m in pattern.finditer(text, lo, hi):
            inside_word = text[m.start() - 1 : m.start()].isalpha() and text[m.end() : m.end() + 1].isalpha()  # n0t
            if not inside_word and not any(s <= m.start() < e for s, e, _ in found):
                value = m.group()
                if pattern is _PERCENT:  # 25% is 1/4
                    value = f"{m.group('n')}/100"
                elif pattern is _DOZEN:
                    value = "6" if value.lower().startswith("half") else "12"
                elif pattern is _CJK_NUMBER:
                    value = str(_CJK.index(value))
                elif pattern is _ROMAN:
                    value = str(_roman(value))
                elif pattern is _WORD_NUMBER:  # "Actually six." states a value too
                    value = str(
                        _WORDS.index(m.group().lower()) if m.group().lower() in _WORDS else _TENS[m.group().lower()]
                    )
                found.append((m.start(), m.end(), value))
    return sorted(found)


def committed_token(text: str, site: Site, found: list, is_answer=None) -> tuple[int, int, str] | None:
    """The token the statement commits to: the box; else the last token of the statement that holds the value read
    as the answer (`is_answer(token text)`: math-verify's reading of the statement); else the value after the last "="
    of the statement; else its first."""
    inside = [t for t in found if site.outer_start <= t[0] and t[1] <= max(site.outer_end, site.end)]
    if site.where == "boxed" or not inside:
        return next((t for t in found if t[0] == site.outer_start), inside[0] if inside else None)
    read = [t for t in inside[-WINDOW_TOKENS:] if is_answer(t[2])] if is_answer is not None else []
    if read:
        return read[-1]
    equals = text.rfind("=", site.start, site.end)
    after = [t for t in inside if t[0] > equals] if equals >= 0 else inside
    return after[0] if after else inside[-1]


def empty(value: str) -> bool:
    """Whether a box holds nothing: only spacing, braces, empty \\text{} / \\phantom{}, or a placeholder (?, ...)."""
    bare = re.sub(r"\\(?:text|mathrm|phantom|hphantom)\{\s*\}|\\(?:quad|qquad|[ ,;:!]|ldots|dots|cdots)", "", value)
    return not re.sub(r"[\s${}~?._…]", "", bare)


def _square(n: int) -> bool:
    return n < 10**12 and round(n**0.5) ** 2 == n


# Calculus written out ("\\int_0^1 ...", "\\sum_{i=1}^{2} i", "\\lim") is a computation, not its value; math-verify
# may spend its whole time bound on it, so it is recognised from the text before anything is parsed.
CALCULUS = re.compile(r"\\(?:i{1,3}nt|oint|sum|prod|lim)(?![A-Za-z])")
# Functions of numerals a grader expects evaluated: "\\max(5, 6)", "\\gcd(10, 15)", "\\log_2 32", "|-5|", "\\lfloor 5.5
# \\rfloor", "\\operatorname{lcm}(1,5)". With one of them, commas and subscripts belong to the computation.
_FUNCTION = re.compile(
    r"\\(?:max|min|gcd|lcm|log|ln|lg|exp|[lr]floor|[lr]ceil|(?:operatorname|mathrm|text)\{[A-Za-z]+\})(?![A-Za-z])|\\?\|"
)


def unevaluated(value: str) -> bool:
    """Whether `value` is arithmetic on numerals left undone ("77 - 45", "2^{10}", "\\binom{5}{2}", "\\sqrt{1024}",
    "\\gcd(10, 15)", "\\log_2 32", an integral), not a result. The root of a number that is no perfect square is a
    closed form ("\\sqrt{8}")."""
    if CALCULUS.search(value):
        return True
    bare = re.sub(r"\\(?:left|right|,|!|;|\s)|\s|\$", "", value.split("=")[-1])
    functions = _FUNCTION.search(bare)
    bare = _FUNCTION.sub("(", bare)  # a function of numerals is arithmetic on them
    if functions:
        bare = re.sub(r"[,_]", "+", bare)
    bare = re.sub(r"\\[dt]?frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", bare)
    bare = re.sub(r"\\[dt]?binom\{(\d+)\}\{(\d+)\}", r"(\1)!/(\2)!", bare)
    bare = re.sub(r"\\sqrt\{(\d+)\}", lambda m: f"({m[1]})^(1/2)" if _square(int(m[1])) else m[0], bare)
    bare = re.sub(r"\\(?:times|cdot|ast)", "*", bare).replace("\\div", "/").replace("×", "*").replace("÷", "/")
    bare = bare.replace("·", "*")
    while re.fullmatch(r"\{[^{}]*\}", bare):  # "{5}": braces that only group
        bare = bare[1:-1]
    literal = (_LITERAL.fullmatch(bare) or _SCIENTIFIC.fullmatch(bare)) and not functions
    return bool(_ARITH.fullmatch(bare)) and bool(re.search(r"\d", bare)) and not literal
