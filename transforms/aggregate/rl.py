"""RL prompts: pass rate over the policy's own samples, a difficulty bucket, and flags for 0/k and k/k prompts.

In: scored rollouts with `status` (status.with_status; their task and split), and the prompts' own columns
(aggregate/prompts.py: messages, reference, tests, constraints). Out: an RL_V1 table, one row per prompt that no
prompt-level filter flagged. Every rollout of the prompt counts (a low-confidence or truncated sample is still a sample
of its difficulty); only a rule verifier's verdict counts as a pass, so `pass_rate` is null when no gate decided any
sample.
"""

from dataclasses import dataclass

import polars as pl
import pyarrow as pa

from rewardmill.schemas import RL_V1, RL_V2
from rewardmill.transforms.aggregate.prompts import prompt_columns
from rewardmill.transforms.io.frames import frame_to_table


@dataclass(frozen=True)
class RlConfig:
    """params `assemble.rl`."""

    easy: float = 0.75  # pass_rate >= easy is easy
    hard: float = 0.25  # 0 < pass_rate <= hard is hard; in between medium; 0 is unsolved

    def __post_init__(self):
        if not 0.0 < self.hard < self.easy <= 1.0:
            raise ValueError(f"need 0 < hard < easy <= 1, got hard={self.hard} easy={self.easy}")


# one environment per run: every rollout of a prompt names the same; the first by id, so the bits never vary
ENVIRONMENT_COLUMNS = {
    "environment": pl.col("environment").sort_by("rollout_id").first(),
    "tools": pl.col("tools").sort_by("rollout_id").first(),
}


def build_rl_rows(
    scored: pl.DataFrame,
    flagged: set[str],
    cfg: RlConfig,
    prompts: pl.DataFrame | None = None,
    trajectories: bool = False,
) -> pa.Table:
    """`prompts`: the prompts' own columns (prompts.PROMPT_COLUMNS), joined to each prompt's row; None = `scored`
    carries them. With `trajectories` (scored carries `environment` and `tools`): RL_V2, each prompt naming the
    environment its episodes ran in (one per run: any rollout's) and the tools it offered."""
    grouped = (
        scored.filter(~pl.col("prompt_id").is_in(sorted(flagged)))
        .group_by("prompt_id")  # the prompt's own columns are the same on every rollout of it: first() is any
        .agg(
            task=pl.col("task").first(),
            n_samples=pl.len().cast(pl.Int32),
            n_verified=pl.col("correct").count().cast(pl.Int32),
            n_correct=pl.col("correct").sum().cast(pl.Int32),
            mean_reward=pl.col("reward").sort_by("rollout_id").mean(),  # a fixed summation order: same bits
            split=pl.col("split").first(),
            **(ENVIRONMENT_COLUMNS if trajectories else {}),
        )
        .join(prompt_columns(scored, prompts), on="prompt_id", how="left")
        .rename({"messages": "prompt"})
    )
    rate = pl.col("n_correct") / pl.col("n_verified")
    difficulty = (
        pl.when(pl.col("n_verified") == 0)
        .then(pl.lit("unverified"))
        .when(pl.col("n_correct") == 0)
        .then(pl.lit("unsolved"))
        .when(rate >= cfg.easy)
        .then(pl.lit("easy"))
        .when(rate <= cfg.hard)
        .then(pl.lit("hard"))
        .otherwise(pl.lit("medium"))
    )
    rows = grouped.with_columns(
        pass_rate=pl.when(pl.col("n_verified") > 0).then(rate).otherwise(None),
        difficulty=difficulty,
        zero_pass=(pl.col("n_verified") > 0) & (pl.col("n_correct") == 0),
        all_pass=(pl.col("n_verified") > 0) & (pl.col("n_correct") == pl.col("n_verified")),
    )
    schema = RL_V2 if trajectories else RL_V1
    return frame_to_table(rows.select(schema.names), schema)
