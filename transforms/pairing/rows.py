"""Chosen pairs -> PAIR_V2 rows, after the pair-level filters (agreement, length ratio, length balance).

In: the pairs strategies.choose_pairs picked, the scored rollouts they point at (reward.score_rollouts columns plus
`completion`, `task`, `split`) and the prompts' own columns (aggregate/prompts.py: `messages`, once per prompt).
Out: a PAIR_V2 table and the dropped pairs as (row_id = pair_id, reason, detail).
"""

import hashlib

import polars as pl
import pyarrow as pa

from rewardmill.schemas import PAIR_V2, PAIR_V3
from rewardmill.transforms.aggregate.prompts import prompt_columns
from rewardmill.transforms.aggregate.trajectories import chat_messages, prompt_as_fed
from rewardmill.transforms.io.frames import frame_to_table
from rewardmill.transforms.pairing.strategies import PairsConfig, length_ratio, stable_hash

SIDE_COLUMNS = ("rollout_id", "completion", "reward", "correct", "n_tokens", "confidence", "scores", "label_sources")


def pair_ids(prompt_ids: pl.Series, chosen: pl.Series, rejected: pl.Series) -> pl.Series:
    """sha256 of "<prompt_id>\\0<chosen_id>\\0<rejected_id>", hex. The keys are joined by polars and hashed in one
    loop over plain strings (iterating three Series cost more than the hashing)."""
    keys = pl.DataFrame({"p": prompt_ids, "c": chosen, "r": rejected}).select(
        pl.concat_str("p", "c", "r", separator="\x00")
    )
    sha256 = hashlib.sha256
    return pl.Series([sha256(key.encode()).hexdigest() for key in keys.to_series().to_list()], dtype=pl.String)


def pair_agreement(pairs: pl.DataFrame) -> pl.Series:
    """Per pair (with both sides' named scores, `scores_c` and `scores_r`): share of the named scores present on
    both sides that order the pair as it is (ties count against); 0.0 when no score is on both sides."""
    numbered = pairs.select("scores_c", "scores_r").with_row_index("_pair")  # an integer key per pair

    def side(column: str, score: str) -> pl.DataFrame:
        exploded = numbered.select("_pair", column).explode(column).unnest(column)
        return exploded.filter(pl.col("score").is_not_null()).rename({"score": score})

    votes = (
        side("scores_c", "s_chosen")
        .join(side("scores_r", "s_rejected"), on=["_pair", "name"])
        .group_by("_pair")
        .agg(agreement=(pl.col("s_chosen") > pl.col("s_rejected")).mean())
    )
    return (
        numbered.select("_pair").join(votes, on="_pair", how="left", maintain_order="left")["agreement"].fill_null(0.0)
    )


def filter_pairs(pairs: pl.DataFrame, cfg: PairsConfig) -> tuple[pl.DataFrame, pl.DataFrame]:
    """pairs with pair_id, agreement, n_tokens_c, n_tokens_r -> (kept, dropped as row_id/reason/detail)."""
    ratio = length_ratio(pl.col("n_tokens_c"), pl.col("n_tokens_r"))
    reason = pl.when(pl.col("agreement") < cfg.min_agreement).then(pl.lit("low_agreement"))
    detail = pl.when(pl.col("agreement") < cfg.min_agreement).then(
        pl.lit("agreement ")
        + pl.col("agreement").round(4).cast(pl.String)
        + pl.lit(f" < min_agreement {cfg.min_agreement}")
    )
    if cfg.max_length_ratio is not None:
        reason = reason.when(ratio > cfg.max_length_ratio).then(pl.lit("length_ratio"))
        detail = detail.when(ratio > cfg.max_length_ratio).then(
            pl.lit("token ratio ")
            + ratio.round(3).cast(pl.String)
            + pl.lit(f" > max_length_ratio {cfg.max_length_ratio}")
        )
    marked = pairs.with_columns(_reason=reason.otherwise(None), _detail=detail.otherwise(None))
    if cfg.balance_length:
        marked = balance(marked)
    dropped = marked.filter(pl.col("_reason").is_not_null()).select(
        row_id="pair_id",
        reason="_reason",
        detail=pl.col("pair_type") + pl.lit(": ") + pl.col("_detail"),
        payload=pl.struct("prompt_id", "pair_type", chosen="chosen_id", rejected="rejected_id").struct.json_encode(),
    )
    return marked.filter(pl.col("_reason").is_null()).drop("_reason", "_detail"), dropped


def balance(marked: pl.DataFrame) -> pl.DataFrame:
    """Mark pairs whose chosen side is longer (lowest hash of pair_id first) until it is longer in at most half of the
    pairs left: the length-only preference then explains no more than chance."""
    alive = marked.filter(pl.col("_reason").is_null())
    longer = alive.filter(pl.col("n_tokens_c") > pl.col("n_tokens_r"))
    excess = max(0, longer.height - (alive.height - longer.height))
    if excess == 0:
        return marked
    victims = (
        longer.with_columns(_h=stable_hash(longer["pair_id"], 0))
        .sort("_h", "pair_id")
        .head(excess)["pair_id"]
        .to_list()
    )
    hit = pl.col("pair_id").is_in(victims)
    return marked.with_columns(
        _reason=pl.when(hit).then(pl.lit("length_balance")).otherwise(pl.col("_reason")),
        _detail=pl.when(hit)
        .then(pl.lit(f"chosen was longer in {longer.height} of {alive.height} pairs; balance_length drops {excess}"))
        .otherwise(pl.col("_detail")),
    )


def build_pair_rows(
    picked: pl.DataFrame,
    scored: pl.DataFrame,
    cfg: PairsConfig,
    prompts: pl.DataFrame | None = None,
    trajectories: bool = False,
) -> tuple[pa.Table, pl.DataFrame]:
    """picked (strategies.PAIR_COLUMNS) + scored rollouts -> (PAIR_V2 table, dropped pairs). `prompts`: the prompts'
    own columns (aggregate/prompts.PROMPT_COLUMNS); None = `scored` carries them. With `trajectories` (scored
    carries `turns` and `tools`): PAIR_V3, each side every message after the prompt, tool calls included."""
    columns = (*SIDE_COLUMNS, "turns", "tools", "prompt_messages") if trajectories else SIDE_COLUMNS
    side = scored.select(*columns)
    chosen = scored.select(*columns, "task", "split").rename({c: f"{c}_c" for c in columns})
    messages = prompt_columns(scored, prompts).select("prompt_id", "messages")
    pairs = (
        picked.join(chosen, left_on="chosen_id", right_on="rollout_id_c")  # the sample columns are the chosen's
        .join(side.rename({c: f"{c}_r" for c in columns}), left_on="rejected_id", right_on="rollout_id_r")
        .join(messages, on="prompt_id", how="left")
    )
    pairs = pairs.with_columns(pair_id=pair_ids(pairs["prompt_id"], pairs["chosen_id"], pairs["rejected_id"]))
    pairs = pairs.with_columns(agreement=pair_agreement(pairs))
    kept, dropped = filter_pairs(pairs, cfg)
    assistant = {"role": pl.lit("assistant")}
    if trajectories:
        sides = {
            "chosen": chat_messages("turns_c", "completion_c"),
            "rejected": chat_messages("turns_r", "completion_r"),
        }
    else:
        sides = {
            "chosen": pl.concat_list(pl.struct(**assistant, content=pl.col("completion_c"))),
            "rejected": pl.concat_list(pl.struct(**assistant, content=pl.col("completion_r"))),
        }
    rows = kept.select(
        "pair_id",
        "prompt_id",
        # one environment ran the prompt's episodes: the chosen side's fed prompt is the rejected side's too
        prompt=prompt_as_fed("messages", "prompt_messages_c") if trajectories else pl.col("messages"),
        **sides,
        score_chosen="reward_c",
        score_rejected="reward_r",
        margin=pl.col("reward_c") - pl.col("reward_r"),
        confidence=pl.min_horizontal("confidence_c", "confidence_r"),
        agreement="agreement",
        pair_type="pair_type",
        chosen_rollout_id="chosen_id",
        rejected_rollout_id="rejected_id",
        chosen_n_tokens="n_tokens_c",
        rejected_n_tokens="n_tokens_r",
        chosen_correct="correct_c",
        rejected_correct="correct_r",
        scores_chosen="scores_c",
        scores_rejected="scores_r",
        # both lists are sorted and distinct (reward.label_sources): their union, sorted
        label_sources=pl.col("label_sources_c").list.set_union("label_sources_r").list.sort(),
        task="task",
        split="split",
        **({"tools": pl.coalesce("tools_c", "tools_r")} if trajectories else {}),
    )
    # in no particular order: the writer sorts by pair_id
    return frame_to_table(rows, PAIR_V3 if trajectories else PAIR_V2), dropped
