"""Every output of `assemble` for one bucket of prompts, from its rollouts and labels (pure, polars).

In: the rollouts and labels of a set of whole prompts (a bucket: all rollouts of a prompt land in the same one) as
Arrow tables, and the prompt flags of the prompt-level filters. Out: Arrow tables for each output folder
(`_rewards` REWARD_V1, `pairs` PAIR_V2, `rl` RL_V1, `sft` SFT_V1), their REJECT_V1 rejects, and counts the manifest
reports. Buckets never share a prompt, so the outputs of all buckets are the union of independent results.
"""

from dataclasses import dataclass, field

import polars as pl
import pyarrow as pa

from rewardmill.schemas import REJECT_V1, REWARD_V1
from rewardmill.transforms.aggregate.reward import LABEL_COLUMNS, AggregateConfig, score_rollouts
from rewardmill.transforms.aggregate.rl import RlConfig, build_rl_rows
from rewardmill.transforms.aggregate.sft import SftConfig, build_sft_rows
from rewardmill.transforms.aggregate.status import KEPT, RolloutFilterConfig, flags_frame, with_status
from rewardmill.transforms.io.frames import frame_to_table
from rewardmill.transforms.pairing.rows import build_pair_rows
from rewardmill.transforms.pairing.strategies import PairsConfig, choose_pairs, group_prompt, pair_group

STAGE = "assemble"
# The columns of the rollouts the core reads: its own (SAMPLE_COLUMNS) and the prompt's (PROMPT_COLUMNS), which a
# rollouts table repeats on each of a prompt's samples.
SAMPLE_COLUMNS = ("rollout_id", "prompt_id", "task", "split", "completion", "n_tokens", "finish_reason", "policy")
PROMPT_COLUMNS = ("prompt_id", "messages", "reference", "tests", "constraints")
ROLLOUT_COLUMNS = (*SAMPLE_COLUMNS, *PROMPT_COLUMNS[1:])


@dataclass(frozen=True)
class CoreConfig:
    aggregate: AggregateConfig = field(default_factory=AggregateConfig)
    rollouts: RolloutFilterConfig = field(default_factory=RolloutFilterConfig)
    pairs: PairsConfig = field(default_factory=PairsConfig)
    rl: RlConfig = field(default_factory=RlConfig)
    sft: SftConfig = field(default_factory=SftConfig)


@dataclass
class BucketResult:
    tables: dict[str, pa.Table]  # output folder -> rows
    rejects: dict[str, pa.Table]  # output folder -> REJECT_V1 rows
    counts: dict[str, int]  # additive counts: summed over buckets into the manifests


def reject_table(frame: pl.DataFrame) -> pa.Table:
    """(row_id, reason, detail[, payload JSON]) -> REJECT_V1 rows of this stage."""
    payload = pl.col("payload") if "payload" in frame.columns else pl.lit(None, dtype=pl.String)
    rows = frame.select(stage=pl.lit(STAGE), row_id="row_id", reason="reason", detail="detail", payload=payload)
    return frame_to_table(rows, REJECT_V1)


def assemble_bucket(
    rollouts: pa.Table,
    labels: pa.Table,
    flags: dict[str, tuple[str, str]],
    cfg: CoreConfig,
    prompts: pa.Table | None = None,
) -> BucketResult:
    """Rollouts (ROLLOUT_COLUMNS; or SAMPLE_COLUMNS with the prompts' PROMPT_COLUMNS in `prompts`, once or more per
    prompt) and their labels -> every output. Scoring and pairing never touch the prompt columns; they are joined
    back for the rows that carry them."""
    if prompts is None:
        prompts = rollouts.select(list(PROMPT_COLUMNS))
    ro = pl.from_arrow(rollouts.select(list(SAMPLE_COLUMNS)))
    assert isinstance(ro, pl.DataFrame)
    ro = ro.with_columns(policy=pl.col("policy").struct.field("name"))  # a candidate pool's member
    lab = pl.from_arrow(labels.select(list(LABEL_COLUMNS)))
    prompt_rows = pl.from_arrow(prompts.select(list(PROMPT_COLUMNS)))
    assert isinstance(lab, pl.DataFrame) and isinstance(prompt_rows, pl.DataFrame)
    # a prompt's columns are equal on all its rows (its id is a hash of its messages): any copy will do
    prompt_rows = prompt_rows.unique("prompt_id", keep="any")
    present = set(ro["prompt_id"].unique().to_list())
    flags = {p: f for p, f in flags.items() if p in present}  # callers may pass flags of other buckets too

    orphans = lab.join(ro.select("rollout_id"), on="rollout_id", how="anti").select(
        row_id=pl.col("rollout_id") + "/" + pl.col("labeler") + "/" + pl.col("aspect"),
        reason=pl.lit("orphan_label"),
        detail=pl.lit("label from ") + pl.col("labeler") + pl.lit(" has no rollout"),
    )
    scored = with_status(score_rollouts(ro, lab, cfg.aggregate), flags, cfg.rollouts)
    kept = scored.filter(pl.col("status") == KEPT)
    with_prompt = scored.join(prompt_rows, on="prompt_id", how="left", maintain_order="left")  # for the row builders
    prompts = (
        scored.select("prompt_id").unique().sort("prompt_id").join(flags_frame(flags), on="prompt_id", how="left")
    )

    # Pairs come from one prompt's rollouts of one policy (or of all, with cross_policy): the strategies see each
    # such group as a prompt, and the picked pairs get their prompt id back.
    group_of = scored.select("rollout_id", "prompt_id", group=pair_group(cfg.pairs.cross_policy))
    groups = group_of.select("group", "prompt_id").unique().join(flags_frame(flags), on="prompt_id", how="left")
    picked, no_pair, repeated = choose_pairs(
        kept.join(group_of.select("rollout_id", "group"), on="rollout_id").with_columns(prompt_id="group"),
        groups.drop("prompt_id").rename({"group": "prompt_id"}).sort("prompt_id"),
        cfg.pairs,
    )
    picked = picked.with_columns(prompt_id=group_prompt(pl.col("prompt_id")))
    pairs, dropped = build_pair_rows(picked, with_prompt, cfg.pairs)
    sft, sft_rejects = build_sft_rows(with_prompt, cfg.sft)
    rl = build_rl_rows(with_prompt, set(flags), cfg.rl)
    rl_rejects = flags_frame(flags).select(row_id="prompt_id", reason="flag_reason", detail="flag_detail")
    rewards = frame_to_table(scored.select(REWARD_V1.names), REWARD_V1)
    not_kept = scored.filter(pl.col("status") != KEPT).select(
        row_id="rollout_id", reason="status", detail="status_detail"
    )
    counts = {
        "rollouts": ro.height,
        "labels": lab.height,
        "prompts": prompts.height,
        "rollouts_kept": kept.height,
        "pairs_candidates": picked.height + repeated,
        "pairs_repeated": repeated,  # chosen again by a later strategy: kept once, as the first strategy's
        "pairs_dropped": dropped.height,
        "pairs_written": pairs.num_rows,
    }
    return BucketResult(
        tables={"_rewards": rewards, "pairs": pairs, "rl": rl, "sft": sft},
        rejects={
            "_rewards": reject_table(pl.concat([not_kept, orphans])),
            "pairs": reject_table(pl.concat([no_pair, dropped], how="diagonal")),
            "rl": reject_table(rl_rejects),
            "sft": reject_table(sft_rejects),
        },
        counts=counts,
    )
