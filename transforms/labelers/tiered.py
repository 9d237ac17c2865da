"""TieredVerifier: run labelers as ordered tiers (e.g. syntax -> execution -> quality); a failed tier stops the rest.

Score rule: with n tiers, tier k (1-based) owns the band [(k-1)/n, k/n]. The label's score is the last tier
reached, k, placed in its band: (k - 1 + score_k) / n. So every rollout that got further scores higher than
every rollout that stopped earlier, and within a tier the inner score still ranks. All tiers passed with
score 1.0 gives 1.0; failing the first tier with 0.0 gives 0.0. A tier that cannot label (score None) makes
the whole label None with that tier's verdict: never a silent 0.
"""

import json
from dataclasses import dataclass, field

from rewardmill.transforms.labelers.base import Label, resolve_labeler, safe_label
from rewardmill.transforms.labelers.contract import declared_tasks, tear_down


@dataclass(frozen=True)
class TierSpec:
    labeler: str  # registry key of the inner labeler
    config: dict = field(default_factory=dict)  # its settings, checked against its Config
    min_score: float = 1.0  # the tier passes when its score >= min_score; otherwise later tiers do not run
    name: str = ""  # shown in raw and rationale (e.g. "syntax"); default: the labeler key


@dataclass(frozen=True)
class TieredConfig:
    # In order; at least one. Default: the R1 recipe, think/answer format first, then the math answer.
    tiers: tuple[TierSpec, ...] = (TierSpec("format", name="syntax"), TierSpec("math_answer", name="correctness"))
    aspect: str = "tiered"  # the aspect of the combined label

    def __post_init__(self):
        if not self.tiers:
            raise ValueError("configure at least one tier")
        names = [tier_name(spec) for spec in self.tiers]
        if len(set(names)) != len(names):
            raise ValueError(f"tier names must be distinct (set `name`), got {names}")
        for spec in self.tiers:
            if not 0.0 <= spec.min_score <= 1.0:
                raise ValueError(f"tier {tier_name(spec)}: min_score must be in [0, 1], got {spec.min_score}")
        resolve_tiers(self)  # fail at config time on an unknown labeler or a bad inner config


def tier_name(spec: TierSpec) -> str:
    return spec.name or spec.labeler


def resolve_tiers(config: TieredConfig) -> list[tuple[type, object]]:
    """(labeler class, validated config) per tier."""
    return [resolve_labeler(spec.labeler, spec.config, f"tiers[{i}]") for i, spec in enumerate(config.tiers)]


class TieredVerifier:
    """Score in [0, 1] from ordered tiers of inner labelers (see the module docstring for the rule).

    Input columns: the union of the tiers' columns (per instance).   Output: score (None = a tier could not
    label), verdict (correct = every tier passed), rationale, raw (JSON list: one result per tier, later
    tiers marked skipped). Applies to the tasks every tier applies to.
    """

    name = "tiered"
    version = "1"
    reads: tuple[str, ...] = ()  # per instance: the union of the inner labelers' reads, in first-seen order
    tasks: tuple[str, ...] | None = None  # per instance: the tasks all tiers handle
    Config = TieredConfig

    def __init__(self, config: TieredConfig | None = None):
        self.config = config or TieredConfig()
        self.labelers = [cls(cfg) for cls, cfg in resolve_tiers(self.config)]
        self.reads = tuple(dict.fromkeys(c for lab in self.labelers for c in lab.reads))
        task_sets = [set(t) for lab in self.labelers if (t := declared_tasks(lab))]
        if task_sets:
            common = set.intersection(*task_sets)
            if not common:
                raise ValueError(f"the tiers apply to no common task: {[sorted(t) for t in task_sets]}")
            self.tasks = tuple(sorted(common))

    def label(self, *values) -> Label:
        row = dict(zip(self.reads, values, strict=True))
        specs, n = self.config.tiers, len(self.config.tiers)
        results: list[dict] = []
        for spec, labeler in zip(specs, self.labelers, strict=True):
            lab = safe_label(labeler, tuple(row[c] for c in labeler.reads))
            passed = lab.score is not None and lab.score >= spec.min_score
            results.append(
                {
                    "tier": tier_name(spec),
                    "labeler": spec.labeler,
                    "version": labeler.version,
                    "score": lab.score,
                    "verdict": lab.verdict,
                    "confidence": lab.confidence,
                    "passed": passed,
                    "rationale": lab.rationale,
                    "raw": lab.raw,
                }
            )
            if not passed:
                break
        results += [{"tier": tier_name(s), "labeler": s.labeler, "skipped": True} for s in specs[len(results) :]]
        raw = json.dumps(results, ensure_ascii=False)
        reached = [r for r in results if not r.get("skipped")]
        last, k = reached[-1], len(reached)
        where = f"tier {k}/{n} {last['tier']}"
        if last["score"] is None:
            rationale = f"{where} could not label: {last['rationale']}"
            return Label(None, 0.0, last["verdict"], rationale[:500], raw, self.aspect)
        score = (k - 1 + min(max(last["score"], 0.0), 1.0)) / n
        confidence = min(r["confidence"] for r in reached)
        if last["passed"]:
            return Label(score, confidence, "correct", f"all {n} tiers passed", raw, self.aspect)
        rationale = f"{where} failed ({last['score']:.2f} < {specs[k - 1].min_score}): {last['rationale']}"
        return Label(score, confidence, "incorrect", rationale[:500], raw, self.aspect)

    @property
    def aspect(self) -> str:
        return self.config.aspect

    def teardown(self) -> None:
        for labeler in self.labelers:
            tear_down(labeler)
