"""MathAnswerVerifier: is the completion's final answer equal to the reference? (math-verify)."""

import re
from dataclasses import dataclass
from typing import Literal

from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.main_thread import HardTimeout, MainThreadRunner

# Rule verifiers are ~99% precise but miss ~14% of equivalent answers (Pitfalls of Rule- and Model-based
# Verifiers), so a negative is less certain than a positive.
CONFIDENCE_CORRECT = 0.99
CONFIDENCE_INCORRECT = 0.86


# Extraction modes. Each narrows the completion to the text that holds the answer; math-verify then parses that
# text. Modes are tried in the configured order and the first that finds an answer wins, so
# ["boxed", "answer_is", "last_number"] means "the last \\boxed{}, else the text after 'answer is', else the
# last number". `math_verify` searches the whole completion with math-verify's own anchors and priorities.
EXTRACTION_MODES = ("math_verify", "boxed", "answer_is", "last_number")

# "The answer is 12.", "Final answer: $\frac{1}{2}$", "answer = 7": the answer runs to the end of its sentence
# (a full stop before a space or the end; "3.5" keeps its decimal point) or line.
_ANSWER_IS = re.compile(r"(?i)\banswer\b\s*(?:is\b|[:=])\s*:?\s*(?P<answer>[^\n]{1,200}?)(?=\.\s|\.?$|\n)", re.M)
_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
# 1,000,000 | -3.5 | 3/4 | 42 — thousand separators only in groups of three, so "1,2,3" is three numbers.
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s*/\s*\d+)?(?![\w])")


def answer_snippet(completion: str, mode: str) -> str | None:
    """The text math-verify should parse for `mode`, or None when the mode finds no answer in `completion`."""
    if mode == "math_verify":
        return completion if completion.strip() else None
    if mode == "boxed":
        content = last_box(completion)
        return None if content is None else f"$\\boxed{{{content}}}$"
    if mode == "answer_is":
        matches = list(_ANSWER_IS.finditer(completion))
        return matches[-1].group("answer").strip() if matches else None
    if mode == "last_number":
        numbers = _NUMBER.findall(completion)
        return f"${numbers[-1].replace(',', '').replace(' ', '')}$" if numbers else None
    raise ValueError(f"unknown extraction mode {mode!r}; known: {EXTRACTION_MODES}")


def last_box(text: str) -> str | None:
    """Content of the last \\boxed{...} / \\fbox{...} with balanced braces; None if there is none or it is unclosed."""
    starts = [m.end() for m in _BOX.finditer(text)]
    if not starts:
        return None
    depth, start = 1, starts[-1]
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i]
    return None


HEDGED = "hedged: "  # the rationale prefix of a hedge; an appeal never overturns one (reference_judge.py)
# "5 or 6", "either 5 or 6", "5, or maybe 6": alternatives offered as the final answer.
_ALTERNATIVES = re.compile(r"(?i)\s*(?:,\s*)?\b(?:or(?:\s+maybe)?|either|maybe)\b\s*")


def final_answer_texts(completion: str) -> dict[str, str]:
    """Where a final answer is stated (pure): the text after the last "answer is", the last \\boxed{} content and
    the last non-blank line, each when present."""
    texts = {}
    anchors = list(_ANSWER_IS.finditer(completion))
    if anchors:  # from the last "answer is" to the end: "12. Or maybe 13." is one hedged answer
        texts["answer_is"] = completion[anchors[-1].start("answer") :][:300].strip()
    box = last_box(completion)
    if box is not None:
        texts["boxed"] = box
    lines = [line.strip() for line in completion.splitlines() if line.strip()]
    if lines:
        texts["last_line"] = lines[-1]
    return texts


def hedge(completion: str, gold, parse, verify, timeout_seconds: int) -> str | None:
    """Why the completion's final answer is a hedge, or None. A hedge offers several different values as the
    answer ("5 or 6") or states two different final answers (the last \\boxed{} against the last "answer is").
    A gold that is itself several values (a set, a tuple, an interval) is never hedged against: "5 or -5" may be
    how a completion writes {5, -5}."""
    if _multi_valued(gold[0]):
        return None

    def value(text: str):
        parsed = parse(f"${text}$" if "$" not in text and "\\" not in text else text, parsing_timeout=timeout_seconds)
        return parsed or None

    def differ(a, b) -> bool:
        return not verify(a, b, timeout_seconds=timeout_seconds)

    texts = final_answer_texts(completion)
    for where, text in texts.items():
        parts = [part for part in _ALTERNATIVES.split(text) if part.strip(" .,;:$")]
        if len(parts) < 2:  # no alternatives in this text
            continue
        values = [v for v in (value(part.strip(" .,;:")) for part in parts if _looks_like_value(part)) if v]
        if len(values) >= 2 and any(differ(values[0], v) for v in values[1:]):
            shown = " | ".join(str(v[-1]) for v in values)
            return f"the final answer ({where}) offers several values: {shown}"
    said_text = answer_snippet(completion, "answer_is")
    if "boxed" in texts and said_text:
        boxed, said = value(f"\\boxed{{{texts['boxed']}}}"), value(said_text)
        if boxed and said and differ(boxed, said):
            return f"two different final answers: boxed {boxed[-1]}, 'answer is' {said[-1]}"
    return None


def _looks_like_value(text: str) -> bool:
    """ "5", "x = -5", "\\frac{1}{2}", "$3\\sqrt{2}$"; not "Whether you add" (prose around an "or")."""
    bare = re.sub(r"\\[A-Za-z]+", " ", text)
    return bool(re.search(r"\d|\\[A-Za-z]", text)) and not re.search(r"[A-Za-z]{3,}", bare)


def _multi_valued(expr) -> bool:
    # several values, or a string: math-verify could not read the gold as math, so nothing is known of its values
    return type(expr).__name__ in ("FiniteSet", "Tuple", "Interval", "Union", "list", "tuple", "set", "str")


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
    timeout_seconds: int = 5  # per parse/verify call; exceeded => verdict timeout, score None
    float_rounding: int = 6
    workers: int = 2  # helper processes verifying a batch in parallel (math-verify is CPU-bound, one core each)
    # Where the final answer is, tried in order (first hit wins): math_verify = math-verify's own search of the
    # whole completion; boxed = last \boxed{}; answer_is = the rest of the line after "answer is"/"answer:";
    # last_number = the last number (thousand separators and a/b fractions allowed). See math_extraction.py.
    extraction: tuple[Literal["math_verify", "boxed", "answer_is", "last_number"], ...] = ("math_verify",)
    # A final answer that offers several values ("5 or 6") or states two different ones: reject = verdict incorrect
    # with rationale "hedged: ..." (a policy must not learn to hedge); last = judge the extracted answer alone.
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

    try:
        gold = parse_reference(reference, parse, timeout_seconds)  # gold comes first in verify()
        if not gold:
            return Label(None, 0.0, "abstain", f"reference does not parse: {reference!r}", raw=None)
        answer, mode = None, None
        for mode in extraction:
            snippet = answer_snippet(completion, mode)
            answer = parse(snippet, parsing_timeout=timeout_seconds, raise_on_error=True) if snippet else None
            if answer:
                break
        if not answer:
            modes = "/".join(extraction)
            return Label(0.0, CONFIDENCE_INCORRECT, "incorrect", f"no final answer found ({modes})", raw=None)
        if hedge_policy == "reject":
            hedged = hedge(completion, gold, parse, verify, timeout_seconds)
            if hedged:
                return Label(0.0, CONFIDENCE_INCORRECT, "incorrect", f"{HEDGED}{hedged}"[:500], str(answer[-1]))
        ok = verify(gold, answer, float_rounding=float_rounding, timeout_seconds=timeout_seconds, raise_on_error=True)
    except TimeoutException:
        return Label(None, 0.0, "timeout", f"math-verify exceeded {timeout_seconds}s")
    except Exception as exc:  # math-verify raises on malformed LaTeX; that is "cannot verify", not wrong
        return Label(None, 0.0, "error", f"{type(exc).__name__}: {exc}"[:500])
    extracted = str(answer[-1]) if answer else None
    if ok:
        return Label(1.0, CONFIDENCE_CORRECT, "correct", f"{mode} answer {extracted} equals {reference}", extracted)
    return Label(0.0, CONFIDENCE_INCORRECT, "incorrect", f"{mode} answer {extracted} != {reference}", extracted)


class MathAnswerVerifier:
    """Score 1.0 when the completion's final answer equals the reference, else 0.0.

    Input columns: completion, reference.   Output: score (None = cannot verify), verdict, rationale, raw
    (the extracted answer). A missing or unparseable reference abstains: it never rewards.
    """

    name = "math_answer"
    # 2: extraction modes; the rationale names the mode. 3: a hedged final answer is incorrect; a reference with its
    # own delimiters is parsed as given
    version = "3"
    reads = ("completion", "reference")
    tasks = ("math",)  # a code task's reference is a program, not an answer
    Config = MathAnswerConfig

    def __init__(self, config: MathAnswerConfig | None = None):
        self.config = config or MathAnswerConfig()
        self._runner = MainThreadRunner(max(1, self.config.workers))

    def label(self, completion: str, reference: str | None) -> Label:
        if not reference:
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
        todo = [i for i, (_, reference) in enumerate(rows) if reference]
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
