"""Rubric judges, the pure pieces: Prometheus absolute grading and binary principles (RLBFF).

Prometheus: the judge sees the task description, the instruction, the response, an optional reference answer
(scored 5) and a score rubric (criteria + a description for each score 1-5), and writes "Feedback: ... [RESULT] n".
Principles: one yes/no line per named principle ("accuracy: yes"); the reward is the weighted share satisfied,
reported with its coverage so a reply that skipped half the principles is not read as a confident score.
"""

import math
import re
from dataclasses import dataclass
from typing import NamedTuple

from rewardmill.transforms.judges.likert import parse_likert, strip_markup
from rewardmill.transforms.judges.reference import parse_yes_no

SCORES = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class Rubric:
    """A Prometheus score rubric: the criteria (a question) and a description for each score 1-5."""

    criteria: str
    descriptions: dict[int, str]

    def __post_init__(self):
        if not isinstance(self.criteria, str) or not self.criteria.strip():
            raise ValueError("rubric criteria must be a non-empty string")
        if not isinstance(self.descriptions, dict) or sorted(self.descriptions) != list(SCORES):
            got = sorted(self.descriptions) if isinstance(self.descriptions, dict) else self.descriptions
            raise ValueError(f"rubric descriptions must have exactly the scores {list(SCORES)}, got {got!r}")
        for score, text in self.descriptions.items():
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"rubric description for score {score} must be a non-empty string")

    @classmethod
    def from_dict(cls, data: dict) -> "Rubric":
        """From params: {criteria, descriptions: {1: ..., "2": ...}} or Prometheus' flat {criteria,
        score1_description, ..., score5_description}. Unknown keys and missing scores raise ValueError."""
        if not isinstance(data, dict):
            raise ValueError(f"a rubric must be a mapping, got {type(data).__name__}")
        flat = {f"score{s}_description" for s in SCORES}
        unknown = set(data) - {"criteria", "descriptions"} - flat
        if unknown:
            raise ValueError(f"unknown rubric keys {sorted(unknown)}; expected criteria and descriptions")
        if "criteria" not in data:
            raise ValueError("a rubric needs criteria")
        if "descriptions" in data and flat & set(data):
            raise ValueError("give rubric descriptions either as `descriptions` or as scoreN_description, not both")
        raw = data.get("descriptions")
        if raw is None:
            raw = {s: data[f"score{s}_description"] for s in SCORES if f"score{s}_description" in data}
        if not isinstance(raw, dict):
            raise ValueError(f"rubric descriptions must be a mapping of score -> text, got {type(raw).__name__}")
        descriptions = {}
        for key, text in raw.items():
            if isinstance(key, bool) or not str(key).strip().isdigit():
                raise ValueError(f"rubric description keys must be the scores {list(SCORES)}, got {key!r}")
            descriptions[int(key)] = text
        return cls(data["criteria"], descriptions)

    def render(self) -> str:
        """The rubric block Prometheus was trained on: "[criteria]" then "Score n: description" lines."""
        return "\n".join([f"[{self.criteria.strip()}]"] + [f"Score {s}: {self.descriptions[s]}" for s in SCORES])


def build_prometheus(
    instruction: str, response: str, rubric: Rubric, reference: str | None = None
) -> tuple[dict, ...]:
    """System + user messages in Prometheus' absolute-grading layout; the reference section only when given."""
    with_reference = "a reference answer that gets a score of 5, " if reference is not None else ""
    sections = [
        "###Task Description:\n"
        f"An instruction (might include an Input inside it), a response to evaluate, {with_reference}"
        "and a score rubric representing an evaluation criterion are given.\n"
        "1. Write a short feedback that assesses the response strictly by the score rubric, not in general.\n"
        "2. Then write a score, an integer from 1 to 5, referring to the score rubric.\n"
        '3. The output format must be: "Feedback: (feedback for the criterion) [RESULT] (an integer from 1 to 5)"\n'
        "4. Write nothing else.",
        f"###The instruction to evaluate:\n{instruction}",
        f"###Response to evaluate:\n{response}",
    ]
    if reference is not None:
        sections.append(f"###Reference Answer (Score 5):\n{reference}")
    sections += [f"###Score Rubrics:\n{rubric.render()}", "###Feedback:"]
    system = "You are a fair judge. You give clear, objective feedback based only on the score rubric, then a score."
    return ({"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(sections)})


class PrometheusVerdict(NamedTuple):
    """score 1-5 or None; feedback: the text before [RESULT] without its "Feedback:" label (None with no score)."""

    score: int | None
    feedback: str | None


def parse_prometheus(text: str | None) -> PrometheusVerdict:
    """Lenient parse of "Feedback: ... [RESULT] n" (the last [RESULT] counts; "Score: n" and a lone digit are
    accepted too, as in parse_likert). Never raises on model output."""
    verdict = parse_likert(text, (1, 5))
    return PrometheusVerdict(verdict.score, verdict.rationale)


@dataclass(frozen=True)
class Principle:
    """A binary principle (RLBFF): a short name the judge repeats ("accuracy"), what it means, and its weight."""

    name: str
    text: str
    weight: float = 1.0

    def __post_init__(self):
        if not isinstance(self.name, str) or not _key(self.name) or re.search(r"[:=\n]", self.name):
            raise ValueError(f"principle name must be non-empty, without ':', '=' or newlines: {self.name!r}")
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValueError(f"principle {self.name!r} needs a non-empty text")
        if isinstance(self.weight, bool) or not isinstance(self.weight, int | float) or not self.weight > 0:
            raise ValueError(f"principle {self.name!r} weight must be a positive number, got {self.weight!r}")
        if not math.isfinite(self.weight):
            raise ValueError(f"principle {self.name!r} weight must be finite, got {self.weight!r}")


def _key(name: str) -> str:
    """How a principle name is matched in replies: lower case, bullets/numbering dropped, _ - and spaces as one."""
    name = re.sub(r"^[\s\-*•\d.)]*", "", name.lower())
    return re.sub(r"[\s_\-]+", " ", name).strip()


def _index(principles: list[Principle]) -> dict[str, Principle]:
    index = {_key(p.name): p for p in principles}
    if not principles or len(index) != len(principles):
        raise ValueError(f"principles must be non-empty with distinct names, got {[p.name for p in principles]}")
    return index


def build_principles(instruction: str, response: str, principles: list[Principle]) -> tuple[dict, ...]:
    """System + user messages asking for one "name: yes" / "name: no" line per principle, in the given order."""
    _index(principles)
    lines = "\n".join(f"{p.name}: yes or no" for p in principles)
    system = (
        "You check a response against principles. For each principle write yes if the response satisfies it, "
        f"otherwise no.\nReply with exactly these lines and nothing else:\n{lines}"
    )
    listed = "\n".join(f"- {p.name}: {p.text}" for p in principles)
    user = f"Instruction:\n{instruction}\n\nResponse:\n{response}\n\nPrinciples:\n{listed}\n\nAnswer each principle."
    return ({"role": "system", "content": system}, {"role": "user", "content": user})


def build_principle(instruction: str, response: str, principle: Principle) -> tuple[dict, ...]:
    """System + user messages asking whether `response` satisfies one principle: one word, Yes or No (the format
    `parse_yes_no` and `p_yes` read), so P(yes) at the answer can decide even when the text says more."""
    system = (
        "You check whether a response satisfies a principle. Judge only that principle.\n"
        "Reply with one word: Yes or No."
    )
    user = (
        f"Instruction:\n{instruction}\n\nResponse:\n{response}\n\nPrinciple ({principle.name}): {principle.text}\n\n"
        "Does the response satisfy the principle? Reply Yes or No."
    )
    return ({"role": "system", "content": system}, {"role": "user", "content": user})


# A plain search for the first separator: a lazy "(.*?)\s*:" pattern is quadratic on long lines without one.
_SEPARATOR = re.compile(r":|=|\s[-–]\s")


def parse_principles(text: str | None, principles: list[Principle]) -> dict[str, bool | None]:
    """{principle name: True | False | None} from "name: yes" lines (bold, bullets, numbering, case and _/-/space
    differences tolerated). The first line per principle counts; missing or unclear lines give None."""
    index = _index(principles)
    results: dict[str, bool | None] = {p.name: None for p in principles}
    seen: set[str] = set()
    for line in strip_markup(text).splitlines() if isinstance(text, str) else ():
        separator = _SEPARATOR.search(line)
        principle = index.get(_key(line[: separator.start()])) if separator else None
        if principle is None or principle.name in seen:
            continue
        seen.add(principle.name)
        results[principle.name] = parse_yes_no(line[separator.end() :]).value
    return results


class PrincipleScore(NamedTuple):
    """score: weighted share of parsed principles satisfied; coverage: weight share of principles that parsed."""

    score: float
    coverage: float


def principles_score(results: dict[str, bool | None], principles: list[Principle]) -> PrincipleScore | None:
    """Weighted fraction satisfied over the principles that parsed, with coverage; None when none parsed."""
    total = sum(p.weight for p in principles)
    parsed = [p for p in principles if results.get(p.name) is not None]
    parsed_weight = sum(p.weight for p in parsed)
    if not parsed:
        return None
    satisfied = sum(p.weight for p in parsed if results[p.name])
    return PrincipleScore(satisfied / parsed_weight, parsed_weight / total)
