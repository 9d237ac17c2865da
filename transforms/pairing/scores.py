"""Combine the labels of one rollout into one score. Pure, and independent of the order labels arrive in
(CoGroupByKey gives no order): labels are sorted first and sums use math.fsum, which is exactly rounded."""

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class RolloutScore:
    rollout_id: str
    score: float | None  # mean over labelers that could label it; None when none could
    confidence: float  # mean confidence of the labels that carry a score
    per_labeler: dict[str, float | None]  # "labeler/aspect" -> score, to measure agreement on pairs
    sources: tuple[str, ...]  # "labeler@version"


def combine(rollout_id: str, labels: list[dict]) -> RolloutScore:
    labels = sorted(labels, key=lambda lab: (lab["labeler"], lab["aspect"], lab["labeler_version"]))
    scored = [lab for lab in labels if lab["score"] is not None]
    per_labeler = {f"{lab['labeler']}/{lab['aspect']}": lab["score"] for lab in labels}
    sources = tuple(sorted({f"{lab['labeler']}@{lab['labeler_version']}" for lab in labels}))
    if not scored:
        return RolloutScore(rollout_id, None, 0.0, per_labeler, sources)
    score = math.fsum(lab["score"] for lab in scored) / len(scored)
    confidence = math.fsum(lab["confidence"] for lab in scored) / len(scored)
    return RolloutScore(rollout_id, score, confidence, per_labeler, sources)
