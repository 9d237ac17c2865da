"""MathAnswerVerifier: is the completion's final committed answer equal to the reference? (math-verify).

Where the final answer is (after the reasoning block, the last answer statement) is math_final.py's, whether it commits
to one value (nothing retracted, negated, ranged or hedged) math_commitment.py's; this module extracts its value and
compares it with the reference.
"""

import functools
import numbers
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.main_thread import HardTimeout, MainThreadRunner
from rewardmill.transforms.labelers.math_commitment import flaw
from rewardmill.transforms.labelers.math_final import (
    ANSWER_IS,
    BOX,
    CALCULUS,
    NUMBER,
    STRUCK,
    WINDOW,
    committed_text,
    empty,
    final_site,
    site_snippet,
    unevaluated,
    unpercent,
)
from rewardmill.transforms.labelers.reasoning import split_reasoning

# Rule verifiers are ~99% precise but miss ~14% of equivalent answers (Pitfalls of Rule- and Model-based
# Verifiers), so a negative is less certain than a positive.
CONFIDENCE_CORRECT = 0.99
CONFIDENCE_INCORRECT = 0.86


# Extraction modes. Each narrows the final answer text (math_final.committed_text: after any leading reasoning block,
# look-alikes folded) to the text that holds the answer; math-verify then parses that text. Modes are tried in the
# configured order and the first that finds an answer wins, so ["boxed", "answer_is", "last_number"] means "the last
# \\boxed{}, else the text after 'answer is', else the last number". `math_verify` lets math-verify read the final
# answer statement (math_final.final_site), or the whole answer text when there is none.
EXTRACTION_MODES = ("math_verify", "boxed", "answer_is", "last_number")


def answer_snippet(completion: str, mode: str) -> str | None:
    """The text math-verify should parse for `mode`, or None when the mode finds no answer in `completion`."""
    return snippet_of(committed_text(completion), mode)


def snippet_of(text: str, mode: str) -> str | None:
    """answer_snippet for a text already reduced to its final answer part."""
    if mode == "math_verify":
        site = final_site(text)
        return site_snippet(text, site) if site else (text if text.strip() else None)
    if mode == "boxed":
        content = last_box(text)
        return None if content is None else f"$\\boxed{{{unpercent(content)}}}$"
    if mode == "answer_is":
        matches = list(ANSWER_IS.finditer(text))
        return matches[-1].group("answer").strip() if matches else None
    if mode == "last_number":
        found = NUMBER.findall(text)
        return f"${found[-1].replace(',', '').replace(' ', '')}$" if found else None
    raise ValueError(f"unknown extraction mode {mode!r}; known: {EXTRACTION_MODES}")


def last_box(text: str) -> str | None:
    """Content of the last \\boxed{...} / \\fbox{...} with balanced braces; None if there is none or it is unclosed."""
    starts = [m.end() for m in BOX.finditer(text)]
    if not starts:
        return None
    depth, start = 1, starts[-1]
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i]
    return None


# The rationale prefix of a final answer that commits to no single value: a hedge or list, and also a retraction, a
# negation, a range, an empty \\boxed{} or the question's arithmetic left undone. An appeal never overturns one
# (reference_judge.py): no reading of "5 or 6" or "not 5" makes it the answer 5.
HEDGED = "hedged: "


def _multi_valued(expr) -> bool:
    # several values, or a string: math-verify could not read the gold as math, so nothing is known of its values
    return type(expr).__name__ in ("FiniteSet", "Tuple", "Interval", "Union", "list", "tuple", "set", "str")


def _single_value(expr) -> bool:
    """A gold that is one value: not several, and not a relation or a set ("x > 5" is written as a range)."""
    relations = ("Equality", "Unequality", "GreaterThan", "LessThan", "StrictGreaterThan", "StrictLessThan", "And")
    return not _multi_valued(expr) and type(expr).__name__ not in relations


def reference_text(reference) -> str | None:
    """The reference as text: a number (5, 5.0, as Arrow or pandas may hand it) is written out; blank or another
    type is None (no reference)."""
    if isinstance(reference, bool):
        return None
    if isinstance(reference, numbers.Real):
        return None if reference != reference else str(reference)  # NaN is a missing value
    if isinstance(reference, str) and reference.strip():
        return reference
    return None


def check_modes(modes) -> tuple[str, ...]:
    """`modes` as a tuple, or ValueError naming the bad one (a typo must not silently verify nothing)."""
    modes = tuple(modes)
    if not modes:
        raise ValueError(f"extraction needs at least one mode of {EXTRACTION_MODES}")
    for mode in modes:
        if mode not in EXTRACTION_MODES:
            raise ValueError(f"unknown extraction mode {mode!r}; known: {EXTRACTION_MODES}")
    return modes


@dataclass(frozen=True)
class MathAnswerConfig:
    # per parse/verify call. Exceeded on the reference => verdict timeout, score None; exceeded on the completion's own
    # answer (the reference parsed) => incorrect, score 0, not cached (an unverifiable answer earns nothing)
    timeout_seconds: int = 5
    float_rounding: int = 6
    workers: int = 2  # helper processes verifying a batch in parallel (math-verify is CPU-bound, one core each)
    # Where the final answer is, tried in order (first hit wins), always after a leading reasoning block: math_verify =
    # math-verify reads the final answer statement (the last box or "answer is", else the last line with math);
    # boxed = last \boxed{}; answer_is = the rest of the line after "answer is"/"answer:"; last_number = the last
    # number (thousand separators and a/b fractions allowed).
    extraction: tuple[Literal["math_verify", "boxed", "answer_is", "last_number"], ...] = ("math_verify",)
    # A final answer that offers several values ("5 or 6", "5; 6", a list of boxes) or states two different ones:
    # reject = verdict incorrect with rationale "hedged: ..." (a policy must not learn to hedge); last = judge the
    # extracted answer alone. A retraction, negation, range, empty box or unevaluated arithmetic is rejected anyway.
    hedge: Literal["reject", "last"] = "reject"

    def __post_init__(self):
        object.__setattr__(self, "extraction", check_modes(self.extraction))


# A reference that already carries math delimiters is parsed as given: wrapping "$$x = 1$$" in $...$ again would
# give "$$$x = 1$$$", which does not parse.
_DELIMITED = re.compile(r"\$|\\\(|\\\[|\\boxed|\\begin\{")


def parse_reference(reference: str, parse, timeout_seconds: int) -> list:
    """math-verify's parse of a gold answer. With delimiters ($, \\(, \\[, \\boxed, an environment) it is parsed
    as given, exactly as math-verify parses it (so the labeler agrees with math-verify's own parse/verify, its
    string fallback for LaTeX sympy cannot read included). A bare reference is wrapped in $...$ so a number or bare
    LaTeX parses, and must parse to math (no string fallback: an unreadable bare reference abstains)."""
    if _DELIMITED.search(reference):
        gold = parse(reference, parsing_timeout=timeout_seconds, raise_on_error=True)
        if gold:
            return gold
    return parse(f"${reference}$", fallback_mode="no_fallback", parsing_timeout=timeout_seconds, raise_on_error=True)


@dataclass(frozen=True)
class Reading:
    """A completion's final committed answer: math-verify's parse of it (`answer`, None when none is found), the
    extraction `mode` that found it, and why it is no committed value (`rejected`, the reason after HEDGED)."""

    answer: list | None
    mode: str | None
    rejected: str | None = None


def read_answer(
    text: str,
    extraction: tuple[str, ...],
    timeout_seconds: int,
    hedges: bool = True,
    single_valued: bool = True,
    undone_ok: bool = False,
) -> Reading:
    """The final committed answer of `text` (math_final.committed_text of a completion). Main thread only
    (math-verify). `hedges`: several values are rejected (the `hedge: reject` policy); `single_valued`: the answer
    should be one value (a negation, range or list is none); `undone_ok`: unevaluated arithmetic may be the answer
    (the reference is written that way). Malformed LaTeX in the answer itself raises, as math-verify does."""
    from math_verify import parse, verify
    from math_verify.errors import TimeoutException

    @functools.lru_cache(maxsize=256)  # the same token is compared with several others
    def value(snippet: str):
        snippet = snippet if "$" in snippet else f"${snippet}$"  # bare LaTeX ("\\sqrt{2}") parses only in math mode
        try:
            return parse(snippet, parsing_timeout=timeout_seconds) or None
        except TimeoutException:
            raise
        except Exception:  # malformed LaTeX in a side value: it cannot tell two values apart
            return None

    def differ(a: str, b: str) -> bool:
        plain = _plain(a), _plain(b)
        if None not in plain:  # two numerals: compared exactly, without a parse per token
            return plain[0] != plain[1]
        first, second = value(a), value(b)
        return bool(first and second) and not verify(first, second, timeout_seconds=timeout_seconds)

    site = final_site(text)
    if site is not None and site.where == "boxed" and empty(text[site.start : site.end]):
        return Reading(None, None, "empty: the final \\boxed{} holds no answer")
    answer, mode = None, None
    for mode in extraction:
        snippet = snippet_of(text, mode)
        if snippet and not undone_ok and CALCULUS.search(snippet[-WINDOW:]):  # never handed to math-verify
            return Reading(None, mode, f"not a result: {snippet.strip()[:80]!r} is a computation left undone")
        if snippet and STRUCK.strip() in snippet:
            return Reading(None, mode, "retraction: the final answer is struck out")
        answer = parse(snippet, parsing_timeout=timeout_seconds, raise_on_error=True) if snippet else None
        if answer:
            break
    if not answer:
        return Reading(None, None)
    extracted = str(answer[-1])
    why = flaw(text, site, differ, hedges, single_valued, extracted) if site is not None else None
    if why is None and unevaluated(extracted) and not undone_ok:
        why = f"not a result: {extracted} is arithmetic left undone, not its value"
    if why is None and single_valued and _false_equation(extracted, differ):
        why = f"not a result: {extracted} is an equation between different numbers, not a value"
    return Reading(answer, mode, why)


# A multiple-choice option letter, alone: "B", "(B)", "B." (math-verify reads no letter as an answer).
_CHOICE = re.compile(r"[\s(]*([A-J])[\s).:]*")


def choice(text: str) -> str | None:
    """The option letter a text states as its final answer: the whole text, or its last "answer is" sentence when that
    is one letter and ends the text, so no list, hedge or later change of mind passes."""
    anchors = list(ANSWER_IS.finditer(text))
    statement, after = (anchors[-1].group("answer"), text[anchors[-1].end() :]) if anchors else (text, "")
    found = _CHOICE.fullmatch(statement)
    return found.group(1) if found and not after.strip(" \n.!") else None  # nothing said after it


def options(text: str) -> list[str]:
    """The distinct option letters stated from the last "answer is" on (a letter before a lowercase word is an article
    or a pronoun: "A good", "I think")."""
    anchors = list(ANSWER_IS.finditer(text))
    tail = text[anchors[-1].start() :] if anchors else text
    found = re.finditer(r"(?<![A-Za-z\\])\(?([A-J])\)?(?![A-Za-z])", tail)
    return sorted({m[1] for m in found if m[1] not in "AI" or not re.match(r"\s+[a-z]", tail[m.end() :])})


def _plain(text: str) -> Decimal | None:
    """A plain numeral ("5", "-3.50", "1,000", "$12$") as its exact value; None for anything else."""
    bare = text.strip().strip("$").strip()
    if re.fullmatch(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?", bare):
        return Decimal(bare.replace(",", ""))
    return None


def _false_equation(extracted: str, differ) -> bool:
    """ "6 = 5": sides that are all numerals (or arithmetic on them) and do not agree. "2 + 3 = 5" is working shown."""
    sides = [side.strip(" $") for side in extracted.split("=")]
    numeric = len(sides) > 1 and all(
        side and re.fullmatch(r"[\d\s.,+\-*/^(){}]+|\\[dt]?frac\{\d+\}\{\d+\}", side) for side in sides
    )
    return numeric and any(differ(sides[0], side) for side in sides[1:])


def verify_answer(
    completion: str,
    reference: str,
    timeout_seconds: int,
    float_rounding: int = 6,
    extraction: tuple[str, ...] = ("math_verify",),
    hedge_policy: str = "reject",
) -> Label:
    """Pure core. Must run in a main thread (math-verify's timeouts use signal.alarm)."""
    from math_verify import parse, verify
    from math_verify.errors import TimeoutException

    if not isinstance(completion, str):
        return Label(None, 0.0, "error", f"completion is {type(completion).__name__}, not text: nothing to verify")
    reference = reference_text(reference)
    if reference is None:
        return Label(None, 0.0, "abstain", "no reference answer for this prompt")
    if not split_reasoning(completion).finished:
        return Label(0.0, CONFIDENCE_INCORRECT, "incorrect", "no final answer: the reasoning block is never closed")
    text = committed_text(completion)

    def reject(reason: str, extracted=None) -> Label:
        return Label(0.0, CONFIDENCE_INCORRECT, "incorrect", f"{HEDGED}{reason}"[:500], extracted)

    try:
        gold = parse_reference(reference, parse, timeout_seconds)  # gold comes first in verify()
    except TimeoutException:
        return Label(None, 0.0, "timeout", f"math-verify exceeded {timeout_seconds}s on the reference")
    except Exception as exc:
        return Label(None, 0.0, "error", f"reference: {type(exc).__name__}: {exc}"[:500])
    if not gold:
        return Label(None, 0.0, "abstain", f"reference does not parse: {reference!r}", raw=None)
    try:
        hedges, single, undone_ok = hedge_policy == "reject", _single_value(gold[0]), unevaluated(reference)
        reading = read_answer(text, extraction, timeout_seconds, hedges, single, undone_ok)
        answer, mode = reading.answer, reading.mode
        extracted = str(answer[-1]) if answer else None
        if reading.rejected:
            return reject(reading.rejected, extracted)
        if not answer:
            chosen = choice(text)
            if chosen and chosen == choice(reference):  # "The answer is (B)." for the option B
                return Label(1.0, CONFIDENCE_CORRECT, "correct", f"option {chosen} equals {reference}", chosen)
            if chosen and choice(reference):
                return Label(0.0, CONFIDENCE_INCORRECT, "incorrect", f"option {chosen} != {reference}", chosen)
            offered = options(text)
            if choice(reference) and len(offered) > 1:  # "(B) or (C)", "B. Actually C."
                return reject(f"several values: the final answer offers options {', '.join(offered)}")
            modes = "/".join(extraction)
            return Label(0.0, CONFIDENCE_INCORRECT, "incorrect", f"no final answer found ({modes})", raw=None)
        ok = verify(gold, answer, float_rounding=float_rounding, timeout_seconds=timeout_seconds, raise_on_error=True)
    except TimeoutException:
        # The reference parsed within the bound on its own, so the time went on the answer the completion chose: an
        # answer nobody can check earns nothing (else an unverified rollout outranks every verified wrong one). A
        # loaded machine may have caused it, so the cache does not keep the label.
        why = f"{HEDGED}unverifiable: math-verify exceeded {timeout_seconds}s on the completion's answer"
        return Label(0.0, CONFIDENCE_INCORRECT, "incorrect", why, cacheable=False)
    except Exception as exc:  # math-verify raises on malformed LaTeX; that is "cannot verify", not wrong
        return Label(None, 0.0, "error", f"{type(exc).__name__}: {exc}"[:500])
    if ok:
        return Label(1.0, CONFIDENCE_CORRECT, "correct", f"{mode} answer {extracted} equals {reference}", extracted)
    return Label(0.0, CONFIDENCE_INCORRECT, "incorrect", f"{mode} answer {extracted} != {reference}", extracted)


class MathAnswerVerifier:
    """Score 1.0 when the completion's final answer equals the reference, else 0.0.

    Input columns: completion, reference (text, or a number).   Output: score (None = cannot verify), verdict,
    rationale, raw (the extracted answer). A missing or unparseable reference abstains: it never rewards. Only the
    final committed answer counts (math_final.py, math_commitment.py); one that is retracted, negated, a range,
    several values, empty or unevaluated arithmetic is incorrect with a rationale that starts with HEDGED.
    """

    name = "math_answer"
    # 2: extraction modes; the rationale names the mode. 3: a hedged final answer is incorrect; a reference with its
    # own delimiters is parsed as given. 4: the final committed answer decides (math_final.py): reasoning, retractions,
    # negations, ranges, lists, look-alike letters, empty boxes and unevaluated arithmetic; numeric references. 5: the
    # last committed value decides (later results supersede, attributed/tentative answers, every final-answer position
    # compared), Markdown/entities/struck-out text read as a reader sees them, functions of numerals and calculus are
    # undone, a completion that times out math-verify is incorrect (not cached). 6: valueless 'answer is', operands. 7:
    # the whole value phrase is read ("minus 5", "5 thousand", "five", "101_2", "0.\overline{3}") and a word or sign
    # that changes the value ("5 over 2", "5 squared", "\boxed{5}0") makes it no result; asides (comments,
    # footnotes, parentheticals) are no answer statements; a struck-through digit is withdrawn
    version = "7"
    reads = ("completion", "reference")
    tasks = ("math",)  # a code task's reference is a program, not an answer
    Config = MathAnswerConfig

    def __init__(self, config: MathAnswerConfig | None = None):
        self.config = config or MathAnswerConfig()
        self._runner = MainThreadRunner(max(1, self.config.workers))

    def label(self, completion: str, reference: str | float | None) -> Label:
        if reference_text(reference) is None:
            return Label(None, 0.0, "abstain", "no reference answer for this prompt")
        cfg = self.config
        try:
            return self._runner.call(
                verify_answer,
                (completion, reference, cfg.timeout_seconds, cfg.float_rounding, cfg.extraction, cfg.hedge),
                hard_timeout=3 * cfg.timeout_seconds + 10,
            )
        except HardTimeout as exc:
            return Label(None, 0.0, "timeout", str(exc))

    def label_many(self, rows: list[tuple[str, str | None]]) -> list[Label]:
        """label(*row) for each (completion, reference), verified on `workers` processes; order is kept.

        A call past the hard bound raises HardTimeout; the Beam wrapper then labels the batch one by one.
        """
        cfg = self.config
        todo = [i for i, (_, reference) in enumerate(rows) if reference_text(reference) is not None]
        results = self._runner.map(
            verify_answer,
            [(*rows[i], cfg.timeout_seconds, cfg.float_rounding, cfg.extraction, cfg.hedge) for i in todo],
            hard_timeout=3 * cfg.timeout_seconds + 10,
        )
        labels = [Label(None, 0.0, "abstain", "no reference answer for this prompt")] * len(rows)
        for i, label in zip(todo, results, strict=True):
            labels[i] = label
        return labels

    def teardown(self) -> None:
        self._runner.close()
