"""Split a completion into reasoning steps, each with its exact character span in the completion.

Process-reward labeling scores prefixes of a completion (Math-Shepherd, OmegaPRM) and TRL's stepwise format stores
the steps as a list, so a segmentation must be reproducible from the completion alone: every `Step` keeps the
span it came from (`completion[start:end] == text`), and `join_prefix` returns the exact text through a step, from
which continuations are generated.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass

STRATEGIES = ("paragraphs", "lines", "markers", "sentences", "regex")


@dataclass(frozen=True)
class Step:
    """One step: its 0-based position, its text (surrounding whitespace stripped) and its span in the completion."""

    index: int
    text: str
    start: int
    end: int


# A blank line: a newline, optional whitespace, another newline (\r\n endings included, since \s matches \r).
_BLANK_LINE = re.compile(r"\n\s*\n")
_LINE_BREAK = re.compile(r"\r\n?|\n")
_H = r"[^\S\n]"  # horizontal whitespace
# "Step 1:", "Step 2.", "**Step 3**", "## Step 4", "- Step 5" at a line start.
_STEP_MARKER = re.compile(
    rf"^{_H}*(?:#{{1,6}}{_H}*|[-*+]{_H}+)?(?:\*\*|__)?{_H}*step{_H}*\d+\b", re.IGNORECASE | re.MULTILINE
)
# "1." / "2)" at a line start, followed by whitespace (so "3.14 is pi" is not a marker).
_LIST_MARKER = re.compile(rf"^{_H}*(?:\*\*|__)?\d{{1,3}}[.)](?=\s|\Z)", re.MULTILINE)
# Sentence-ending punctuation, optional closing quotes/brackets, then whitespace (so "3.14" never ends one).
_SENTENCE_END = re.compile(r"([.!?]+)[\"'\u201d\u2019)\]]*(?=\s)")
_ENUMERATOR = re.compile(r"\d{1,3}\.")
# Lower-cased tokens whose final period does not end a sentence.
ABBREVIATIONS = frozenset(
    "e.g. i.e. cf. vs. viz. approx. resp. ca. al. mr. mrs. ms. dr. prof. sr. jr. st. fig. figs. eq. eqs.".split()
)


def segment(
    completion: str, strategy: str = "paragraphs", pattern: str | None = None, max_steps: int | None = None
) -> list[Step]:
    """Split `completion` into `Step`s with `strategy` (one of `STRATEGIES`).

    - paragraphs: split on blank lines (Qwen, "Lessons of Developing PRMs").
    - lines: every non-empty line.
    - markers: a step starts at each "Step N" marker at a line start ("Step 1:", "**Step 2**", "## Step 3");
      when the completion has none, at each numbered-list line ("1.", "2)"). "Step N" markers win because
      numbered lists inside a step are usually its sub-items. Text before the first marker is its own step.
    - sentences: after . ! ? followed by whitespace (never inside a number like 3.14, not after abbreviations
      like "e.g." nor after a list number "1." that opens a line), and at blank lines.
    - regex: `pattern` (required, only for this strategy) is a regular expression matching the separators.

    Pieces that are empty after stripping are skipped; an empty or whitespace-only completion gives []. With
    `max_steps`, steps beyond it are merged into the last kept step, so the steps still cover all the text.
    Raises ValueError for an unknown strategy, a missing or invalid pattern, or max_steps < 1.
    """
    if not isinstance(completion, str):
        raise TypeError(f"completion must be a str, got {type(completion).__name__}")
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown segmentation strategy {strategy!r}; allowed: {', '.join(STRATEGIES)}")
    if strategy == "regex" and not pattern:
        raise ValueError("segmentation strategy 'regex' needs a separator `pattern`, e.g. r'\\n\\s*\\n'")
    if strategy != "regex" and pattern is not None:
        raise ValueError(f"`pattern` is only used by strategy 'regex', not {strategy!r}; allowed: regex")
    if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1):
        raise ValueError(f"max_steps must be a positive integer or None, got {max_steps!r}")

    separators = _SEPARATORS[strategy](completion, pattern)
    spans = [span for span in (_strip(completion, s, e) for s, e in _gaps(separators, len(completion))) if span]
    if max_steps is not None and len(spans) > max_steps:
        # The tail is merged, never dropped: continuations from the last step must still see the whole text.
        spans = [*spans[: max_steps - 1], (spans[max_steps - 1][0], spans[-1][1])]
    return [Step(i, completion[s:e], s, e) for i, (s, e) in enumerate(spans)]


def join_prefix(completion: str, steps: list[Step], upto: int) -> str:
    """The exact text of `completion` from its start through the end of step `upto` (0-based, not negative).

    This is the prefix a continuation is generated from when estimating whether step `upto` is still correct.
    Raises IndexError when `upto` names no step, ValueError when `steps` were not cut from `completion`.
    """
    if not 0 <= upto < len(steps):
        raise IndexError(f"step {upto} out of range for {len(steps)} step(s)")
    step = steps[upto]
    if completion[step.start : step.end] != step.text:
        raise ValueError(f"step {upto}'s span [{step.start}, {step.end}) does not hold its text in this completion")
    return completion[: step.end]


def _paragraphs(text: str, pattern: str | None) -> list[tuple[int, int]]:
    return [m.span() for m in _BLANK_LINE.finditer(text)]


def _lines(text: str, pattern: str | None) -> list[tuple[int, int]]:
    return [m.span() for m in _LINE_BREAK.finditer(text)]


def _markers(text: str, pattern: str | None) -> list[tuple[int, int]]:
    starts = [m.start() for m in _STEP_MARKER.finditer(text)] or [m.start() for m in _LIST_MARKER.finditer(text)]
    return [(p, p) for p in starts]


def _sentences(text: str, pattern: str | None) -> list[tuple[int, int]]:
    cuts = []
    for m in _SENTENCE_END.finditer(text):
        token_start = max(text.rfind(c, 0, m.start()) for c in " \t\n\r\f\v") + 1
        token = text[token_start : m.end(1)].lstrip("(\"'\u201c\u2018[").lower()
        if token in ABBREVIATIONS:
            continue
        line_start = text.rfind("\n", 0, token_start) + 1
        if _ENUMERATOR.fullmatch(token) and not text[line_start:token_start].strip():
            continue  # "1. Compute x" opens a numbered line; it is not a one-word sentence
        cuts.append((m.end(), m.end()))
    return sorted(cuts + _paragraphs(text, None))


def _regex(text: str, pattern: str | None) -> list[tuple[int, int]]:
    try:
        compiled = re.compile(pattern or "")
    except re.error as exc:
        raise ValueError(f"segmentation strategy 'regex': invalid separator pattern {pattern!r}: {exc}") from exc
    return [m.span() for m in compiled.finditer(text)]


_SEPARATORS = {
    "paragraphs": _paragraphs,
    "lines": _lines,
    "markers": _markers,
    "sentences": _sentences,
    "regex": _regex,
}


def _gaps(separators: Iterable[tuple[int, int]], length: int) -> list[tuple[int, int]]:
    """The spans between sorted separator spans (zero-width separators are cut points)."""
    gaps, position = [], 0
    for start, end in separators:
        if start > position:
            gaps.append((position, start))
        position = max(position, end)
    if position < length:
        gaps.append((position, length))
    return gaps


def _strip(text: str, start: int, end: int) -> tuple[int, int] | None:
    """Shrink [start, end) past surrounding whitespace; None when nothing is left."""
    piece = text[start:end]
    left = len(piece) - len(piece.lstrip())
    right = len(piece.rstrip())
    return (start + left, start + right) if right > left else None
