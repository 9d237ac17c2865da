"""SFT rows: the best kept rollouts of each prompt, for rejection-sampling fine-tuning.

In: scored rollouts with `status`, and their prompts' own columns (aggregate/prompts.py). Out: an SFT_V1 table
(prompt/completion conversational, what TRL's SFTTrainer loads) and one reject per prompt that gives no row, with the
reason.
"""

from dataclasses import dataclass

import polars as pl
import pyarrow as pa

from rewardmill.schemas import SFT_V1, SFT_V2
from rewardmill.transforms.aggregate.prompts import prompt_columns
from rewardmill.transforms.aggregate.status import KEPT
from rewardmill.transforms.aggregate.trajectories import chat_messages, prompt_as_fed
from rewardmill.transforms.io.frames import frame_to_table


@dataclass(frozen=True)
class SftConfig:
    """params `assemble.sft`."""

    per_prompt: int = 1  # best rollouts kept per prompt
    require_correct: bool = True  # only rollouts a rule verifier decided correct; false = best by reward
    min_reward: float = 0.5  # rollouts below this reward are never SFT targets

    def __post_init__(self):
        if self.per_prompt < 1:
            raise ValueError(f"per_prompt must be >= 1, got {self.per_prompt}")
        if not 0.0 <= self.min_reward <= 1.0:
            raise ValueError(f"min_reward must be in [0, 1], got {self.min_reward}")


def build_sft_rows(
    scored: pl.DataFrame, cfg: SftConfig, prompts: pl.DataFrame | None = None, trajectories: bool = False
) -> tuple[pa.Table, pl.DataFrame]:
    """-> (SFT_V1 table, rejects: row_id = prompt_id, reason, detail). `prompts`: the prompts' own columns
    (prompts.PROMPT_COLUMNS); None = `scored` carries them. With `trajectories` (scored carries `turns` and
    `tools`): SFT_V2, the completion every message after the prompt and the tools beside it."""
    eligible = (pl.col("status") == KEPT) & (pl.col("reward") >= cfg.min_reward)
    if cfg.require_correct:
        eligible = eligible & pl.col("correct").fill_null(False)
    # The choice on the ids and rewards alone; the rows' other columns are joined to the chosen ones.
    ranked = (
        scored.select("rollout_id", "prompt_id", "reward", eligible=eligible)
        .filter("eligible")
        .sort(["prompt_id", "reward", "rollout_id"], descending=[False, True, False])
        .group_by("prompt_id", maintain_order=True)
        .agg(pl.col("rollout_id").head(cfg.per_prompt))
        .with_columns(rank=pl.int_ranges(pl.col("rollout_id").list.len(), dtype=pl.Int32))
        .explode("rollout_id", "rank")
    )
    best = ranked.join(scored.drop("prompt_id"), on="rollout_id").join(
        prompt_columns(scored, prompts).select("prompt_id", "messages"), on="prompt_id", how="left"
    )
    rows = best.select(
        "rollout_id",
        "prompt_id",
        prompt=prompt_as_fed("messages", "prompt_messages") if trajectories else pl.col("messages"),
        completion=(
            chat_messages("turns", "completion")
            if trajectories
            else pl.concat_list(pl.struct(role=pl.lit("assistant"), content=pl.col("completion")))
        ),
        reward="reward",
        confidence="confidence",
        correct="correct",
        rank="rank",
        n_tokens="n_tokens",
        scores="scores",
        label_sources="label_sources",
        task="task",
        split="split",
        **({"tools": "tools"} if trajectories else {}),
    )  # in no particular order: the writer sorts by rollout_id
    # Why a prompt has no row: when none of its rollouts is kept, their common status (a prompt flag such as
    # contaminated, or e.g. missing_score for all), else no_kept_rollout; otherwise the SFT conditions.
    missing = (  # the prompts without a row
        scored.join(ranked.select("prompt_id").unique(), on="prompt_id", how="anti")
        .sort("prompt_id", "rollout_id")
        .group_by("prompt_id", maintain_order=True)
        .agg(
            n_kept=(pl.col("status") == KEPT).sum(),
            n_correct=((pl.col("status") == KEPT) & pl.col("correct").fill_null(False)).sum(),
            statuses=pl.col("status").n_unique(),
            first_status=pl.col("status").first(),
            first_detail=pl.col("status_detail").first(),
            best=pl.col("reward").filter(pl.col("status") == KEPT).max(),
        )
    )
    reason = (
        pl.when(pl.col("n_kept") == 0)
        .then(pl.when(pl.col("statuses") == 1).then(pl.col("first_status")).otherwise(pl.lit("no_kept_rollout")))
        .when(pl.lit(cfg.require_correct) & (pl.col("n_correct") == 0))
        .then(pl.lit("no_correct_rollout"))
        .otherwise(pl.lit("below_min_reward"))
    )
    detail = (
        pl.when(pl.col("n_kept") == 0)
        .then(
            pl.lit("no kept rollout; first: ")
            + pl.col("first_status")
            + pl.lit(" ")
            + pl.col("first_detail").fill_null("")
        )
        .when(pl.lit(cfg.require_correct) & (pl.col("n_correct") == 0))
        .then(pl.col("n_kept").cast(pl.String) + pl.lit(" kept rollout(s), none verified correct (require_correct)"))
        .otherwise(
            pl.lit("best reward ")
            + pl.col("best").round(4).cast(pl.String)
            + pl.lit(f" < min_reward {cfg.min_reward}")
        )
    )
    rejects = missing.select(row_id="prompt_id", reason=reason, detail=detail)
    return frame_to_table(rows, SFT_V2 if trajectories else SFT_V1), rejects
