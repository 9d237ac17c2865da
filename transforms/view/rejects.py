"""A folder's rejects grouped by reason for the viewer: the count of each reason and its first few rows. Pure.

In: REJECT_V1 rows (stage, row_id, reason, detail, payload) as a polars frame, lazy or not, possibly of every
row a stage rejected. Out: a `RejectSummary`, reasons by count (most first, then by name), examples in row id order,
so the same rejects always give the same summary however their shards were cut.
"""

import polars as pl

from rewardmill.transforms.view.model import RejectSummary

EXAMPLES = 3  # rows shown per reason
COLUMNS = ("stage", "row_id", "reason", "detail", "payload")


def summarize_rejects(dataset: str, rejects: pl.LazyFrame | pl.DataFrame, examples: int = EXAMPLES) -> RejectSummary:
    frame = rejects.lazy()
    names = frame.collect_schema().names()
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        raise ValueError(f"{dataset}: rejects lack the column(s) {missing} of REJECT_V1")
    frame = frame.select(COLUMNS).with_columns(pl.col("reason").fill_null("(no reason)"))
    counts = frame.group_by("reason").agg(count=pl.len()).collect().sort(["count", "reason"], descending=[True, False])
    shown = (
        frame.sort(["reason", "row_id", "stage", "detail"], nulls_last=True)
        .group_by("reason", maintain_order=True)
        .head(examples)
        .collect()
    )
    by_reason: dict[str, list[dict]] = {}
    for row in shown.iter_rows(named=True):
        by_reason.setdefault(row["reason"], []).append({k: row[k] for k in COLUMNS if k != "reason"})
    reasons = [
        {"reason": r["reason"], "count": r["count"], "examples": by_reason.get(r["reason"], [])}
        for r in counts.iter_rows(named=True)
    ]
    return RejectSummary(dataset, sum(r["count"] for r in reasons), reasons)
