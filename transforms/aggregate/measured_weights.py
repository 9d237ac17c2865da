"""Measured weights: a judge ranks rollouts by as much as it agrees with the deciding gate beyond chance.

params `assemble.aggregate.weights` gives a labeler a number (used as is: an explicit weight always wins) or
`measured`. A measured labeler is weighed on this run's own rows: the rollouts it and a deciding gate both decided
(the first gate in params order with a decided verdict at least `min_gate_confidence` confident, as the reward's
correctness is decided; overrides are judges, not the truth). Its weight is Cohen's kappa against that gate,
floored at 0: 1 for a judge that always agrees, 0 for one no better than chance given how often each side says
"correct" (a judge that says "correct" to everything, or one that label QA shows below chance, gets 0 and no longer
ranks). Kappa rather than accuracy, because the gate's verdicts are rarely balanced: where it rejects 9 answers in 10,
a judge that always says "incorrect" is 90% accurate and tells nothing apart.

Where the weight cannot be measured, the labeler keeps `fallback_weight`, and the record says why: fewer than
`min_measured_rows` co-decided rollouts, or the gate decided only one way on them (agreement beyond chance is then
undefined). Every weight used, measured or not, is recorded with its counts (`weight_record`): the assemble
manifests carry it, the dataset card shows it.

In: labels (LABEL_V1 columns rollout_id, labeler, aspect, score, confidence, verdict) as one polars frame.
"""

from dataclasses import asdict, dataclass

import polars as pl

from rewardmill.transforms.aggregate.reward import DECIDED, MEASURED, WHOLE


@dataclass(frozen=True)
class Agreement:
    """A judge's decided verdicts against the deciding gate's, on the rollouts both decided (label QA's cells)."""

    correct_correct: int = 0  # judge says correct, gate says correct
    correct_incorrect: int = 0  # judge correct, gate incorrect
    incorrect_correct: int = 0  # judge incorrect, gate correct
    incorrect_incorrect: int = 0

    @property
    def n(self) -> int:
        return self.correct_correct + self.correct_incorrect + self.incorrect_correct + self.incorrect_incorrect

    @property
    def accuracy(self) -> float | None:
        return (self.correct_correct + self.incorrect_incorrect) / self.n if self.n else None

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa; None when the gate decided one way only (or there are no rows)."""
        n = self.n
        gate_yes = (self.correct_correct + self.incorrect_correct) / n if n else 0.0
        if not 0.0 < gate_yes < 1.0:
            return None
        judge_yes = (self.correct_correct + self.correct_incorrect) / n
        chance = judge_yes * gate_yes + (1 - judge_yes) * (1 - gate_yes)
        return (self.accuracy - chance) / (1 - chance)


@dataclass(frozen=True)
class WeightUsed:
    """The weight a labeler's scores got, and why. `source`: params (an explicit number), measured, or fallback."""

    weight: float
    source: str
    reason: str
    agreement: Agreement | None = None

    def record(self) -> dict:
        out = {"weight": self.weight, "source": self.source, "reason": self.reason}
        if self.agreement is not None:
            a = self.agreement
            out |= {
                "rows": a.n,
                "accuracy": None if a.accuracy is None else round(a.accuracy, 6),
                "kappa": None if a.kappa is None else round(a.kappa, 6),
                "cells": asdict(a),
            }
        return out


def measured_weight(agreement: Agreement, min_rows: int, fallback: float) -> WeightUsed:
    """Pure: the weight a `measured` labeler gets from its agreement with the gate (see the module docstring)."""
    if agreement.n < min_rows:
        why = f"{agreement.n} rollouts decided by it and a gate, fewer than min_measured_rows={min_rows}"
        return WeightUsed(fallback, "fallback", f"{why}: fallback_weight {fallback} kept", agreement)
    kappa = agreement.kappa
    if kappa is None:
        why = f"the gate decided its {agreement.n} rollouts one way only: agreement beyond chance is undefined"
        return WeightUsed(fallback, "fallback", f"{why}: fallback_weight {fallback} kept", agreement)
    weight = round(max(0.0, kappa), 6)
    how = f"Cohen's kappa {kappa:.3f} against the deciding gate (accuracy {agreement.accuracy:.3f}) on {agreement.n}"
    how += " rollouts"
    return WeightUsed(weight, "measured", how if kappa > 0 else f"{how}: no better than chance, so 0", agreement)


def deciding_gate(labels: pl.DataFrame, gates: tuple[str, ...], min_confidence: float) -> pl.DataFrame:
    """rollout_id -> correct: the first gate (params order) with a decided verdict at least `min_confidence`
    confident, as the reward decides correctness (score_rollouts) without overrides."""
    rank = {g: i for i, g in enumerate(gates)}
    return (
        labels.filter(
            WHOLE
            & pl.col("labeler").is_in(list(gates))
            & pl.col("verdict").is_in(DECIDED)
            & pl.col("score").is_not_null()
            & (pl.col("confidence") >= min_confidence)
        )
        .with_columns(_rank=pl.col("labeler").replace_strict(rank, return_dtype=pl.Int32))
        .sort("rollout_id", "_rank", "aspect")
        .group_by("rollout_id", maintain_order=True)
        .agg(correct=pl.col("verdict").first() == "correct")
    )


def agreements(labels: pl.DataFrame, truth: pl.DataFrame, labelers: list[str]) -> dict[str, Agreement]:
    """Each of `labelers`' decided verdicts (its first aspect per rollout, as label QA counts them) against
    `truth` (rollout_id, correct)."""
    mine = (
        labels.filter(WHOLE & pl.col("labeler").is_in(labelers) & pl.col("verdict").is_in(DECIDED))
        .sort("rollout_id", "labeler", "aspect")
        .unique(["rollout_id", "labeler"], keep="first")
        .join(truth, on="rollout_id")
        .with_columns(says=pl.col("verdict") == "correct")
    )
    out = {}
    for name in labelers:
        part = mine.filter(pl.col("labeler") == name)
        says, gate = part["says"], part["correct"]
        out[name] = Agreement(
            int((says & gate).sum()), int((says & ~gate).sum()), int((~says & gate).sum()), int((~says & ~gate).sum())
        )
    return out


def resolve_weights(labels: pl.DataFrame, cfg) -> dict[str, WeightUsed]:
    """Every labeler in `cfg.weights` (an AggregateConfig) -> the weight its scores get in this run."""
    measured = sorted(name for name, w in cfg.weights.items() if w == MEASURED)
    found = agreements(labels, deciding_gate(labels, cfg.gates, cfg.min_gate_confidence), measured) if measured else {}
    used = {}
    for name, weight in sorted(cfg.weights.items()):
        if weight == MEASURED:
            used[name] = measured_weight(found[name], cfg.min_measured_rows, cfg.fallback_weight)
        else:
            used[name] = WeightUsed(float(weight), "params", "set in params assemble.aggregate.weights")
    return used


def weight_record(used: dict[str, WeightUsed]) -> dict[str, dict]:
    """The manifests' `reward_weights`: labeler -> {weight, source, reason, rows, accuracy, kappa, cells}."""
    return {name: w.record() for name, w in sorted(used.items())}
