"""RubricJudge: an LLM grades each completion against a rubric, by Prometheus absolute grading or binary principles.

Input columns: messages (the prompt), completion, reference (Prometheus' score-5 answer, when present), rubric (the
prompt's own criteria and weights, if any), task (picks a per-task rubric). Output: score in [0, 1] (None = no
criterion could be read from the judge's reply), confidence, verdict, rationale, raw (the judge's texts, the grade
per criterion or result per principle, and where the rubric came from).

What a row is graded against, first match wins: its generated rubric (with `rubrics: NAME`, the rubrics@NAME stage's
criteria for its prompt, joined by the label stage), its own `rubric` column (with `use_prompt_rubric`), the
`task_rubrics` / `task_principles` entry of its task, else `rubric` / `principles` from params (built-in generic
ones by default). Prometheus mode: one "Feedback: ... [RESULT] n" grade on 1-5 per rubric; a prompt's criteria are
graded one call each and weight-averaged. Principles mode (RLBFF): one call answers yes/no per principle (or, with
`principle_calls: each`, one yes/no call per principle, decided by P(yes)); the score is the weighted share
satisfied. Both report coverage (the weight share that parsed) so a half-read reply is not taken for a confident
one.

A generated rubric's criteria are graded one by one (Prometheus: a call each; principles: yes/no each). Its hard
rules must hold: a response that fails one scores 0, with the rule named in the rationale; principles give the
weighted score. Beside that label (aspect `rubric`), each criterion gets a label of its own, aspect `rubric:c<i>`
(a part: schemas/label.py), so each criterion's score is an entry of the score vector; raw names the criterion, its
kind and weight, and every label of the row names the `rubric_id` it was graded against.
"""

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from rewardmill.schemas.label import part_aspect
from rewardmill.schemas.rubric import rubric_id
from rewardmill.transforms.judges.client import BackendConfig, JudgeRequest, JudgeResponse, Sampling
from rewardmill.transforms.judges.likert import normalize_score
from rewardmill.transforms.judges.reference import TOP_LOGPROBS, response_p_yes, yes_no_vote
from rewardmill.transforms.judges.rubric import (
    SCORES,
    Principle,
    Rubric,
    build_principle,
    build_principles,
    build_prometheus,
    parse_principles,
    parse_prometheus,
    principles_score,
)
from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.contract import GENERATED_RUBRIC
from rewardmill.transforms.labelers.judge_base import (
    JudgeLabeler,
    call_failed,
    first_error,
    judged_answer,
    no_answer_label,
    question_of,
)

DIGITS = 6
MODES = ("prometheus", "principles")
SCALE = (SCORES[0], SCORES[-1])
# A greedy grade read from text alone says nothing about how sure the judge was (no logprobs, one sample), so a
# fully parsed Prometheus grade gets half confidence, like PointwiseJudge's uncalibrated ratings.
CONFIDENCE_UNCALIBRATED = 0.5
EACH_MAX_TOKENS = 4  # one word, and room for "The answer is Yes"

DEFAULT_RUBRIC = {
    "criteria": "Is the response correct and helpful for the instruction?",
    "descriptions": {
        1: "The response is wrong or irrelevant; it does not answer the instruction.",
        2: "The response attempts the instruction but is mostly wrong or unhelpful.",
        3: "The response is partly correct or helpful, with clear errors or omissions.",
        4: "The response is correct and helpful, with minor issues.",
        5: "The response is fully correct, complete and helpful.",
    },
}
DEFAULT_PRINCIPLES = (
    {"name": "accuracy", "text": "The response is factually and logically correct.", "weight": 2.0},
    {"name": "completeness", "text": "The response answers every part of the instruction.", "weight": 1.0},
    {"name": "clarity", "text": "The response is clear and easy to follow.", "weight": 1.0},
)


def criterion_rubric(criterion: str) -> Rubric:
    """A generic 1-5 Prometheus rubric for one criterion of a prompt's own rubric."""
    return Rubric(
        criterion,
        {
            1: "The response does not meet the criterion at all.",
            2: "The response meets a small part of the criterion.",
            3: "The response meets about half of the criterion.",
            4: "The response mostly meets the criterion, with minor gaps.",
            5: "The response fully meets the criterion.",
        },
    )


def to_principles(items) -> tuple[Principle, ...]:
    """Principles from params dicts {name, text, weight}: unknown keys, bad weights or repeated names raise."""
    if not isinstance(items, list | tuple) or not all(isinstance(item, dict) for item in items):
        raise ValueError(f"principles must be a list of {{name, text, weight}} mappings, got {items!r}")
    try:
        principles = tuple(Principle(**item) for item in items)
    except TypeError as exc:  # an unknown or missing key
        raise ValueError(f"principles {list(items)!r}: {exc}") from None
    parse_principles(None, list(principles))  # raises ValueError on an empty list or repeated names
    return principles


def prompt_criteria(rubric) -> list[tuple[str, float]]:
    """(criterion, weight) from a row's `rubric` column. Weight None counts 1; entries without text or with a
    weight that is not a positive finite number are skipped: they could not count toward a weighted score."""
    out = []
    for item in rubric or ():
        text, weight = (item.get("criterion"), item.get("weight")) if isinstance(item, dict) else (None, None)
        weight = 1.0 if weight is None else weight
        number = isinstance(weight, int | float) and not isinstance(weight, bool)
        if isinstance(text, str) and text.strip() and number and math.isfinite(weight) and weight > 0:
            out.append((text.strip(), float(weight)))
    return out


@dataclass(frozen=True)
class Plan:
    """What one row is graded against: where that came from (prompt | task | params) and its criteria."""

    source: str
    kinds: tuple[str, ...] = ()  # a generated rubric: each criterion's kind (hard | principle), in order
    rubrics: tuple[Rubric, ...] = ()  # prometheus: one greedy call per rubric
    weights: tuple[float, ...] = ()  # prometheus: one weight per rubric
    principles: tuple[Principle, ...] = ()  # principles: one call answers them all
    rubric_id: str | None = None  # a generated rubric's version (schemas/rubric.py)


@dataclass(frozen=True)
class RubricJudgeConfig:
    backend: BackendConfig = field(default_factory=BackendConfig)  # which model judges (default: the policy folder)
    mode: Literal["prometheus", "principles"] = "prometheus"  # a 1-5 grade per rubric, or yes/no per principle
    rubric: dict | None = field(default_factory=lambda: dict(DEFAULT_RUBRIC))  # Rubric.from_dict; None = built-in
    task_rubrics: dict[str, dict] = field(default_factory=dict)  # prometheus: task -> rubric, overrides `rubric`
    principles: tuple[dict, ...] = DEFAULT_PRINCIPLES  # principles mode: {name, text, weight} each
    task_principles: dict[str, tuple[dict, ...]] = field(default_factory=dict)  # task -> principles, overrides
    use_prompt_rubric: bool = True  # a row's own `rubric` column (criteria + weights) wins over task and params
    use_reference: bool = True  # prometheus: the row's reference is shown as the score-5 answer when present
    max_tokens: int = 96  # a short feedback, then "[RESULT] n" (or one line per principle)
    # principles: "all" = one call lists every principle ("name: yes" lines); "each" = one yes/no call per
    # principle whose vote is P(yes) >= 0.5 at the answer when the backend gives logprobs (RLBFF scores each
    # principle on its own; small models that cannot keep to the line format still answer one yes/no)
    principle_calls: Literal["all", "each"] = "all"
    pass_threshold: float = 0.5  # rescaled score at or above which the verdict is `correct`
    aspect: str = "rubric"
    # the rubrics@NAME stage whose generated rubric (joined by prompt_id) each row is graded against first
    rubrics: str | None = None
    # a prompt the rubrics stage wrote no rubric for: abstain (score null, no call) or fallback (graded by the
    # precedence above; the label's raw `source` says which rubric it was)
    missing_rubric: Literal["abstain", "fallback"] = "abstain"

    def __post_init__(self):  # build every rubric and principle now, so a typo in params fails at config time
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.rubric is not None:
            Rubric.from_dict(self.rubric)
        for task, rubric in self.task_rubrics.items():
            try:
                Rubric.from_dict(rubric)
            except ValueError as exc:
                raise ValueError(f"task_rubrics.{task}: {exc}") from None
        to_principles(self.principles)
        for task, items in self.task_principles.items():
            try:
                to_principles(items)
            except ValueError as exc:
                raise ValueError(f"task_principles.{task}: {exc}") from None
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens!r}")
        if self.missing_rubric not in ("abstain", "fallback"):
            raise ValueError(f"missing_rubric must be 'abstain' or 'fallback', got {self.missing_rubric!r}")
        if self.principle_calls not in ("all", "each"):
            raise ValueError(f"principle_calls must be 'all' or 'each', got {self.principle_calls!r}")
        if not 0 <= self.pass_threshold <= 1:
            raise ValueError(f"pass_threshold must be in [0, 1], got {self.pass_threshold!r}")


class RubricJudge(JudgeLabeler):
    name = "rubric_judge"
    # 2: reads the answer after reasoning; no substance = 0.0 without a call. 3: a generated rubric's criteria are
    # labels of their own (aspect rubric:c<i>) and every label names its rubric_id
    version = "3"
    reads = ("messages", "completion", "reference", "rubric", "task")
    Config = RubricJudgeConfig

    def __init__(self, config: RubricJudgeConfig | None = None):
        super().__init__()
        self.config = config or RubricJudgeConfig()
        self.rubric_set = self.config.rubrics
        if self.rubric_set is not None:
            self.reads = (*type(self).reads, GENERATED_RUBRIC)

    def plan(self, rubric, task: str | None, generated=None) -> Plan:
        """Pure: the criteria of one row, by precedence generated > prompt > task > params."""
        cfg = self.config
        if generated_criteria := prompt_criteria(generated):
            kinds = tuple(kind_of(item) for item in generated if prompt_criteria([item]))
            texts, weights = [c for c, _ in generated_criteria], tuple(w for _, w in generated_criteria)
            version = rubric_id(list(generated))
            if cfg.mode == "prometheus":
                return Plan("generated", kinds, tuple(criterion_rubric(c) for c in texts), weights, rubric_id=version)
            named = (Principle(f"criterion {i}", c, w) for i, (c, w) in enumerate(generated_criteria, 1))
            return Plan("generated", kinds, principles=tuple(named), rubric_id=version)
        criteria = prompt_criteria(rubric) if cfg.use_prompt_rubric else []
        if cfg.mode == "prometheus":
            if criteria:
                return Plan(
                    "prompt",
                    rubrics=tuple(criterion_rubric(c) for c, _ in criteria),
                    weights=tuple(w for _, w in criteria),
                )
            if task in cfg.task_rubrics:
                return Plan("task", rubrics=(Rubric.from_dict(cfg.task_rubrics[task]),), weights=(1.0,))
            return Plan("params", rubrics=(Rubric.from_dict(cfg.rubric or DEFAULT_RUBRIC),), weights=(1.0,))
        if criteria:
            named = (Principle(f"criterion {i}", c, w) for i, (c, w) in enumerate(criteria, 1))
            return Plan("prompt", principles=tuple(named))
        if task in cfg.task_principles:
            return Plan("task", principles=to_principles(cfg.task_principles[task]))
        return Plan("params", principles=to_principles(cfg.principles))

    def requests(self, plan: Plan, messages, completion: str, reference: str | None) -> list[JudgeRequest]:
        """Greedy requests for one row: one per Prometheus rubric, or one listing every principle."""
        cfg, question, completion = self.config, question_of(messages), judged_answer(completion)
        sampling = Sampling(temperature=0.0, max_tokens=cfg.max_tokens)
        if cfg.mode == "principles" and (cfg.principle_calls == "each" or plan.source == "generated"):
            tokens = min(cfg.max_tokens, EACH_MAX_TOKENS)
            each = Sampling(temperature=0.0, max_tokens=tokens, top_logprobs=TOP_LOGPROBS)
            return [JudgeRequest(build_principle(question, completion, p), each) for p in plan.principles]
        if cfg.mode == "principles":
            return [JudgeRequest(build_principles(question, completion, list(plan.principles)), sampling)]
        shown = reference if cfg.use_reference and isinstance(reference, str) and reference.strip() else None
        return [JudgeRequest(build_prometheus(question, completion, r, shown), sampling) for r in plan.rubrics]

    def label(self, messages, completion: str, reference=None, rubric=None, task=None, generated=None) -> Label:
        row = (messages, completion, reference, rubric, task) + ((generated,) if self.rubric_set is not None else ())
        return self.label_many([row])[0]

    def label_many(self, rows: list[tuple]) -> list[Label | list[Label]]:
        """Rows whose answer has no substance get no_answer_label and no call; so do rows of a prompt with no generated
        rubric (with `rubrics` and missing_rubric abstain: an abstain label); the others are graded (a generated
        rubric's: the rubric label, then one per criterion)."""
        cfg = self.config
        unrubricked = {
            i
            for i, row in enumerate(rows)
            if self.rubric_set is not None and cfg.missing_rubric == "abstain" and not prompt_criteria(row[5])
        }
        ask = [i for i, row in enumerate(rows) if i not in unrubricked and not self.screens_out(judged_answer(row[1]))]
        labels = dict(zip(ask, self._grade([rows[i] for i in ask]), strict=True)) if ask else {}
        missing = f"rubric set {self.rubric_set!r} has no rubric for this prompt (rejected or not chosen by its stage)"
        for i in unrubricked:
            labels[i] = self._abstain(missing, {"mode": cfg.mode, "source": "none", "coverage": 0.0})
        return [labels.get(i) or no_answer_label(cfg.aspect) for i in range(len(rows))]

    def _grade(self, rows: list[tuple]) -> list[Label | list[Label]]:
        plans = [self.plan(row[3], row[4], row[5] if len(row) > 5 else None) for row in rows]
        requests = [self.requests(plan, *row[:3]) for plan, row in zip(plans, rows, strict=True)]
        flat = [r for row in requests for r in row]
        replies = self.client.complete(flat) if flat else []
        labels, start = [], 0
        for plan, row in zip(plans, requests, strict=True):
            labels.append(self.to_label(plan, replies[start : start + len(row)]))
            start += len(row)
        return labels

    def to_label(self, plan: Plan, replies: list[JudgeResponse]) -> Label | list[Label]:
        """Pure: the judge's replies for one row's plan -> Label (a generated rubric's: the rubric label, then one
        per criterion). Every call failed: rejected (retried next run); some failed: their criteria count as
        unparsed. Nothing readable: abstain with the texts kept."""
        cfg = self.config
        if all(r.error for r in replies):
            return call_failed(first_error(replies), cfg.aspect)
        texts, errors = [r.text for r in replies], [r.error for r in replies]
        raw = {"mode": cfg.mode, "source": plan.source, "texts": texts, "errors": errors}
        raw |= {"rubric_id": plan.rubric_id} if plan.rubric_id else {}
        if cfg.mode == "principles":
            principles = list(plan.principles)
            if cfg.principle_calls == "each" or plan.source == "generated":
                results = {p.name: yes_no_vote(r) for p, r in zip(principles, replies, strict=True)}
                raw["p_yes"] = {p.name: _rounded(response_p_yes(r)) for p, r in zip(principles, replies, strict=True)}
            else:
                results = parse_principles(texts[0], principles)
            summary = principles_score(results, principles)
            raw |= {"results": results, "weights": {p.name: p.weight for p in principles}}
            raw["coverage"] = round(summary.coverage, DIGITS) if summary else 0.0
            if summary is None:
                return self._abstain("the judge answered no principle readably", raw)
            marks = ", ".join(f"{name} {_mark(value)}" for name, value in results.items())
            rationale = f"{plan.source} principles: {marks}"
            if plan.kinds:
                scores = [None if v is None else float(v) for v in results.values()]
                return self._generated(plan, scores, summary.score, summary.coverage, rationale, raw)
            return self._graded(summary.score, summary.coverage, rationale, raw)
        verdicts = [parse_prometheus(r.text) if not r.error else None for r in replies]
        grades = [v.score if v else None for v in verdicts]
        graded = [(g, w) for g, w in zip(grades, plan.weights, strict=True) if g is not None]
        coverage = sum(w for _, w in graded) / sum(plan.weights)
        raw |= {"criteria": [r.criteria for r in plan.rubrics], "weights": list(plan.weights), "grades": grades}
        raw["coverage"] = round(coverage, DIGITS)
        if not graded:
            return self._abstain("the judge gave no readable grade", raw)
        score = sum(normalize_score(g, SCALE) * w for g, w in graded) / sum(w for _, w in graded)
        shown = ", ".join("?" if g is None else str(g) for g in grades)
        feedback = next((v.feedback for v in verdicts if v and v.feedback), "") or ""
        rationale = f"Prometheus grade {shown} of 5 on the {plan.source} rubric. {feedback}".strip()
        if plan.kinds:
            scores = [None if g is None else normalize_score(g, SCALE) for g in grades]
            return self._generated(plan, scores, score, coverage * CONFIDENCE_UNCALIBRATED, rationale, raw)
        return self._graded(score, coverage * CONFIDENCE_UNCALIBRATED, rationale, raw)

    def _generated(
        self, plan: Plan, scores: list, score: float, confidence: float, rationale: str, raw: dict
    ) -> list[Label]:
        """A generated rubric's labels: the rubric's (each criterion's score also in raw; a failed hard rule, a no or
        a grade below the middle, scores 0), then one per criterion."""
        failed = hard_failures(plan.kinds, scores)
        raw |= {"kinds": list(plan.kinds), "criterion_scores": [_rounded(s) for s in scores], "hard_failed": failed}
        if failed:
            rationale = f"hard rule {', '.join(str(i) for i in failed)} failed. {rationale}"
            score = 0.0
        whole = self._graded(score, confidence, rationale, raw)
        return [whole, *self.criterion_labels(plan, scores, whole.confidence)]

    def criterion_labels(self, plan: Plan, scores: list, confidence: float) -> list[Label]:
        """Pure: one label per criterion of a generated rubric, aspect `<aspect>:c<i>`: its score (None = its reply
        was not read: abstain), correct when it holds (a hard rule: score >= 0.5; a principle: pass_threshold)."""
        cfg = self.config
        texts = [r.criteria for r in plan.rubrics] or [p.text for p in plan.principles]
        weights = list(plan.weights) or [p.weight for p in plan.principles]
        out = []
        for i, (kind, text, weight, s) in enumerate(zip(plan.kinds, texts, weights, scores, strict=True), 1):
            aspect = part_aspect(cfg.aspect, f"c{i}")
            raw = json.dumps(
                {"rubric_id": plan.rubric_id, "index": i, "criterion": text, "kind": kind, "weight": weight},
                ensure_ascii=False,
            )
            if s is None:
                out.append(Label(None, 0.0, "abstain", f"criterion {i} was not read", raw=raw, aspect=aspect))
                continue
            holds = s >= (0.5 if kind == "hard" else cfg.pass_threshold)
            why = f"{kind} {i} {'holds' if holds else 'fails'}: {text}"[:500]
            verdict = "correct" if holds else "incorrect"
            out.append(Label(_rounded(s), confidence, verdict, why, raw=raw, aspect=aspect))
        return out

    def _abstain(self, reason: str, raw: dict) -> Label:
        return Label(None, 0.0, "abstain", reason, raw=json.dumps(raw, ensure_ascii=False), aspect=self.config.aspect)

    def _graded(self, score: float, confidence: float, rationale: str, raw: dict) -> Label:
        cfg = self.config
        verdict = "correct" if score >= cfg.pass_threshold else "incorrect"
        raw_text = json.dumps(raw, ensure_ascii=False)
        return Label(
            score, round(min(1.0, confidence), DIGITS), verdict, rationale[:500], raw=raw_text, aspect=cfg.aspect
        )

    @classmethod
    def summarize(cls, labels: list[dict]) -> dict:
        """Dataset statistics for the stage's metrics: mean coverage, labels by rubric source, and in principles
        mode the satisfaction rate per named principle (params / task) plus one rate over prompts' own criteria,
        whose "criterion n" names mean something different on every prompt."""
        graded = [raw for raw in (_rubric_raw(row.get("raw")) for row in labels) if raw is not None]
        summary = {
            "labels": len(labels),
            "mean_coverage": _mean([raw["coverage"] for raw in graded]),
            "sources": dict(sorted(Counter(raw["source"] for raw in graded).items())),
        }
        principled = [raw for raw in graded if raw["mode"] == "principles" and "results" in raw]
        if principled:
            named: dict[str, list[bool]] = {}
            for raw in principled:
                if raw["source"] not in ("prompt", "generated"):  # their "criterion n" differ on every prompt
                    for name, value in raw["results"].items():
                        named.setdefault(name, []).extend([value] if value is not None else [])
            prompt = [
                v for raw in principled if raw["source"] in ("prompt", "generated") for v in raw["results"].values()
            ]
            summary["principle_satisfaction"] = {name: _mean(values) for name, values in sorted(named.items())}
            summary["prompt_criteria_satisfaction"] = _mean([v for v in prompt if v is not None])
        return summary


def kind_of(item) -> str:
    """A generated criterion's kind (hard | principle; a rubric without kinds has principles)."""
    kind = item.get("kind") if isinstance(item, dict) else None
    return kind if kind in ("hard", "principle") else "principle"


def hard_failures(kinds: tuple[str, ...], scores: list) -> list[int]:
    """1-based numbers of the hard rules whose score is below the middle (a no, or a grade of 1-2 of 5); an unread
    criterion is not a failure (coverage says it was not read)."""
    return [
        i
        for i, (kind, s) in enumerate(zip(kinds, scores, strict=True), 1)
        if kind == "hard" and s is not None and s < 0.5
    ]


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, DIGITS)


def _mark(value: bool | None) -> str:
    return "?" if value is None else "yes" if value else "no"


def _mean(values: list) -> float | None:
    return round(sum(values) / len(values), DIGITS) if values else None


def _rubric_raw(raw: str | None) -> dict | None:
    """A label's raw JSON when it is this judge's record (labels from a failed labeler carry none)."""
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        return None
    return data if isinstance(data, dict) and data.get("mode") in MODES and "coverage" in data else None
