"""Rubric criteria, the pure pieces: read the criteria a judge wrote, and version them.

A writer is asked for one criterion per line, `1. [hard] (weight 5) The answer is 12.`; small models drift from any
format, so the reader is lenient where it can be safely (bullets, numbering, bold, `weight: 3`, RaR's tier words
`essential` / `important` / `optional`, `must` for a hard rule) and strict where it must be: a line counts only with
a list marker or a kind tag (so a preamble or a closing remark is never a criterion), and a criterion needs words.
"""

import math
import re
from dataclasses import dataclass

from rewardmill.schemas.rubric import RUBRIC_KINDS
from rewardmill.schemas.rubric import rubric_id as schema_rubric_id
from rewardmill.transforms.judges.likert import strip_markup

MAX_WEIGHT = 10.0
MIN_WORDS = 3  # "Is correct." says nothing a judge can check
MAX_CHARS = 300
# RaR's categorical tiers as weights; "pitfall" criteria (what a response must avoid) are hard rules.
TIERS = {"essential": 5.0, "important": 3.0, "optional": 1.0, "pitfall": 5.0}

_MARKER = re.compile(r"^\s*(?:[-*•]|\(?\d{1,2}[.):]|\(?[a-z][.)])\s+")
_WORD = r"hard(?:\s+rule)?|rule|principle|essential|important|optional|pitfall"
# A kind tag: bracketed ("[hard]", "(principle)") or followed by a colon ("Essential:"), so prose that merely starts
# with "Optional" is not read as a tier.
_TAG = re.compile(rf"^\s*(?:\[\s*({_WORD})\s*\]|\(\s*({_WORD})\s*\)|({_WORD})\s*:)\s*", re.I)
_WEIGHT = re.compile(
    r"^\s*[\[(]\s*(?:weight\s*[:=]?\s*)?(\d+(?:\.\d+)?)\s*(?:points?|pts)?\s*[\])]\s*:?\s*"  # leading "(weight 3)"
    r"|[\[(]\s*weight\s*[:=]?\s*(\d+(?:\.\d+)?)\s*[\])]"  # "(weight 3)" anywhere
    r"|[\[(]\s*(\d+(?:\.\d+)?)\s*(?:points?|pts)\s*[\])]"  # "(3 points)" anywhere
    r"|\bweight\s*[:=]\s*(\d+(?:\.\d+)?)",  # "weight: 3"
    re.I,
)
_HARD_WORDS = re.compile(r"^(?:the (?:response|answer) )?(?:must|must not|never|always)\b", re.I)


@dataclass(frozen=True)
class Criterion:
    """One checkable statement about a good response, its weight (> 0) and kind: hard (must hold) or principle."""

    criterion: str
    weight: float = 1.0
    kind: str = "principle"

    def __post_init__(self):
        if not isinstance(self.criterion, str) or not self.criterion.strip():
            raise ValueError("a criterion needs text")
        if self.kind not in RUBRIC_KINDS:
            raise ValueError(f"criterion kind must be one of {RUBRIC_KINDS}, got {self.kind!r}")
        weight = self.weight
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight) or weight <= 0:
            raise ValueError(f"criterion weight must be a positive finite number, got {weight!r}")

    def as_row(self) -> dict:
        return {"criterion": self.criterion, "weight": float(self.weight), "kind": self.kind}


def parse_criteria(text: str | None, max_criteria: int = 8, shown: str = "") -> list[Criterion]:
    """The criteria in a writer's reply, in order, at most `max_criteria`, repeated ones (same words) once. Lines
    without a list marker or kind tag, or with fewer than MIN_WORDS words, are not criteria; nor is a line whose words
    all appear, in order, in `shown` (what the writer was shown: an echo of the format's example, the request or the
    reference says nothing about this prompt's responses). Never raises."""
    out: list[Criterion] = []
    seen: set[str] = set()
    echo = f" {_words(shown)} "
    for line in strip_markup(text).splitlines() if isinstance(text, str) else ():
        item = parse_line(line)
        if item is None or (key := _words(item.criterion)) in seen or f" {key} " in echo:
            continue
        seen.add(key)
        out.append(item)
        if len(out) >= max_criteria:
            break
    return out


def parse_line(line: str) -> Criterion | None:
    """One criterion line -> Criterion, or None when the line is not one."""
    marker = _MARKER.match(line)
    rest = line[marker.end() :] if marker else line
    kind, weight, tagged = "principle", None, False
    for _ in range(3):  # tags and a weight lead in any order: "[hard] (weight 5) ...", "(weight 5) [hard] ..."
        if tag := _TAG.match(rest):
            word = next(g for g in tag.groups() if g).lower()
            kind = "hard" if word.startswith(("hard", "rule", "pitfall")) else "principle"
            weight = TIERS.get(word, weight)
            rest, tagged = rest[tag.end() :], True
        elif (lead := _WEIGHT.match(rest)) and lead.group(1):
            weight, rest = _weight(lead.group(1), weight), rest[lead.end() :]
        else:
            break
    if not marker and not tagged:
        return None
    if found := _WEIGHT.search(rest):
        weight = _weight(next(g for g in found.groups() if g), weight)
        rest = rest[: found.start()] + " " + rest[found.end() :]
    text = re.sub(r"\s+", " ", rest).strip(" \t-–:;\"'")
    if re.fullmatch(r"<[^<>]*>\.?", text):  # a template slot ("<a rule ...>") copied, not filled in
        return None
    if kind == "principle" and _HARD_WORDS.match(text):
        kind = "hard"
    if len(_words(text).split()) < MIN_WORDS:
        return None
    return Criterion(text[:MAX_CHARS], weight if weight is not None else 1.0, kind)


def _weight(number: str, current: float | None) -> float | None:
    value = float(number)
    return value if 0 < value <= MAX_WEIGHT else current


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def rubric_id(criteria: list[Criterion]) -> str:
    """The rubric's version: sha256 of its canonical criteria (text, weight, kind, in order)."""
    return schema_rubric_id([c.as_row() for c in criteria])


def render(criteria: list[Criterion]) -> str:
    """Criteria as numbered lines in the format writers are asked for (what a refine round shows the writer)."""
    return "\n".join(f"{i}. [{c.kind}] (weight {c.weight:g}) {c.criterion}" for i, c in enumerate(criteria, 1))
