"""Which scored rollouts the outputs may use: `status` = "kept" or the reason it is not.

In: scored rollouts (reward.score_rollouts) and prompt flags (prompt_id -> (reason, detail)) from the prompt-level
filters (duplicates, near duplicates, benchmark contamination). Out: the same rows plus `status` and
`status_detail`. The first reason that applies wins, in this order: the prompt's flag, missing_score, truncated,
low_confidence; every rollout that is not kept becomes one counted reject.
"""

from dataclasses import dataclass

import polars as pl

KEPT = "kept"


@dataclass(frozen=True)
class RolloutFilterConfig:
    """The rollout-level part of params `assemble.filters`."""

    min_confidence: float = 0.0  # rollouts whose aggregated confidence is lower are not used (low_confidence)
    drop_truncated: bool = False  # rollouts cut at max_new_tokens (finish_reason = length) are not used

    def __post_init__(self):
        if not 0.0 <= self.min_confidence <= 1.0:
            raise ValueError(f"min_confidence must be in [0, 1], got {self.min_confidence}")


def flags_frame(flags: dict[str, tuple[str, str]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "prompt_id": list(flags),
            "flag_reason": [reason for reason, _ in flags.values()],
            "flag_detail": [detail for _, detail in flags.values()],
        },
        schema={"prompt_id": pl.String, "flag_reason": pl.String, "flag_detail": pl.String},
    )


def with_status(scored: pl.DataFrame, flags: dict[str, tuple[str, str]], cfg: RolloutFilterConfig) -> pl.DataFrame:
    out = scored.join(flags_frame(flags), on="prompt_id", how="left")
    truncated = pl.col("finish_reason") == "length"
    low = pl.col("confidence") < cfg.min_confidence
    status = (
        pl.when(pl.col("flag_reason").is_not_null())
        .then(pl.col("flag_reason"))
        .when(pl.col("reward").is_null())
        .then(pl.lit("missing_score"))
        .when(truncated & cfg.drop_truncated)
        .then(pl.lit("truncated"))
        .when(low)
        .then(pl.lit("low_confidence"))
        .otherwise(pl.lit(KEPT))
    )
    detail = (
        pl.when(pl.col("flag_reason").is_not_null())
        .then(pl.col("flag_detail"))
        .when(pl.col("reward").is_null())
        .then(pl.lit("no labeler could score this rollout"))
        .when(truncated & cfg.drop_truncated)
        .then(pl.lit("finish_reason=length and drop_truncated is set"))
        .when(low)
        .then(
            pl.lit("confidence ")
            + pl.col("confidence").round(4).cast(pl.String)
            + pl.lit(f" < min_confidence {cfg.min_confidence}")
        )
        .otherwise(pl.lit(None, dtype=pl.String))
    )
    return out.with_columns(status=status, status_detail=detail).drop("flag_reason", "flag_detail")
