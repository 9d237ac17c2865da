"""Whether a math completion's final answer commits to one value (pure).

It does not when the text after it retracts it ("but 5 is wrong", "Actually 6.", a recomputation that ends "= 8"),
when it is negated ("not 5", "anything but 5"), a range ("at least 5", "5 or greater", "between 5 and 6"), several
values ("5 and 6", "5; 6; 7", "5 (or 6 if ...)", "5, although 6 is also plausible", a list of boxes), two different
final answers, or an empty \\boxed{}; when a later value is stated as the result ("\\boxed{5}. Erratum: 6", "I get
7": the last committed value decides); when it is someone else's or a supposition ("He said the answer is 5",
"Suppose the answer is 5"), or tentative ("probably 5", "\\approx 5", "5?"). Where the final answer is, and its
tokens, come from math_final.py; the operands an operation names ("add 6 and 4", "Add 4 to 4") are no alternatives to
its result; values are compared by the caller's `differ(a_text, b_text)` (math-verify), so this module holds no math
library.
"""

import re
from collections.abc import Callable

from rewardmill.transforms.labelers.math_final import (
    ANSWER_IS,
    CHECK,
    WINDOW,
    WINDOW_TOKENS,
    Site,
    boxes,
    committed_token,
    empty,
    sentence,
    tokens,
    valueless,
)

_NEGATION = re.compile(
    r"(?i)(?:\bn[o0]t|n't|\bnever|\b(?:anything|everything|all|any\s+\w+)\s+but|\banything\s+other\s+than|\bother\s+than|\bexcept(?:\s+for)?|"
    r"\bexcluding|\\neq?\b|\\not\s*(?:=|\\equiv)|\\n?equiv\b|\\neg|\\lnot|=/=|!==?|≠|≢)\s*(?:(?:equal|equals|equal\s+to|be|to)\s+)*"
    r"[\s$({}*_~`]*(?:[A-Za-z]\s*=\s*)?(?:\\boxed\s*\{)?\s*$"
)
_RANGE_BEFORE = re.compile(
    r"(?i)(?:\bat\s+(?:least|most)|\bno\s+(?:more|less|fewer)\s+than|\b(?:more|less|fewer|greater|smaller|larger|"
    r"bigger|higher|lower)\s+than|\b(?:a\s+)?(?:minimum|maximum)\s+of|\bover|\bunder|\babove|\bbelow|\bup\s+to|\bupwards\s+of|\bbetween|\bexceed(?:s|ing)?|\bat\s+the\s+(?:very\s+)?(?:least|most)|\b(?:minimum|maximum)|"
    r"\\geq?q?\b|\\leq?q?\b|\\geqslant|\\leqslant|\\gt\b|\\lt\b|\\[sp](?:ucc|rec)(?:eq)?\b|\\gtrsim|\\lesssim|[≥≤<>⩾⩽≳≲≧≦]|\\pm\b|±)\s*[\s$({}*_~`]*(?:\\boxed\s*\{)?\s*$"
)
_RANGE_AFTER = re.compile(
    r"(?i)^[\s}$)(]*(?:\+(?![\s$]*\d)|or\s+(?:more|greater|higher|larger|bigger|above|over|less|fewer|lower|smaller|"
    r"below|under|so)\b|and\s+(?:up|above|over|higher|below|under|beyond)\b|(?:up|on)wards?\b|\+\s*$|to\s+\$?-?\d|at\s+(?:least|most)\b|(?:at\s+(?:the\s+)?)?(?:minimum|maximum)\b|"
    r"\\(?:leq?|geq?|pm)\b|[≤≥<>±])"
)
# "between 5 and 6" around either end of the range
_BETWEEN_AFTER = re.compile(r"(?i)\bbetween\b[^.;]*$")
_AND_AFTER = re.compile(r"(?i)^[\s}$)]*and\s+\$?-?\d")
_BETWEEN_BEFORE = re.compile(r"(?i)\bbetween\s+\$?-?[\d.,/]+\$?\s+and\s*[\s$({]*$")
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
    r"\bscratch\s+that\b|\bdisregard\b|\bignore\s+(?:that|this|it|the\s+above)\b|\bretract|"
    r"\bis\s+(?:false|untrue|a\s+lie)\b"
)
_CHANGE = re.compile(
    r"(?i)\bactually\b|\bwait\b|\bhmm+\b|\boops\b|\bno,|\bcorrection\b|\bon\s+second\s+thought\b|\brecomput\w*|"
    r"\brecalculat\w*|\bredo\w*|\bre-do\w*|\binstead\b(?!\s+of)|\brevis\w*|\bi\s+mean\b|\bshould\s+(?:be|have\s+been)\b|"
    r"\bmust\s+be\b|\bin\s+fact\b|\bturns\s+out\b|\bthe\s+real\b|\bupdat\w*"
)

# A committed value is exact and stated as the completion's own: "probably 5", "roughly 5", "\\approx 5", "5?",
# "5-ish", "\\boxed{5 \\text{ (not sure)}}" commit to no exact value (an approximation of an exact answer is not that
# answer); "He said the answer is 5", "Suppose the answer is 5", "Common mistake: the answer is 5" are someone else's.
_TENTATIVE_BEFORE = re.compile(
    r"(?i)(?:\b(?:probably|likely|roughly|approximately|approx\.?|about|around|circa|presumably|maybe|perhaps|possibly)"
    r"|\\approx|\\sim|≈|~)\s*[\s$({]*(?:\\boxed\s*\{)?\s*$"
)
_TENTATIVE_AFTER = re.compile(
    r"(?i)^[\s}$)]*(?:-?ish\b|\?|\(?\s*(?:not\s+sure|unsure|uncertain|probably|approx\w*|roughly|maybe|perhaps|"
    r"I\s+think|I\s+guess|or\s+so)\b|is\s+(?:one|a)\s+possib|(?:is\s+)?(?:a\s+|my\s+)?(?:guess|estimate)\b)"
)
_ATTRIBUTED = re.compile(
    r"(?i)\b(?:claims?|claimed|said|says|(?<!I )(?<!we )think|thinks|thought|believes?|wrote|writes|suppose|supposing|"
    r"assume|assuming|if\s+(?:the\s+answer|it|x)\s+(?:were|was)|according\s+to|mistake|naive|not\s+the\s+case)\b"
)
_CLAUSE = re.compile(r",(?!\d{3})|[.!?](?=\s|$)|\n|;|\(|\)")
_SENTENCE = re.compile(r"[.!?](?=\s|$)|\n|;")
# A later value a reader takes as a new final answer: its clause names it as a result ("the value is 6", "I get 7",
# "it's 7 apples", "in which case 6", "\\boxed{5} \\to 7"), or it ends a clause of a few words ("Erratum: 6",
# "If not, 6."), or it is boxed. A value its sentence calls a mistake ("6 would be wrong", "the other root, -5, is
# rejected"), a number that names a thing ("Page 6", "Lemma 5"), an approximation ("approximately 0.333") or the
# result of a shown computation ("4 + 6 = 10") is none.
_LATER_CLAUSE = re.compile(
    r",(?!\d{3})|[.!?](?=\s|$)|\n|;|\(|\)|→|=>|\\(?:to|Rightarrow|implies|longrightarrow|mapsto)(?![A-Za-z])|"
    r"\\xrightarrow\{[^{}]*\}|\\q?quad(?![A-Za-z])|\s/\s"
)
_RESULT_CUE = re.compile(
    r"(?i)(?:\b(?:it|that|this|answer|result|value|solution|truth|total|number|count|[a-z])\s*(?:'s|is|are|was|be|"
    r"equals?|=)|\b(?:gives?|get|got|meant|becomes?|case|go\s+with)|:)\s*"
    r"(?:really\s+|actually\s+|just\s+|only\s+)?[\s$({]*(?:\\boxed\s*\{)?\s*$"
)
_DISCOUNT = re.compile(r"(?i)\bwrong\b|\bincorrect\b|\bmistak|\breject|\bextraneous\b|\binvalid\b|\bdiscard")
_REFERENCE_NOUN = re.compile(
    r"(?i)\b(?:page|pp?|lemma|theorem|section|figure|fig|eq|equation|step|chapter|table|problem|question|exercise|line|"
    r"part|example|appendix|item|rule|no)\.?\s*$|#\s*$"
)
_APPROX = re.compile(r"(?i)(?:\bapprox\w*|\babout|\broughly|\baround|\\approx|≈|~)\s*[\s$]*$")
# "twice 3", "half of 12", "3 more than": a value the statement computes with, not another answer
_OPERAND = re.compile(
    r"(?i)(?:\b(?:twice|thrice|times|half(?:\s+of)?|of|plus|minus|by|over|per|than|from|with|add|adding|subtract|"
    r"subtracting|multiply|multiplying|divide|dividing|take|taking|remove|removing|to\s+(?:get|obtain|reach))\s*[\s$]*|"
    r"[A-Za-z]\(|"
    r"[\d)}][ \t]*(?:[-+*/×·÷^]|\\times|\\cdot|\\div)[ \t]*)$"
)
_COMPUTED = re.compile(r"(?:[-+*/^×·÷]|\\times|\\cdot|\\div)[^=]*=\s*[\s$]*$")


def flaw(
    text: str,
    site: Site,
    differ: Callable[[str, str], bool],
    hedges: bool = True,
    single_valued: bool = True,
    extracted: str | None = None,
) -> str | None:
    """Why the final answer at `site` is no committed answer, or None. `differ(a, b)`: the two values are not equal.
    `hedges`: look for several values (the `hedge: reject` policy). `single_valued`: the reference is one value, so a
    negation, a range or a list cannot be how the completion writes it. `extracted`: the value read as the answer,
    so the statement is judged around the value that is scored."""
    if site.where == "boxed" and empty(text[site.start : site.end]):
        return "empty: the final \\boxed{} holds no answer"
    lo, hi = sentence(text, site)
    around = tokens(text, lo, hi, words=True)  # "5 or six" offers two values
    is_answer = (lambda token: not differ(token, extracted)) if extracted else None
    mine = committed_token(text, site, around, is_answer)
    if mine is None:
        return None
    retracted = _retraction(text, site, hi, mine, differ)
    if retracted:
        return retracted
    shown = text[lo:hi].strip()[:120]
    clause = [m.end() for m in _CLAUSE.finditer(text, lo, mine[0])]  # the clause that states the value
    stop = _CLAUSE.search(text, mine[1])
    if _ATTRIBUTED.search(text[clause[-1] if clause else lo : stop.start() if stop else hi]):
        return f"attribution: the final answer is stated as someone else's or a supposition ({shown!r})"
    if single_valued:
        inner = mine[2] if text[mine[0] : mine[1]] != mine[2] else ""  # a box's or a $...$ span's own text
        inner = re.sub(r"\\(?:text|textrm|mathrm)\{([^{}]*)\}", r" \1 ", inner)
        lead = re.split(r"\d", inner, maxsplit=1)[0]
        trail = re.sub(r"^\D*?\d[\d.,/]*", "", inner, count=1) if inner else ""
        before, after = text[lo : mine[0]], text[mine[1] : hi]
        exact = any(t[1] <= mine[0] and _near(t[2], mine[2]) for t in around)  # "1/3, approximately 0.333"
        tentative = _TENTATIVE_BEFORE.search(before) and not exact or _TENTATIVE_BEFORE.search(lead)
        if tentative or _TENTATIVE_AFTER.match(after) or _TENTATIVE_AFTER.match(trail):
            return f"tentative: the final answer is approximate or unsure, not a committed value ({shown!r})"
        if _NEGATION.search(before) or _NEGATION.search(lead):
            return f"negation: the final answer negates its value ({shown!r})"
        between = _BETWEEN_AFTER.search(before) and _AND_AFTER.match(after) or _BETWEEN_BEFORE.search(before)
        ranged = _RANGE_BEFORE.search(before) or _RANGE_BEFORE.search(lead) or between
        if ranged or _RANGE_AFTER.match(after) or _RANGE_AFTER.match(trail):
            return f"range: the final answer is a range, not a value ({shown!r})"
    if hedges and single_valued:
        # "The answer is 12. Or maybe 13.": a next sentence that opens with an alternative belongs to the answer
        more = _OPENS_ALTERNATIVE.match(text, hi)
        wide = tokens(text, lo, more.end(), words=True) if more else around
        several = _alternatives(text, wide, mine, differ, hi) or _two_answers(text, site, differ)
        if several:
            return several
    # "5 \times 10^3" is read whole; a plain number read from a longer phrase ("5 over 2") is not the phrase's value
    plain = extracted is not None and (re.fullmatch(r"[-\d.,/\s]*", extracted) or site.where == "boxed")
    modified = _modified(text, clause[-1] if clause else lo, mine, hi) if plain and single_valued else None
    if modified:
        return f"not a result: {modified!r} next to the final answer changes its value ({shown!r})"
    return _superseded(text, mine, differ, hedges)


# What may not stand next to the value a statement commits to: words and signs that change it ("5 over 2", "5 and a
# half", "5 squared", "5!.", "5i", "5π", "5^{-1}", "x + 5", "the square root of 5", "log 5"). Scale and sign words are
# read with the value before this (math_final.value_phrases: "5 thousand" is 5000, "minus 5" is -5), so one left here
# was not a plain value. Anything else may follow it: punctuation, units and the things counted ("5 apples", "5 cm").
_MODIFIES_AFTER = re.compile(
    r"(?i)(?:[0-9^_]|!(?=[^\s.!?,;:)]|[.!?,;:])|(?:i|j|e|n|x|y|z|pi)\b|π|\\(?:pi|i|times|cdot|div|frac)\b|"
    r"[ \t]*(?:[+*×÷·^]|/(?!/)|-[ \t]*[\d$\\(]|\\(?:times|cdot|div|pi)\b|π|"
    r"\b(?:over|point|squared|cubed|factorial|divided|times|plus|minus|and\s+(?:a\s+|one\s+)?(?:half|third|quarter|"
    r"fifth|[a-z]+ths?)|fewer|more|less|greater|smaller|hundred|thousand|million|billion|trillion|dozen|"
    r"(?:ten|hundred|thousand|million)(?:s|ths)|tenths|(?-i:M)|"
    r"to\s+the|raised|th|halves|thirds|quarters|root|percent(?:age)?\s+of|i|pi)\b))"
)
_MODIFIES_BEFORE = re.compile(
    r"(?i)(?:[+*/×÷·^]|\\(?:sqrt|log|ln|exp|sin|cos|tan|times|cdot|div)|"
    r"\b(?:negative|minus|plus|times|over|point|by|than|root\s+of|root|sqrt|log\w*(?:\s+of)?|ln|sin|cos|tan|exp|"
    r"(?:reciprocal|inverse|half|square|cube|factorial|power)\s+of|twice|double|triple|thrice))[\s$]*$"
)


def _modified(text: str, lead: int, mine, hi: int) -> str | None:
    """A word or sign next to the committed value (after the statement's lead, or up to its sentence's end) that
    changes it: the value is no plain result."""
    line_end = text.find("\n", mine[1], hi)
    after = _MODIFIES_AFTER.match(text, mine[1], line_end if line_end >= 0 else hi)
    if after:
        return after.group().strip() or text[mine[1] : mine[1] + 1]
    before = _MODIFIES_BEFORE.search(text, lead, mine[0])
    if before:
        return before.group().strip()
    inner = text[mine[0] : mine[1]]
    if inner.startswith("\\") and re.search(r"\d\s*_", inner):  # "\\boxed{5_{x}}": a subscript is no plain value
        return "_"
    if inner.startswith("\\") and text.startswith("!", mine[1]):  # "\\boxed{5}!" is a factorial
        return "!"
    return None


def _retraction(text: str, site: Site, hi: int, mine, differ) -> str | None:
    """The text after the final answer takes it back: says it is wrong, or announces a change and states another
    value, or ends on a computation of another value that does not use the answer."""
    after = text[mine[1] :]
    said = _RETRACT.search(re.sub(r"\\text\{([^{}]*)\}", r" \1 ", mine[2]))
    for word in [] if said else _RETRACT.finditer(after):  # the slice: "5wrong" is a word of its own
        lo, hi_ = _sentence_of(text, (mine[1] + word.start(), mine[1] + word.end()), floor=mine[1])
        named = tokens(text, lo, hi_, words=True)
        if named and all(differ(mine[2], t[2]) for t in named):  # "Note that 6 would be wrong": another value's
            continue
        said = word
        break
    if said:
        quote = said.string[max(0, said.start() - 40) : said.end() + 9]
        return f"retraction: after the final answer the text says {quote!r}"
    change = _CHANGE.search(after)
    if change:  # the value the changed text ends on
        later = tokens(text, max(mine[1] + change.end(), len(text) - WINDOW), len(text), words=True)
        if later and differ(mine[2], later[-1][2]):
            return f"retraction: {after[change.start() : change.start() + 80].strip()!r} follows the final answer"
    tail = text[max(hi, len(text) - WINDOW) :].strip()
    last = re.split(r"(?<=[.!?])\s+|\n", tail)[-1] if tail else ""
    ends = re.search(r"=\s*\$?\s*(-?[\d.,/]+)\s*\$?\s*[.!]?\s*$", last)
    if CHECK.match(last):  # "Check: 4 + 6 = 10" is no answer
        ends = None
    if ends and not re.search(rf"(?<![\d.]){re.escape(mine[2].strip(' $'))}(?![\d.])", last[: ends.start()]):
        if differ(mine[2], ends.group(1)):
            return f"retraction: the text ends on another result after the final answer ({last[-80:]!r})"
    # the text ends on a line that is only another value ("\boxed{5}\n\n6", "So: 6.")
    bare = tokens(last, 0, len(last))
    words = _FILLER.sub("", last[: bare[0][0]] + last[bare[0][1] :]) if len(bare) == 1 else "x"
    if not words and differ(mine[2], bare[0][2]):
        return f"retraction: the text ends on another value after the final answer ({last[-80:]!r})"
    return None


def _number(value: str) -> float | None:
    """A plain numeral, a/b or \\frac{a}{b} as a float; None for anything else."""
    bare = re.sub(r"\\[dt]?frac\{([^{}]*)\}\{([^{}]*)\}", r"\1/\2", value.strip(" $"))
    try:
        top, _, bottom = bare.partition("/")
        return float(top) / float(bottom) if bottom else float(top)
    except (ValueError, ZeroDivisionError):
        return None


def _near(exact: str, approximate: str) -> bool:
    """`approximate` rounds `exact` (to 1%): an approximation that restates the value, not another value."""
    a, b = _number(exact), _number(approximate)
    if a is None or b is None or exact.strip() == approximate.strip():
        return False
    return abs(a - b) <= 0.01 * max(1, abs(a))


def _sentence_of(text: str, token, floor: int = 0) -> tuple[int, int]:
    """The span of the sentence (split also at ";" and lines) that holds `token`, starting no earlier than `floor`."""
    floor = max(floor, token[0] - WINDOW)  # read in a bounded window, like the statement itself
    ends = [m.end() for m in _SENTENCE.finditer(text, floor, token[0])]
    stop = _SENTENCE.search(text, token[1], token[1] + WINDOW)
    return (ends[-1] if ends else floor), (stop.start() if stop else min(len(text), token[1] + WINDOW))


def _superseded(text: str, mine, differ, hedges: bool = True) -> str | None:
    """A value after the final answer that a reader takes as a new final answer (_LATER_CLAUSE's rule): the last
    committed value decides, so the scored one is superseded ("\\boxed{5}. Erratum: 6", "the answer is 5; the correct
    method gives 7", "\\boxed{5} \\to 7") or hedged ("If not, 6.")."""
    stop = min(len(text), mine[1] + WINDOW)
    for tok in tokens(text, mine[1], stop, words=True)[:WINDOW_TOKENS]:
        told = text[slice(*_sentence_of(text, tok, floor=mine[1]))]
        if _DISCOUNT.search(told):  # a named mistake
            continue
        checking = CHECK.match(told) and "=" in told  # "Check: 2(5) + 4 = 14": only a value stated as a result counts
        lo = max([mine[1]] + [m.end() for m in _LATER_CLAUSE.finditer(text, mine[1], tok[0])])
        hi = _LATER_CLAUSE.search(text, tok[1])
        before, after = text[lo : tok[0]], text[tok[1] : hi.start() if hi else stop]
        if (
            _APPROX.search(before)
            or _REFERENCE_NOUN.search(before)
            or _COMPUTED.search(before)
            or _OPERAND.search(text[max(0, tok[0] - 40) : tok[0]])  # "twice 3", "add 3", "O(1)"
        ):
            continue
        joined = text[mine[1] : tok[0]]
        if _NEGATION.search(before) or "\n" not in joined and _ONE_VALUE.fullmatch(joined):  # "5, not 6"; "77 - 45"
            continue
        if not hedges and _joins_alternatives(text[mine[1] : tok[0]]):  # hedge: last judges "5 or 6" by its value
            continue
        if hi and text[hi.start()] == "," and re.match(r",\s*\$?-?\d", text[hi.start() :]):  # "1, 2, 3": a list
            continue
        ends = not re.sub(r"[\s$}\]*!?.:]", "", after)
        unit = re.fullmatch(r"\s*[A-Za-z]+(?:\s+[A-Za-z]+)?[\s.!?]*", after)
        boxed = text.startswith("\\boxed", tok[0]) or text.startswith("\\fbox", tok[0])
        short = len(re.findall(r"[^\W\d_]+", before)) <= 3
        cue = _RESULT_CUE.search(before)
        cue = cue and not (checking and cue.group().lstrip().startswith(":"))
        stated = boxed or ends and short and not checking or cue and (ends or unit)
        if stated and differ(mine[2], tok[2]):
            quote = text[max(mine[1], lo - 30) : tok[1] + 10].strip()
            return f"retraction: after the final answer {mine[2].strip()[:40]} the text states {tok[2]} ({quote!r})"
    return None


def _two_answers(text: str, site: Site, differ) -> str | None:
    """The last \\boxed{} and the last "answer is" state different values, and nothing between them takes the earlier
    one back ("So it is \\boxed{5}. The answer is 6.")."""
    value = text[site.start : site.end]
    if site.where == "last_line":  # a value on each of the last lines: "5\n6", "- 5\n- 6", "| 5 |\n| 6 |" is a list
        above = [line for line in text[: site.outer_start].splitlines() if line.strip()][-1:]
        alone = tokens(above[0], 0, len(above[0])) if above else []
        filler = len(alone) == 1 and not _FILLER.sub("", above[0].replace(above[0][alone[0][0] : alone[0][1]], ""))
        if len(alone) == 1 and (filler or _shape(above[0]) == _shape(text[site.outer_start : site.outer_end])):
            if differ(value, alone[0][2]):
                return f"several values: lines {alone[0][2]} and {value.strip()[:60]}"
    earlier_boxes = [b for b in boxes(text) if b[3] <= site.outer_start]
    if site.where == "boxed" and earlier_boxes:  # boxes one after another: "\boxed{5}\n\\boxed{6}" is a list
        b = earlier_boxes[-1]
        if not re.sub(r"(?i)[\s$.,;:]|\b(?:or|and)\b", "", text[b[3] : site.outer_start]):
            if differ(value, text[b[1] : b[2]]):
                return f"several values: boxes {text[b[1] : b[2]].strip()[:60]} and {value.strip()[:60]}"
    # any earlier final answer statement (box or "answer is") that states another value, not taken back since, not
    # called a mistake: "The answer is 5. The answer is 6.", "\\boxed{5}\n\nAlso valid: \\boxed{6}"
    earlier = [(b[1], b[2], b[0], b[3]) for b in earlier_boxes]
    earlier += [
        (a.start("answer"), a.end("answer"), a.start(), a.end())
        for a in ANSWER_IS.finditer(text)
        if not valueless(a.group("answer"))  # "The answer is a math problem." states no answer
    ]
    earlier = sorted(e for e in earlier if e[1] <= site.outer_start and e[3] > site.outer_start - WINDOW)
    for start, end, outer_start, outer_end in reversed(earlier[-WINDOW_TOKENS:]):
        between = text[outer_end : site.outer_start]
        if _CHANGE.search(between) or _RETRACT.search(between) or _RECHECK.search(between):
            return None  # the earlier ones are taken back
        told = text[slice(*_sentence_of(text, (outer_start, outer_end)))]
        if _DISCOUNT.search(told) or _ATTRIBUTED.search(told):  # a named mistake; "I first thought the answer is 4"
            continue
        if differ(value, text[start:end]):
            return f"two different final answers: {text[start:end].strip()[:60]} then {value.strip()[:60]}"
    return None


# Between two final answer statements, a recheck is why the later one differs ("..., but rechecking: ... So 5").
_RECHECK = re.compile(r"(?i)\b(?:re-?|double-?)check\w*|\breconsider\w*")


def _shape(line: str) -> str:
    """A line with its values and one-letter labels blanked: "Option A: 5" and "Option B: 6" have one shape."""
    return re.sub(r"\b[A-Za-z]\b", "@", re.sub(r"-?\d[\d.,/]*", "#", line)).strip()


# What may stand between two numerals of one value or one computation ("10^{5}", "3 \\times 4", "1 1/2", "3:4").
_ONE_VALUE = re.compile(
    r"(?i)[\s$^{}()\[\]]*(?:[-+*/×·÷:=<>!%^]|\\(?:times|cdot|div|[dt]?frac|sqrt|,|;|!)|x|of|per|by|in|out|over|times|"
    r"plus|minus|mod|to|is|are)?[\s$^{}()\[\]]*"
)


def _joins_alternatives(between: str) -> bool:
    if _STRONG_EXPLANATION.search(between):
        return False
    if len(between.split()) == 1 and not _ONE_VALUE.fullmatch(between):  # "5 oder 6", "5或6", "5–6", "5 || 6"
        return True
    return bool(
        _STRONG_ALTERNATIVE.search(between)
        or _WEAK_ALTERNATIVE.search(between)
        and not _WEAK_EXPLANATION.search(between)
    )


# "add 6 and 4", "Add 4 to 4", "adding 4 and 6", "the sum of 3 and 5": the two numerals an operation names are its
# operands, not alternatives to its result (a value after the pair, "It becomes 8 or 4.", is still one)
_OPERAND_PAIR = re.compile(
    r"(?i)\b(?:add(?:ing|ed)?|sum(?:ming)?(?:\s+of)?|subtract(?:ing|ed)?|multiply(?:ing)?|multiplied|divid(?:e|ing|ed)|"
    r"combin(?:e|ing|ed)|product\s+of|difference\s+(?:of|between))\s+\$?(?P<a>-?\d+(?:\.\d+)?)\$?\s+"
    r"(?:and|to|from|by|with|into)\s+\$?(?P<b>-?\d+(?:\.\d+)?)\b(?!\s*(?:\.\d|/|,\s*\d))"
)


def _operands(text: str, lo: int, hi: int, mine) -> list[tuple[int, int]]:
    """Spans of the operands of an operation named between lo and hi (_OPERAND_PAIR) that no strong alternative
    joins to the committed value ("8, or add 4 and 5" offers 4 and 5)."""
    found = []
    for m in _OPERAND_PAIR.finditer(text, lo, hi):
        between = text[m.end() : mine[0]] if m.end() <= mine[0] else text[mine[1] : m.start()]
        if m.start() < mine[1] and mine[0] < m.end() or _STRONG_ALTERNATIVE.search(between):
            continue
        found += [m.span("a"), m.span("b")]
    return found


# "5 (2 + 3)": numerals inside a parenthesised computation are its working, not alternatives
_WORKING = re.compile(r"\(\s*-?\d[\d.\s]*(?:(?:[-+*/×·^]|\\times|\\cdot)\s*-?\d[\d.\s]*)+\)")


def _alternatives(text: str, around: list, mine, differ, hi: int) -> str | None:
    """Another value joined to the committed one as an alternative ("or", "and", ";", "although"), not explained
    by it ("since 3 x 4 = 12") or rejected ("5, not 6"); or a list inside the box itself."""
    if text[mine[0] : mine[1]] != mine[2]:  # a box or a $...$ span: a list inside it
        inner = re.sub(r"\\text\{([^{}]*)\}", r" \1 ", mine[2])
        joiners = r"(?i)\s*(?:\bor\b|\band\b|;|,(?!\d{3})|\\(?:lor|vee|mid|q?quad)(?![A-Za-z])|\\\\|\|\||\s\|\s)\s*"
        parts = [p for p in re.split(joiners, inner) if p.strip()]
        if len(parts) > 1 and any(differ(parts[0], p) for p in parts[1:]):
            return f"several values: the final answer lists {' | '.join(p.strip() for p in parts)}"
    working = []
    for match in _WORKING.finditer(text, mine[1], hi):  # a parenthesis after the answer
        if differ(mine[2], match.group()[1:-1]):  # "5 (6 + 1)": the working computes another value
            return f"several values: the final answer {mine[2].strip()} comes with {match.group()}"
        working.append(match.span())
    working += _operands(text, max(0, around[0][0] - 40), around[-1][1], mine) if around else []  # "Add 4 and 4"
    for other in around[:WINDOW_TOKENS]:
        if other is mine or any(s <= other[0] and other[1] <= e for s, e in working):
            continue
        left, right = (other[1], mine[0]) if other[0] < mine[0] else (mine[1], other[0])
        restated = _near(other[2], mine[2]) or _near(mine[2], other[2])  # "1/3, approximately 0.333"
        if restated and re.search(r"(?i)approx|about|roughly|around|≈|~", text[left:right]):
            continue
        lo, hi_ = _sentence_of(text, other, floor=left)
        if not (lo <= mine[0] < hi_) and _DISCOUNT.search(text[lo:hi_]):  # "; the other root, -5, is rejected"
            continue
        if _joins_alternatives(text[left:right]) and differ(mine[2], other[2]):
            return f"several values: the final answer offers {mine[2].strip()} and {other[2].strip()}"
    for offer in _OFFERS.finditer(text[hi : hi + WINDOW]):  # a later sentence offers one: "It could also be 6."
        near = tokens(text, hi + offer.end(), min(len(text), hi + offer.end() + 200))[:1]
        gap = text[hi + offer.end() : near[0][0]] if near else "x"
        if not re.sub(r"\\boxed|[\s${(:]", "", gap) and differ(mine[2], near[0][2]):
            return f"several values: {text[hi + offer.start() : near[0][1]].strip()!r} after the final answer"
    return None
