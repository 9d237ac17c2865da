"""Per-aspect preference pairs (multi-objective data: Directional Preference Alignment, Multi-Objective DPO, ArmoRM):
for each named aspect of the score vector, each prompt's rollout that scores highest on it against the one that
scores lowest, when they differ by more than `min_margin`. Each row names its aspect; its scores and margin are the
aspect's, not the reward's, so a trainer can weight or condition on the objective.

In: the kept scored rollouts (reward.score_rollouts plus completion, task, split; `_group` the pair group) and the
prompts' own columns. Out: PAIR_ASPECT_V1 rows and, for every (prompt, aspect) without a pair, a reject
(`no_aspect_score`: fewer than two rollouts scored on it; `aspect_tie`: none apart by more than the margin), row_id
`<prompt_id>/<aspect>`. The pair-level filters of `assemble.pairs` (agreement, length ratio) apply as to every pair.
"""

from dataclasses import dataclass, replace

import polars as pl
import pyarrow as pa

from rewardmill.schemas.pair import BY_ASPECT, PAIR_ASPECT_V1
from rewardmill.transforms.io.frames import frame_to_table
from rewardmill.transforms.pairing.rows import build_pair_rows, pair_ids
from rewardmill.transforms.pairing.strategies import PAIR_COLUMNS, PairsConfig, group_prompt

PAIR_TYPE = BY_ASPECT


@dataclass(frozen=True)
class AspectPairsConfig:
    """params `assemble.pairs_by_aspect`."""

    # score-vector names ("labeler/aspect", as in the pairs' scores_chosen) to pair on; () = no pairs_by_aspect rows
    aspects: tuple[str, ...] = ()
    min_margin: float = 0.0  # the aspect's score_chosen - score_rejected must exceed it

    def __post_init__(self):
        if len(set(self.aspects)) != len(self.aspects):
            raise ValueError(f"pairs_by_aspect.aspects names one twice: {list(self.aspects)}")
        if bad := [a for a in self.aspects if "/" not in a]:
            raise ValueError(f"pairs_by_aspect.aspects are 'labeler/aspect' score names, got {bad}")
        if self.min_margin < 0:
            raise ValueError(f"pairs_by_aspect.min_margin must be >= 0, got {self.min_margin}")


def aspect_scores(kept: pl.DataFrame, aspects: tuple[str, ...]) -> pl.DataFrame:
    """(_group, rollout_id, aspect, score) for every kept rollout scored on one of `aspects`."""
    return (
        kept.select("_group", "rollout_id", "scores")
        .explode("scores")
        .unnest("scores")
        .filter(pl.col("name").is_in(list(aspects)) & pl.col("score").is_not_null())
        .rename({"name": "aspect"})
    )


def pick(scores: pl.DataFrame, groups: pl.DataFrame, aspects: tuple[str, ...], min_margin: float):
    """-> (picked: _group, aspect, chosen_id, rejected_id, s_chosen, s_rejected; rejects per (group, aspect))."""
    best = scores.sort("score", "rollout_id", descending=[True, False]).group_by("_group", "aspect").first()
    worst = scores.sort("score", "rollout_id").group_by("_group", "aspect").first()
    counts = scores.group_by("_group", "aspect").len()
    both = best.join(worst, on=["_group", "aspect"], suffix="_r").join(counts, on=["_group", "aspect"])
    picked = both.filter((pl.col("len") >= 2) & (pl.col("score") - pl.col("score_r") > min_margin)).select(
        "_group", "aspect", chosen_id="rollout_id", rejected_id="rollout_id_r", s_chosen="score", s_rejected="score_r"
    )
    every = groups.select("_group").unique().join(pl.DataFrame({"aspect": list(aspects)}), how="cross")
    missing = every.join(picked.select("_group", "aspect"), on=["_group", "aspect"], how="anti").join(
        counts, on=["_group", "aspect"], how="left"
    )
    rejects = missing.select(
        row_id=group_prompt(pl.col("_group")) + "/" + pl.col("aspect"),
        reason=pl.when(pl.col("len").fill_null(0) < 2).then(pl.lit("no_aspect_score")).otherwise(pl.lit("aspect_tie")),
        detail=pl.when(pl.col("len").fill_null(0) < 2)
        .then(pl.lit("fewer than two kept rollouts scored on ") + pl.col("aspect"))
        .otherwise(pl.lit(f"no two rollouts apart by more than min_margin {min_margin} on ") + pl.col("aspect")),
    )
    return picked, rejects


def build_aspect_pairs(
    kept: pl.DataFrame, scored: pl.DataFrame, groups: pl.DataFrame, cfg: AspectPairsConfig, pairs: PairsConfig, prompts
) -> tuple[pa.Table, pl.DataFrame]:
    """-> (PAIR_ASPECT_V1 table, rejects: row_id, reason, detail). `groups`: every pair group (_group) to account,
    with its prompt's flag (flag_reason, flag_detail; a flagged prompt is never paired, as in `pairs`)."""
    empty = pl.DataFrame(schema={"row_id": pl.String, "reason": pl.String, "detail": pl.String})
    if not cfg.aspects:
        return PAIR_ASPECT_V1.empty_table(), empty
    flagged = groups.filter(pl.col("flag_reason").is_not_null())
    aspects = pl.DataFrame({"aspect": list(cfg.aspects)})
    flag_rejects = flagged.join(aspects, how="cross").select(
        row_id=group_prompt(pl.col("_group")) + "/" + pl.col("aspect"), reason="flag_reason", detail="flag_detail"
    )
    kept = kept.join(flagged.select("_group"), on="_group", how="anti")
    open_groups = groups.filter(pl.col("flag_reason").is_null())
    picked, rejects = pick(aspect_scores(kept, cfg.aspects), open_groups, cfg.aspects, cfg.min_margin)
    rows, dropped = [], [flag_rejects, rejects]
    for aspect in cfg.aspects:  # one aspect at a time: a rollout pair may be picked for several aspects
        mine = picked.filter(pl.col("aspect") == aspect).sort("_group")
        choice = mine.with_columns(
            prompt_id=group_prompt(pl.col("_group")), pair_type=pl.lit(PAIR_TYPE), margin=pl.lit(0.0)
        ).select(PAIR_COLUMNS)
        table, filtered = build_pair_rows(choice, scored, replace(pairs, balance_length=False), prompts)
        frame = pl.from_arrow(table)
        if frame.height:
            sides = mine.select(chosen_rollout_id="chosen_id", rejected_rollout_id="rejected_id", s_c="s_chosen",
                                s_r="s_rejected")  # fmt: skip
            frame = frame.join(
                sides, on=["chosen_rollout_id", "rejected_rollout_id"], how="left", maintain_order="left"
            )
            frame = frame.with_columns(
                aspect=pl.lit(aspect),
                score_chosen="s_c",
                score_rejected="s_r",
                margin=pl.col("s_c") - pl.col("s_r"),
                pair_id=pair_ids(frame["prompt_id"] + "/" + aspect, frame["chosen_rollout_id"],
                                 frame["rejected_rollout_id"]),
            ).drop("s_c", "s_r")  # fmt: skip
            rows.append(frame)
        dropped.append(
            filtered.select(
                row_id=pl.col("payload").str.json_path_match("$.prompt_id") + "/" + aspect,
                reason="reason",
                detail="detail",
            )
        )
    out = pl.concat(rows, how="vertical") if rows else None
    table = (
        frame_to_table(out.select(PAIR_ASPECT_V1.names), PAIR_ASPECT_V1)
        if out is not None
        else PAIR_ASPECT_V1.empty_table()
    )
    return table, pl.concat(dropped, how="vertical")
