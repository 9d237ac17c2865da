"""Combine the labels of one rollout into one score. Pure."""

from dataclasses import dataclass


@dataclass(frozen=True)
class RolloutScore:
    rollout_id: str
    score: float | None  # mean over labelers that could label it; None when none could
    confidence: float  # mean confidence of the labels that carry a score
    per_labeler: dict[str, float | None]  # labeler -> score, to measure agreement on pairs
    sources: tuple[str, ...]  # "labeler@version"


def combine(rollout_id: str, labels: list[dict]) -> RolloutScore:
    scored = [lab for lab in labels if lab["score"] is not None]
    per_labeler = {lab["labeler"]: lab["score"] for lab in sorted(labels, key=lambda lab: lab["labeler"])}
    sources = tuple(sorted({f"{lab['labeler']}@{lab['labeler_version']}" for lab in labels}))
    if not scored:
        return RolloutScore(rollout_id, None, 0.0, per_labeler, sources)
    score = sum(lab["score"] for lab in scored) / len(scored)
    confidence = sum(lab["confidence"] for lab in scored) / len(scored)
    return RolloutScore(rollout_id, score, confidence, per_labeler, sources)
