"""Where a math completion commits to its final answer, and whether that answer commits to one value (pure).

The final committed answer is read the way a grader reads it: in the text after any leading reasoning block
(reasoning.py), with look-alike characters folded (text_normalize.py), the last answer statement (the last
\\boxed{}, the last "answer is", or else the last line that holds math) decides. It does not count as an answer when
the text after it retracts it ("but 5 is wrong", "Actually 6.", a recomputation that ends "= 8"), when it is negated
("not 5", "anything but 5"), a range ("at least 5", "5 or greater", "between 5 and 6"), several values ("5 and 6",
"5; 6; 7", "5 (or 6 if ...)", "5, although 6 is also plausible"), an empty \\boxed{}, or the question's own arithmetic
left unevaluated ("77 - 45" is no result for "what is 77 - 45").

Values are compared by the caller's `differ(a_text, b_text)` (math-verify), so this module holds no math library.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass

from rewardmill.transforms.labelers.reasoning import split_reasoning
from rewardmill.transforms.labelers.text_normalize import fold_lookalikes

# "The answer is 12.", "Final answer: $\frac{1}{2}$", "answer = 7": the answer runs to the end of its sentence
# (a full stop before a space or the end; "3.5" keeps its decimal point) or line.
ANSWER_IS = re.compile(r"(?i)\banswer\b\s*(?:is\b|[:=])\s*:?\s*(?P<answer>[^\n]{1,200}?)(?=\.\s|\.?$|\n)", re.M)
BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
# 1,000,000 | -3.5 | 3/4 | 42 — thousand separators only in groups of three, so "1,2,3" is three numbers.
NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s*/\s*\d+)?(?![\w])")
_LATEX_VALUE = re.compile(
    r"-?\d*(?:\\[dt]?frac\{[^{}]*\}\{[^{}]*\}|\\sqrt(?:\[[^\]]*\])?\{[^{}]*\}|\\pi\b)(?:\^\{?[^{}\s]*\}?)?"
)
_PERCENT = re.compile(r"(?<![\w.])(?P<n>-?\d+(?:\.\d+)?)\s*\\?%")
_WORDS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen \
seventeen eighteen nineteen".split()
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_WORD_NUMBER = re.compile(rf"(?i)\b(?:{'|'.join(_WORDS[2:] + list(_TENS))})\b")
_MATH_SPAN = re.compile(r"\$\$?(?P<m>[^$]+?)\$\$?|\\\((?P<p>.+?)\\\)")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n")

_NEGATION = re.compile(
    r"(?i)(?:\bn[o0]t|n't|\bnever|\b(?:anything|everything|all|any\s+\w+)\s+but|\banything\s+other\s+than|\bother\s+than|\bexcept(?:\s+for)?|"
    r"\bexcluding|\\neq?\b|\\not\s*=|≠|!=)\s*(?:(?:equal|equals|equal\s+to|be|to)\s+)*[\s$({}*_~`]*(?:\\boxed\s*\{)?\s*$"
)
_RANGE_BEFORE = re.compile(
    r"(?i)(?:\bat\s+(?:least|most)|\bno\s+(?:more|less|fewer)\s+than|\b(?:more|less|fewer|greater|smaller|larger|"
    r"bigger|higher|lower)\s+than|\b(?:a\s+)?(?:minimum|maximum)\s+of|\bover|\bunder|\babove|\bbelow|\bup\s+to|\bupwards\s+of|\bbetween|\bexceed(?:s|ing)?|"
    r"\\geq?\b|\\leq?\b|\\geqslant|\\leqslant|\\gt\b|\\lt\b|[≥≤<>]|\\pm\b|±)\s*[\s$({}*_~`]*(?:\\boxed\s*\{)?\s*$"
)
_RANGE_AFTER = re.compile(
    r"(?i)^[\s}$)]*(?:\+(?![\s$]*\d)|or\s+(?:more|greater|higher|larger|bigger|above|over|less|fewer|lower|smaller|"
    r"below|under|so)\b|and\s+(?:up|above|over|higher|below|under|beyond)\b|to\s+\$?-?\d|at\s+(?:least|most)\b|(?:at\s+(?:the\s+)?)?(?:minimum|maximum)\b|"
    r"\\(?:leq?|geq?|pm)\b|[≤≥<>±])"
)
# Words that join alternatives, and words that make what follows an explanation, a check or a rejected value. A
# strong alternative ("or", "maybe") is cancelled only by a strong explanation ("so", "since", "answer", "not"); a weak
# one ("and", ",") also by a weak one ("is", "=", "of"): "5 and the remainder is 2" is one answer, "5, or is it 6" two.
_STRONG_ALTERNATIVE = re.compile(
    r"(?i)\bor\b|\bmaybe\b|\bperhaps\b|\bpossibly\b|\balthough\b|\bthough\b|\balternatively\b|\beither\b|\balso\b|"
    r"\bmight\b|\bcould\b|\bplausibl|\bvs\b|\bversus\b|\botherwise\b|\bnor\b|\s\|\s|\\(?:lor|vee)\b"
)
_WEAK_ALTERNATIVE = re.compile(r"(?i)\band\b|[;,(&]|\bbut\b")
_STRONG_EXPLANATION = re.compile(
    r"(?i)\banswer\b|\bso\b|\btherefore\b|\bthus\b|\bhence\b|\bbecause\b|\bsince\b|\bwhich\b|\bwhere\b|\bgives?\b|"
    r"\bequals?\b|\bwrong\b|\bincorrect\b|\bnot\b|\bmeans?\b"
)
_WEAK_EXPLANATION = re.compile(
    r"(?i)=|\bfrom\b|\bof\b|\btimes\b|\bplus\b|\bminus\b|\bthat\b|\bthen\b|\bwith\b|\bget\b|\bgot\b|\bleaves?\b|"
    r"\bis\b|\bare\b"
)
_OPENS_ALTERNATIVE = re.compile(r"(?i)\s*(?:or|maybe|perhaps|possibly)\b[^\n]*?(?:[.!?](?=\s|$)|\n|$)")
_FILLER = re.compile(r"(?i)[\s.!:$]|\b(?:so|final|thus|hence|result|it's|it\s+is|final\s+answer)\b")
# After the final answer: a phrase that offers another value ("It could also be 6.").
_OFFERS = re.compile(
    r"(?i)\b(?:could|might|may)\s+(?:also\s+)?be\b|\b(?:or\s+)?(?:maybe|perhaps|possibly)\b|\balternatively\b|^\s*or\b"
)
# A later sentence that takes the answer back outright, and words that announce a changed value.
_RETRACT = re.compile(
    r"(?i)(?<!common )(?<!typical )(?:\bwrong\b|\bincorrect\b|\bmistaken?\b)|"
    r"\bnot\s+(?:right|correct|the\s+(?:right\s+|correct\s+|final\s+)?answer)\b|\bnope\b|(?:^|[.!?]\s|\n)\s*no\s*[.!]|"
    r"\bscratch\s+that\b|\bdisregard\b|\bignore\s+(?:that|this|it|the\s+above)\b|\bretract"
)
_CHANGE = re.compile(
    r"(?i)\bactually\b|\bwait\b|\bhmm+\b|\boops\b|\bno,|\bcorrection\b|\bon\s+second\s+thought\b|\brecomput\w*|"
    r"\brecalculat\w*|\bredo\w*|\bre-do\w*|\binstead\b(?!\s+of)|\brevis\w*|\bi\s+mean\b|\bshould\s+(?:be|have\s+been)\b|"
    r"\bmust\s+be\b|\bin\s+fact\b|\bturns\s+out\b|\bthe\s+real\b|\bupdat\w*"
)
# Arithmetic on plain numerals ("77 - 45", "2^{10}", "3 \times 4", "5!") once LaTeX spacing is gone; a single
# number or fraction of two integers ("\frac{10}{2}", "-1/3") is a literal value, not a computation left undone.
_ARITH = re.compile(r"[\d.()\[\]{}+\-*/^!]+")
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


_TAG = re.compile(r"</?[A-Za-z][\w-]*>")  # <answer>...</answer>: markup, not a comparison


def committed_text(completion: str) -> str:
    """The part of `completion` a verifier reads (after a leading reasoning block), look-alikes folded, tags gone."""
    return _TAG.sub(" ", fold_lookalikes(split_reasoning(completion).answer))


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


def final_site(text: str) -> Site | None:
    """The last answer statement: the last \\boxed{} or "answer is", whichever comes later (a box inside the "answer
    is" sentence is the answer), else the last line that holds a number or LaTeX."""
    candidates = []
    found = boxes(text)
    if found:
        start, inner, inner_end, end = found[-1]
        candidates.append(Site("boxed", inner, inner_end, start, end, start))
    anchors = list(ANSWER_IS.finditer(text))
    if anchors:
        a = anchors[-1]
        candidates.append(Site("answer_is", a.start("answer"), a.end("answer"), a.start("answer"), a.end(), a.start()))
    if candidates:
        return max(candidates, key=lambda s: (s.outer_start, s.where == "boxed"))
    offset = 0
    lines = []
    for line in text.splitlines(keepends=True):
        lines.append((offset, offset + len(line.rstrip("\r\n")), line))
        offset += len(line)
    for start, end, line in reversed(lines):
        if re.search(r"\d|\\[A-Za-z]", line):
            lead = len(line) - len(line.lstrip())
            return Site("last_line", start + lead, end, start + lead, end, start + lead)
    return None


def site_snippet(text: str, site: Site) -> str:
    """What math-verify parses for the site: the box alone, the "answer is" sentence from its anchor, the line."""
    if site.where == "boxed":
        return f"$\\boxed{{{text[site.start : site.end]}}}$"
    return text[site.anchor : site.end]


def _sentence(text: str, site: Site) -> tuple[int, int]:
    ends = [m.end() for m in _SENTENCE_END.finditer(text, 0, site.outer_start)]
    stop = _SENTENCE_END.search(text, site.outer_end)
    return (ends[-1] if ends else 0), (stop.end() if stop else len(text))


def _tokens(text: str, lo: int, hi: int, words: bool = False) -> list[tuple[int, int, str]]:
    """Values between lo and hi: boxes (their content), $...$ spans, then bare numbers outside both; with `words`
    also number words from two up ("one" is as often a pronoun)."""
    found = [(b[0], b[3], text[b[1] : b[2]]) for b in boxes(text) if lo <= b[0] and b[3] <= hi]
    for m in _MATH_SPAN.finditer(text, lo, hi):
        if not any(s < m.end() and m.start() < e for s, e, _ in found):
            found.append((m.start(), m.end(), m.group("m") or m.group("p")))
    for pattern in (_LATEX_VALUE, _PERCENT, NUMBER, *([_WORD_NUMBER] if words else [])):
        for m in pattern.finditer(text, lo, hi):
            if not any(s <= m.start() < e for s, e, _ in found):
                value = m.group()
                if pattern is _PERCENT:  # 25% is 1/4
                    value = f"{m.group('n')}/100"
                elif pattern is _WORD_NUMBER:  # "Actually six." states a value too
                    value = str(
                        _WORDS.index(m.group().lower()) if m.group().lower() in _WORDS else _TENS[m.group().lower()]
                    )
                found.append((m.start(), m.end(), value))
    return sorted(found)


def _committed(text: str, site: Site, tokens: list) -> tuple[int, int, str] | None:
    """The token the statement commits to: the box; else the value after the last "=" of the answer; else the first."""
    inside = [t for t in tokens if site.outer_start <= t[0] and t[1] <= max(site.outer_end, site.end)]
    if site.where == "boxed" or not inside:
        return next((t for t in tokens if t[0] == site.outer_start), inside[0] if inside else None)
    equals = text.rfind("=", site.start, site.end)
    after = [t for t in inside if t[0] > equals] if equals >= 0 else inside
    return after[0] if after else inside[-1]


def empty(value: str) -> bool:
    """Whether a box holds nothing: only spacing, braces, empty \\text{} / \\phantom{}, or a placeholder (?, ...)."""
    bare = re.sub(r"\\(?:text|mathrm|phantom|hphantom)\{\s*\}|\\(?:quad|qquad|[ ,;:!]|ldots|dots|cdots)", "", value)
    return not re.sub(r"[\s${}~?._…]", "", bare)


def unevaluated(value: str) -> bool:
    """Whether `value` is arithmetic on numerals left undone ("77 - 45", "2^{10}"), not a result."""
    bare = re.sub(r"\\(?:left|right|,|!|;|\s)|\s|\$", "", value.split("=")[-1])
    bare = re.sub(r"\\[dt]?frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", bare)
    bare = re.sub(r"\\(?:times|cdot|ast)", "*", bare).replace("\\div", "/").replace("×", "*").replace("÷", "/")
    bare = bare.replace("·", "*")
    return bool(_ARITH.fullmatch(bare)) and bool(re.search(r"\d", bare)) and not _LITERAL.fullmatch(bare)


def flaw(
    text: str,
    site: Site,
    differ: Callable[[str, str], bool],
    hedges: bool = True,
    single_valued: bool = True,
) -> str | None:
    """Why the final answer at `site` is no committed answer, or None. `differ(a, b)`: the two values are not equal.
    `hedges`: look for several values (the `hedge: reject` policy). `single_valued`: the reference is one value, so a
    negation, a range or a list cannot be how the completion writes it."""
    if site.where == "boxed" and empty(text[site.start : site.end]):
        return "empty: the final \\boxed{} holds no answer"
    lo, hi = _sentence(text, site)
    tokens = _tokens(text, lo, hi)
    mine = _committed(text, site, tokens)
    if mine is None:
        return None
    retracted = _retraction(text, site, hi, mine, differ)
    if retracted:
        return retracted
    shown = text[lo:hi].strip()[:120]
    if single_valued:
        inner = mine[2] if text[mine[0] : mine[1]] != mine[2] else ""  # a box's or a $...$ span's own text
        lead = re.split(r"\d", inner, maxsplit=1)[0]
        before, after = text[lo : mine[0]], text[mine[1] : hi]
        if _NEGATION.search(before) or _NEGATION.search(lead):
            return f"negation: the final answer negates its value ({shown!r})"
        between = re.search(r"(?i)\bbetween\b[^.;]*$", before) and re.match(r"(?i)^[\s}$)]*and\s+\$?-?\d", after)
        if _RANGE_BEFORE.search(before) or _RANGE_BEFORE.search(lead) or _RANGE_AFTER.match(after) or between:
            return f"range: the final answer is a range, not a value ({shown!r})"
    if hedges and single_valued:
        # "The answer is 12. Or maybe 13.": a next sentence that opens with an alternative belongs to the answer
        more = _OPENS_ALTERNATIVE.match(text, hi)
        wide = _tokens(text, lo, more.end()) if more else tokens
        return _alternatives(text, wide, mine, differ, hi) or _two_answers(text, site, differ)
    return None


def _retraction(text: str, site: Site, hi: int, mine, differ) -> str | None:
    """The text after the final answer takes it back: says it is wrong, or announces a change and states another
    value, or ends on a computation of another value that does not use the answer."""
    after = text[mine[1] :]
    said = _RETRACT.search(after) or _RETRACT.search(re.sub(r"\\text\{([^{}]*)\}", r" \1 ", mine[2]))
    if said:
        quote = said.string[max(0, said.start() - 40) : said.end() + 9]
        return f"retraction: after the final answer the text says {quote!r}"
    change = _CHANGE.search(after)
    if change:  # the value the changed text ends on
        later = _tokens(text, mine[1] + change.end(), len(text), words=True)
        if later and differ(mine[2], later[-1][2]):
            return f"retraction: {after[change.start() : change.start() + 80].strip()!r} follows the final answer"
    tail = text[hi:].strip()
    last = re.split(r"(?<=[.!?])\s+|\n", tail)[-1] if tail else ""
    ends = re.search(r"=\s*\$?\s*(-?[\d.,/]+)\s*\$?\s*[.!]?\s*$", last)
    if ends and not re.search(rf"(?<![\d.]){re.escape(mine[2].strip(' $'))}(?![\d.])", last[: ends.start()]):
        if differ(mine[2], ends.group(1)):
            return f"retraction: the text ends on another result after the final answer ({last[-80:]!r})"
    # the text ends on a line that is only another value ("\boxed{5}\n\n6", "So: 6.")
    bare = _tokens(last, 0, len(last))
    words = _FILLER.sub("", last[: bare[0][0]] + last[bare[0][1] :]) if len(bare) == 1 else "x"
    if not words and differ(mine[2], bare[0][2]):
        return f"retraction: the text ends on another value after the final answer ({last[-80:]!r})"
    return None


def _two_answers(text: str, site: Site, differ) -> str | None:
    """The last \\boxed{} and the last "answer is" state different values, and nothing between them takes the earlier
    one back ("So it is \\boxed{5}. The answer is 6.")."""
    value = text[site.start : site.end]
    if site.where == "last_line":  # a value on each of the last lines: "5\n6" is a list
        above = [line for line in text[: site.outer_start].splitlines() if line.strip()][-1:]
        alone = _tokens(above[0], 0, len(above[0])) if above else []
        if len(alone) == 1 and not _FILLER.sub("", above[0].replace(above[0][alone[0][0] : alone[0][1]], "")):
            if differ(value, alone[0][2]):
                return f"several values: lines {alone[0][2]} and {value.strip()[:60]}"
    earlier_boxes = [b for b in boxes(text) if b[3] <= site.outer_start]
    if site.where == "boxed" and earlier_boxes:  # boxes one after another: "\boxed{5}\n\\boxed{6}" is a list
        b = earlier_boxes[-1]
        if not re.sub(r"(?i)[\s$.,;:]|\b(?:or|and)\b", "", text[b[3] : site.outer_start]):
            if differ(value, text[b[1] : b[2]]):
                return f"several values: boxes {text[b[1] : b[2]].strip()[:60]} and {value.strip()[:60]}"
    if site.where == "answer_is":
        earlier = [(b[1], b[2], b[3]) for b in earlier_boxes]
    else:
        earlier = [(a.start("answer"), a.end("answer"), a.end()) for a in ANSWER_IS.finditer(text)]
        earlier = [e for e in earlier if e[1] <= site.outer_start]
    if not earlier:
        return None
    start, end, outer_end = earlier[-1]
    between = text[outer_end : site.outer_start]
    if _CHANGE.search(between) or _RETRACT.search(between):
        return None
    if differ(value, text[start:end]):
        return f"two different final answers: {text[start:end].strip()[:60]} then {value.strip()[:60]}"
    return None


def _joins_alternatives(between: str) -> bool:
    if _STRONG_EXPLANATION.search(between):
        return False
    return bool(
        _STRONG_ALTERNATIVE.search(between)
        or _WEAK_ALTERNATIVE.search(between)
        and not _WEAK_EXPLANATION.search(between)
    )


def _alternatives(text: str, tokens: list, mine, differ, hi: int) -> str | None:
    """Another value joined to the committed one as an alternative ("or", "and", ";", "although"), not explained
    by it ("since 3 x 4 = 12") or rejected ("5, not 6"); or a list inside the box itself."""
    if text[mine[0] : mine[1]] != mine[2]:  # a box or a $...$ span: a list inside it
        inner = re.sub(r"\\text\{([^{}]*)\}", r" \1 ", mine[2])
        parts = [p for p in re.split(r"(?i)\s*(?:\bor\b|\band\b|;|,(?!\d{3}))\s*", inner) if p.strip()]
        if len(parts) > 1 and any(differ(parts[0], p) for p in parts[1:]):
            return f"several values: the final answer lists {' | '.join(p.strip() for p in parts)}"
    for other in tokens:
        if other is mine:
            continue
        lo, hi = (other[1], mine[0]) if other[0] < mine[0] else (mine[1], other[0])
        between = text[lo:hi]
        if _joins_alternatives(between) and differ(mine[2], other[2]):
            return f"several values: the final answer offers {mine[2].strip()} and {other[2].strip()}"
    for offer in _OFFERS.finditer(text[hi:]):  # a later sentence offers another value: "It could also be 6."
        near = _tokens(text, hi + offer.end(), len(text))[:1]
        gap = text[hi + offer.end() : near[0][0]] if near else "x"
        if not re.sub(r"\\boxed|[\s${(:]", "", gap) and differ(mine[2], near[0][2]):
            return f"several values: {text[hi + offer.start() : near[0][1]].strip()!r} after the final answer"
    return None
