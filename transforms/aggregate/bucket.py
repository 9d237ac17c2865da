"""Every output of `assemble` for one bucket of prompts, from its rollouts and labels (pure, polars).

In: the rollouts and labels of a set of whole prompts (a bucket: all rollouts of a prompt land in the same one) as
Arrow tables, and the prompt flags of the prompt-level filters. Out: Arrow tables for each output folder
(`_rewards` REWARD_V1, `pairs` PAIR_V2, `rl` RL_V1, `sft` SFT_V1), their REJECT_V1 rejects, and counts the manifest
reports. Buckets never share a prompt, so the outputs of all buckets are the union of independent results.
"""

from dataclasses import dataclass, field

import polars as pl
import pyarrow as pa

from rewardmill.schemas import REJECT_V1, REWARD_V1, ROLLOUT_V2, ROLLOUT_V3
from rewardmill.transforms.aggregate.prompts import PROMPT_COLUMNS, prompt_columns
from rewardmill.transforms.aggregate.reward import LABEL_COLUMNS, AggregateConfig, score_rollouts
from rewardmill.transforms.aggregate.rl import RlConfig, build_rl_rows
from rewardmill.transforms.aggregate.sft import SftConfig, build_sft_rows
from rewardmill.transforms.aggregate.status import KEPT, RolloutFilterConfig, flags_frame, with_status
from rewardmill.transforms.aggregate.trajectories import TRAJECTORY_COLUMNS
from rewardmill.transforms.io.frames import frame_to_table
from rewardmill.transforms.pairing.by_aspect import AspectPairsConfig, build_aspect_pairs
from rewardmill.transforms.pairing.rows import build_pair_rows
from rewardmill.transforms.pairing.strategies import PairsConfig, choose_pairs, group_prompt, pair_group

STAGE = "assemble"
# The columns of the rollouts the core reads: its own (SAMPLE_COLUMNS) and the prompt's (PROMPT_COLUMNS), which a
# rollouts table repeats on each of a prompt's samples.
SAMPLE_COLUMNS = ("rollout_id", "prompt_id", "task", "split", "completion", "n_tokens", "finish_reason", "policy")
ROLLOUT_COLUMNS = (*SAMPLE_COLUMNS, *PROMPT_COLUMNS[1:])


def rollout_read(trajectories: bool) -> tuple[pa.Schema, list[str]]:
    """(schema, columns) assemble reads of a rollouts shard: ROLLOUT_COLUMNS, and of trajectories ROLLOUT_V3 with
    their own columns too."""
    if trajectories:
        return ROLLOUT_V3, [*ROLLOUT_COLUMNS, *TRAJECTORY_COLUMNS]
    return ROLLOUT_V2, list(ROLLOUT_COLUMNS)


def sample_columns(trajectories: bool) -> tuple[str, ...]:
    """The rollouts' own columns the core reads: SAMPLE_COLUMNS, and the trajectory's for trajectories."""
    return (*SAMPLE_COLUMNS, *TRAJECTORY_COLUMNS) if trajectories else SAMPLE_COLUMNS


@dataclass(frozen=True)
class CoreConfig:
    aggregate: AggregateConfig = field(default_factory=AggregateConfig)
    rollouts: RolloutFilterConfig = field(default_factory=RolloutFilterConfig)
    pairs: PairsConfig = field(default_factory=PairsConfig)
    rl: RlConfig = field(default_factory=RlConfig)
    sft: SftConfig = field(default_factory=SftConfig)
    # The rollouts are trajectories (an environment ran them): pairs, SFT and RL rows carry their messages, tools and
    # environment (PAIR_V3, SFT_V2, RL_V2). Set by the stage from the rollouts' manifest, not a param.
    trajectories: bool = False
    # (labeler, prompt_id): a generated rubric the rubric validation flagged and drops (assemble.rubric_validation
    # drop): that labeler's labels of the prompt's rollouts leave the reward. Set by the stage, not a param.
    dropped_rubrics: tuple[tuple[str, str], ...] = ()
    by_aspect: AspectPairsConfig = field(default_factory=AspectPairsConfig)  # params assemble.pairs_by_aspect


@dataclass
class BucketResult:
    tables: dict[str, pa.Table]  # output folder -> rows
    rejects: dict[str, pa.Table]  # output folder -> REJECT_V1 rows
    counts: dict[str, int]  # additive counts: summed over buckets into the manifests


def as_frame(data: pa.Table | pl.DataFrame, columns: tuple[str, ...]) -> pl.DataFrame:
    """`columns` of a table or frame, as a frame."""
    if isinstance(data, pl.DataFrame):
        return data.select(columns)
    frame = pl.from_arrow(data.select(list(columns)))
    assert isinstance(frame, pl.DataFrame)
    return frame


def reject_table(frame: pl.DataFrame) -> pa.Table:
    """(row_id, reason, detail[, payload JSON]) -> REJECT_V1 rows of this stage."""
    payload = pl.col("payload") if "payload" in frame.columns else pl.lit(None, dtype=pl.String)
    rows = frame.select(stage=pl.lit(STAGE), row_id="row_id", reason="reason", detail="detail", payload=payload)
    return frame_to_table(rows, REJECT_V1)


def without_dropped_rubrics(labels: pl.DataFrame, rollouts: pl.DataFrame, dropped) -> pl.DataFrame:
    """`labels` without the dropped rubrics' labels: (labeler, prompt_id) pairs, matched through the rollouts."""
    if not dropped:
        return labels
    drop = pl.DataFrame(list(dropped), schema={"labeler": pl.String, "prompt_id": pl.String}, orient="row")
    gone = drop.join(rollouts.select("rollout_id", "prompt_id"), on="prompt_id").select("rollout_id", "labeler")
    return labels.join(gone, on=["rollout_id", "labeler"], how="anti", maintain_order="left")


def assemble_bucket(
    rollouts: pa.Table | pl.DataFrame,
    labels: pa.Table | pl.DataFrame,
    flags: dict[str, tuple[str, str]],
    cfg: CoreConfig,
    prompts: pa.Table | pl.DataFrame | None = None,
) -> BucketResult:
    """Rollouts (ROLLOUT_COLUMNS; or SAMPLE_COLUMNS with the prompts' PROMPT_COLUMNS in `prompts`, once or more per
    prompt) and their labels, as Arrow tables or polars frames -> every output. Scoring and pairing never touch the
    prompt columns; they are joined back for the rows that carry them."""
    own = sample_columns(cfg.trajectories)
    ro = as_frame(rollouts, own).with_columns(policy=pl.col("policy").struct.field("name"))  # pool member
    lab = as_frame(labels, LABEL_COLUMNS)
    # a prompt's columns are equal on all its rows (its id is a hash of its messages): any copy will do
    prompt_rows = prompt_columns(as_frame(prompts if prompts is not None else rollouts, PROMPT_COLUMNS), None)
    if flags:  # callers may pass flags of other buckets too
        present = set(ro["prompt_id"].unique().to_list())
        flags = {p: f for p, f in flags.items() if p in present}

    orphans = lab.join(ro.select("rollout_id"), on="rollout_id", how="anti").select(
        row_id=pl.col("rollout_id") + "/" + pl.col("labeler") + "/" + pl.col("aspect"),
        reason=pl.lit("orphan_label"),
        detail=pl.lit("label from ") + pl.col("labeler") + pl.lit(" has no rollout"),
    )
    scoring = without_dropped_rubrics(lab, ro, cfg.dropped_rubrics)
    scored = with_status(score_rollouts(ro, scoring, cfg.aggregate), flags, cfg.rollouts)
    # Pairs come from one prompt's rollouts of one policy (or of all, with cross_policy): the strategies see each
    # such group as a prompt, and the picked pairs get their prompt id back. Groups are read off every rollout of a
    # prompt, before any filter.
    scored = scored.with_columns(_group=pair_group(cfg.pairs.cross_policy))
    kept = scored.filter(pl.col("status") == KEPT)

    groups = scored.select("_group", "prompt_id").unique().join(flags_frame(flags), on="prompt_id", how="left")
    picked, no_pair, repeated = choose_pairs(
        kept.with_columns(prompt_id="_group"),
        groups.drop("prompt_id").rename({"_group": "prompt_id"}).sort("prompt_id"),
        cfg.pairs,
    )
    picked = picked.with_columns(prompt_id=group_prompt(pl.col("prompt_id")))
    pairs, dropped = build_pair_rows(picked, scored, cfg.pairs, prompt_rows, cfg.trajectories)
    by_aspect, aspect_rejects = build_aspect_pairs(kept, scored, groups, cfg.by_aspect, cfg.pairs, prompt_rows)
    sft, sft_rejects = build_sft_rows(scored, cfg.sft, prompt_rows, cfg.trajectories)
    rl = build_rl_rows(scored, set(flags), cfg.rl, prompt_rows, cfg.trajectories)
    rl_rejects = flags_frame(flags).select(row_id="prompt_id", reason="flag_reason", detail="flag_detail")
    rewards = frame_to_table(scored.select(REWARD_V1.names), REWARD_V1)
    not_kept = scored.filter(pl.col("status") != KEPT).select(
        row_id="rollout_id", reason="status", detail="status_detail"
    )
    counts = {
        "rollouts": ro.height,
        "labels": lab.height,
        "labels_dropped_rubric": lab.height - scoring.height,  # assemble.rubric_validation drop
        "prompts": scored["prompt_id"].n_unique(),
        "rollouts_kept": kept.height,
        "pairs_candidates": picked.height + repeated,
        "pairs_repeated": repeated,  # chosen again by a later strategy: kept once, as the first strategy's
        "pairs_dropped": dropped.height,
        "pairs_written": pairs.num_rows,
        "aspect_pairs_written": by_aspect.num_rows,
    }
    return BucketResult(
        tables={"_rewards": rewards, "pairs": pairs, "rl": rl, "sft": sft, "pairs_by_aspect": by_aspect},
        rejects={
            "_rewards": reject_table(pl.concat([not_kept, orphans])),
            "pairs": reject_table(pl.concat([no_pair, dropped], how="diagonal")),
            "rl": reject_table(rl_rejects),
            "sft": reject_table(sft_rejects),
            "pairs_by_aspect": reject_table(aspect_rejects),
        },
        counts=counts,
    )
