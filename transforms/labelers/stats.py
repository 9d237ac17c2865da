"""Dataset statistics of one label stage's output, for its DVC metrics file (folder in, plain dict out).

Every labeler gets counts by verdict, the share of null scores and the mean score and confidence; a labeler class
with a `summarize(labels: list[dict]) -> dict` classmethod (SummarizingLabeler; judges: swap consistency, panel
agreement, appeals) adds its own section under `labeler`. Floats are rounded to 6 digits so `dvc metrics diff`
shows real changes.
"""

from collections import Counter
from pathlib import Path
from typing import Any

from rewardmill.schemas.label import is_part
from rewardmill.transforms.io.parquet import read_rows
from rewardmill.transforms.labelers.contract import SummarizingLabeler, has_hook

DIGITS = 6


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), DIGITS) if values else None


def label_stats(directory: str | Path, labeler_cls=None) -> dict[str, Any]:
    rows = read_rows(str(directory))  # the data shards only: `_rejects/` is not read
    # parts of an aspect (a rubric's criteria) are counted apart: the figures below are of whole labels
    labels = [r for r in rows if not is_part(r["aspect"])]
    scores = [r["score"] for r in labels if r["score"] is not None]
    stats: dict[str, Any] = {
        "labels": len(labels),
        "verdicts": dict(sorted(Counter(r["verdict"] for r in labels).items())),
        "share_null_score": round((len(labels) - len(scores)) / len(labels), DIGITS) if labels else None,
        "mean_score": _mean(scores),
        "mean_confidence": _mean([r["confidence"] for r in labels]),
    }
    if parts := [r for r in rows if is_part(r["aspect"])]:
        part_scores = [r["score"] for r in parts if r["score"] is not None]
        stats["part_labels"] = {"labels": len(parts), "mean_score": _mean(part_scores)}
    if has_hook(labeler_cls, SummarizingLabeler):
        stats["labeler"] = labeler_cls.summarize(labels)
    return stats
