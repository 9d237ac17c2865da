"""StepLabeler: step-level (process) labels for a chunk of rollouts, by Monte Carlo, binary search, judge or both.

Input: rollout rows (ROLLOUT_V2: completion, messages, reference). Output: STEP_LABEL_V1 rows, one per step, and
reject rows (reason + detail) for rollouts that cannot be step-labeled (no steps, no reference, a final answer the
rule verifier cannot check, a judge that did not answer, MC and judge disagreeing under `consensus`).

Methods (params `steps.NAME.method`):
- `mc` (Math-Shepherd): k continuations from every step prefix; soft label = share reaching the reference answer
  (checked by math_answer), hard label = any does.
- `binary_search` (OmegaPRM): the same labels for the first error with ~log2(steps) estimates; a rollout whose final
  answer is right needs none.
- `judge` (ProcessBench style): an LLM names the earliest wrong step (or none).
- `consensus` ("Lessons of Developing PRMs"): `search` (mc or binary_search) and the judge; a rollout's labels are
  kept only when both put the first error at the same step. Both answers are kept in `raw`.
Work is batched across the chunk in rounds (`run_rounds`): every pending prefix of every rollout in one call.
"""

import json
from dataclasses import dataclass, field, replace
from typing import Literal

from rewardmill.schemas.step import BASE_METHODS, PSEUDO_REFERENCE
from rewardmill.transforms.judges.backends import make_client
from rewardmill.transforms.judges.client import BackendConfig, JudgeRequest, Sampling
from rewardmill.transforms.judges.step_critique import build_step_critique, parse_first_error
from rewardmill.transforms.labelers.judge_base import question_of
from rewardmill.transforms.labelers.math_answer import MathAnswerConfig, MathAnswerVerifier
from rewardmill.transforms.labelers.self_consistency import SelfConsistencyConfig
from rewardmill.transforms.steps.consensus import consensus
from rewardmill.transforms.steps.continuations import ContinuationSampling, PrefixRequest
from rewardmill.transforms.steps.search import BinarySearch, ExhaustiveMC, StepDecision, run_rounds
from rewardmill.transforms.steps.segment import STRATEGIES, Step, join_prefix, segment

REFERENCES = ("given", "pseudo", "given_or_pseudo")
VERSION = "1"
DIGITS = 6


@dataclass(frozen=True)
class SegmentConfig:
    strategy: str = "paragraphs"  # paragraphs | lines | markers | sentences | regex
    pattern: str | None = None  # regex: the separator
    max_steps: int | None = 8  # longer solutions merge their tail into the last step

    def __post_init__(self):
        if self.strategy not in STRATEGIES:
            raise ValueError(f"segment.strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        segment("probe", self.strategy, self.pattern, self.max_steps)  # a bad regex fails at config time


@dataclass(frozen=True)
class StepJudgeConfig:
    backend: BackendConfig = field(default_factory=BackendConfig)  # default: the policy folder, local
    max_tokens: int = 8  # "Answer: 2"


@dataclass(frozen=True)
class StepsConfig:
    """params `steps.NAME` (everything but the stage's own keys)."""

    method: Literal["mc", "binary_search", "judge", "consensus"] = "binary_search"
    search: Literal["mc", "binary_search"] = "binary_search"  # consensus: which MC method the judge is checked against
    k: int = 4  # continuations per estimated step (Math-Shepherd used 8)
    budget: int | None = None  # most continuations per rollout (binary search stops early; mc estimates fewer steps)
    segment: SegmentConfig = field(default_factory=SegmentConfig)
    continuation: ContinuationSampling = field(default_factory=ContinuationSampling)
    verifier: MathAnswerConfig = field(default_factory=MathAnswerConfig)  # checks final answers and continuations
    judge: StepJudgeConfig = field(default_factory=StepJudgeConfig)  # judge and consensus
    # What final answers and continuations are checked against. given: the prompt's reference (no reference: a
    # counted reject); pseudo: the majority answer of the prompt's rollouts (TTRL; the self_consistency labeler's
    # vote), and `method` says so ("mc+pseudo_reference"); given_or_pseudo: the reference where the prompt has one.
    reference: Literal["given", "pseudo", "given_or_pseudo"] = "given"
    # The vote (min_vote_share, min_answers, extraction, timeouts); no majority = reject no_pseudo_reference
    pseudo_reference: SelfConsistencyConfig = field(default_factory=SelfConsistencyConfig)

    def __post_init__(self):
        if self.method not in BASE_METHODS:  # the +pseudo_reference flag is the stage's to add, not a method
            raise ValueError(f"method must be one of {BASE_METHODS}, got {self.method!r}")
        if self.reference not in REFERENCES:
            raise ValueError(f"reference must be one of {REFERENCES}, got {self.reference!r}")
        if self.k < 1:
            raise ValueError(f"k must be >= 1, got {self.k!r}")

    @property
    def uses_continuations(self) -> bool:
        return self.method != "judge"

    @property
    def uses_judge(self) -> bool:
        return self.method in ("judge", "consensus")


@dataclass
class _Item:
    rollout: dict
    steps: list[Step]
    final_correct: bool


class StepLabeler:
    """Pure orchestration over injected parts: `continuer.continue_many(list[PrefixRequest]) -> list[list[str]]`,
    a math verifier with `label_many`, and a judge client (`complete`). Plain attributes: pickles for Beam."""

    def __init__(self, name: str, config: StepsConfig, continuer=None, judge_client=None, verifier=None):
        self.name, self.config = name, config
        self.continuer, self.judge_client = continuer, judge_client
        self.verifier = verifier or MathAnswerVerifier(config.verifier)
        self.rounds = 0

    def label_chunk(self, rollouts: list[dict]) -> tuple[list[dict], list[tuple[dict, str, str]]]:
        """Rollout rows -> (STEP_LABEL_V1 rows, rejects as (rollout, reason, detail))."""
        cfg = self.config
        items, rejects = self.prepare(rollouts)
        if not items:
            return [], rejects
        decisions: list[StepDecision | None] = [None] * len(items)
        if cfg.uses_continuations:
            planners = [self.planner_for(item) for item in items]
            found, rounds = run_rounds(planners, lambda work: self._estimate(items, work))
            self.rounds += rounds
            decisions = list(found)
        judged = self.judge(items) if cfg.uses_judge else [(None, None)] * len(items)
        rows: list[dict] = []
        for item, decision, (judge_first, judge_text) in zip(items, decisions, judged, strict=True):
            raw = {"final_correct": item.final_correct}
            if item.rollout.get("reference_source") == "pseudo":
                raw["pseudo_reference"] = {
                    "answer": item.rollout["reference"],
                    "vote_share": item.rollout["vote_share"],
                }
            if cfg.uses_judge:
                raw["judge"] = {"first_error": judge_first, "text": judge_text}
            if cfg.method == "judge":
                if judge_first is None:
                    rejects.append((item.rollout, "judge_unreadable", f"judge reply {judge_text!r:.200}"))
                    continue
                decision = from_first_error(judge_first, len(item.steps))
            elif cfg.method == "consensus":
                raw["search"] = {"method": decision.method, "first_error": decision.first_error}
                kept, reason = consensus(decision, judge_first)
                if kept is None:
                    detail = f"{decision.method} first error {decision.first_error}, judge {judge_first}"
                    rejects.append((item.rollout, reason, detail))
                    continue
                decision = kept
            rows.extend(self._rows(item, decision, raw))
        return rows, rejects

    def prepare(self, rollouts: list[dict]) -> tuple[list[_Item], list[tuple[dict, str, str]]]:
        cfg, rejects, ready = self.config, [], []
        for rollout in rollouts:
            steps = segment(rollout.get("completion") or "", cfg.segment.strategy, cfg.segment.pattern,
                            cfg.segment.max_steps)  # fmt: skip
            if not steps:
                rejects.append((rollout, "no_steps", "the completion is empty"))
            elif rollout.get("pseudo_reference_missing"):
                rejects.append((rollout, "no_pseudo_reference", rollout["pseudo_reference_missing"]))
            elif not has_reference(rollout):
                rejects.append((rollout, "no_reference", "step labels need a reference answer to check against"))
            else:
                ready.append((rollout, steps))
        finals = self.verifier.label_many([(r["completion"], r["reference"]) for r, _ in ready])
        items = []
        for (rollout, steps), final in zip(ready, finals, strict=True):
            if final.verdict not in ("correct", "incorrect"):
                rejects.append(
                    (rollout, f"final_{final.verdict}", f"the final answer cannot be checked: {final.rationale}")
                )
            else:
                items.append(_Item(rollout, steps, final.verdict == "correct"))
        return items, rejects

    def planner_for(self, item: _Item):
        cfg = self.config
        kind = cfg.search if cfg.method == "consensus" else cfg.method
        planner = ExhaustiveMC if kind == "mc" else BinarySearch
        return planner(len(item.steps), item.final_correct, cfg.k, cfg.budget)

    def _estimate(self, items: list[_Item], work: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """One round: k continuations for every (item, step) prefix, each checked against the reference."""
        requests = []
        for index, step in work:
            item = items[index]
            prefix = join_prefix(item.rollout["completion"], item.steps, step)
            requests.append(
                PrefixRequest(f"{item.rollout['rollout_id']}:{step}", tuple(item.rollout["messages"]), prefix)
            )
        continuations = self.continuer.continue_many(requests)
        checks = [
            (f"{request.prefix}{text}", items[index].rollout["reference"])
            for request, texts, (index, _) in zip(requests, continuations, work, strict=True)
            for text in texts
        ]
        verdicts = iter(self.verifier.label_many(checks))
        # (n_correct, k): the k is what came back, so a short answer from a backend is not counted as wrong
        return [(sum(next(verdicts).verdict == "correct" for _ in texts), len(texts)) for texts in continuations]

    def judge(self, items: list[_Item]) -> list[tuple[int | None, str | None]]:
        cfg = self.config.judge
        requests = [
            JudgeRequest(
                build_step_critique(question_of(item.rollout["messages"]), [s.text for s in item.steps]),
                Sampling(temperature=0.0, max_tokens=cfg.max_tokens),
            )
            for item in items
        ]
        replies = self.judge_client.complete(requests)
        return [
            (None if reply.error else parse_first_error(reply.text, len(item.steps)), reply.error or reply.text)
            for item, reply in zip(items, replies, strict=True)
        ]

    def _rows(self, item: _Item, decision: StepDecision, raw: dict) -> list[dict]:
        rollout = item.rollout
        return [
            {
                "rollout_id": rollout["rollout_id"],
                "prompt_id": rollout["prompt_id"],
                "labeler": self.name,
                "labeler_version": VERSION,
                "step_index": step.index,
                "n_steps": len(item.steps),
                "step_text": step.text,
                "char_start": step.start,
                "char_end": step.end,
                "score": None if decision.soft[i] is None else round(decision.soft[i], DIGITS),
                "hard_label": decision.hard[i],
                "method": decision.method + (PSEUDO_REFERENCE if rollout.get("reference_source") == "pseudo" else ""),
                "n_continuations": decision.n_continuations[i],
                "first_error_step": decision.first_error,
                "raw": json.dumps({**raw, "complete": decision.complete}, sort_keys=True, ensure_ascii=False),
            }
            for i, step in enumerate(item.steps)
        ]


def has_reference(rollout: dict) -> bool:
    """A non-blank reference answer to check final answers and continuations against."""
    reference = rollout.get("reference")
    return isinstance(reference, str) and bool(reference.strip())


def from_first_error(first_error: int, n_steps: int) -> StepDecision:
    """A judge's answer as step labels: steps before the first error correct, it and later steps wrong."""
    hard = tuple(first_error < 0 or i < first_error for i in range(n_steps))
    return StepDecision(first_error, hard, (None,) * n_steps, (0,) * n_steps, "judge")


def make_judge_client(config: StepsConfig, cache_dir: str | None):
    backend = config.judge.backend
    if cache_dir and backend.cache_dir is None:
        backend = replace(backend, cache_dir=cache_dir)
    return make_client(backend)
