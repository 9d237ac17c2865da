"""Pair strategies over scored rollouts, vectorized per prompt (polars): which (chosen, rejected) pairs to build.

In: kept rollouts (prompt_id, rollout_id, reward, correct, n_tokens) and every prompt id that should be accounted
for. Out: candidate pairs (prompt_id, chosen_id, rejected_id, pair_type, margin, ...) and, for each (strategy,
prompt) that yields no pair, one reject reason. Ties are never paired (Bradley-Terry cannot use them): a pair needs
reward_chosen - reward_rejected > min_margin >= 0. Every choice breaks ties by rollout id or a seeded hash, so the
result never depends on row order.

Strategies:
- best_vs_worst: the highest reward against the lowest.
- best_vs_random: the highest against a seeded-random rollout with a lower reward (UltraFeedback binarized).
- all_above_margin: every pair above the margin, largest margins first, at most max_pairs_per_prompt.
- correct_vs_incorrect: rule-verified correct against verified incorrect (high-precision pairs), largest margins
  first, at most max_pairs_per_prompt.
- length_matched: the pair whose lengths are closest (longer side <= length_match_ratio x shorter), to train
  preferences that length cannot explain.
"""

import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from rewardmill.schemas.pair import PAIR_TYPES


@dataclass(frozen=True)
class PairsConfig:
    """params `assemble.pairs`."""

    strategies: tuple[str, ...] = ("best_vs_worst",)  # a pair two strategies choose is kept once, for the first
    min_margin: float = 0.0  # pairs need score_chosen - score_rejected > min_margin
    min_agreement: float = 0.0  # pairs whose labelers order them the same less often are dropped
    max_pairs_per_prompt: int = 4  # cap of all_above_margin and correct_vs_incorrect
    max_length_ratio: float | None = None  # drop pairs whose longer side has more than this x the shorter's tokens
    length_match_ratio: float = 1.5  # length_matched: the longer side has at most this x the shorter's tokens
    balance_length: bool = False  # drop pairs (by hash) until chosen is the longer side in at most half of them
    seed: int = 0  # best_vs_random's choice
    cross_policy: bool = False  # a candidate pool's policies pair with each other; False: pairs stay on-policy

    def __post_init__(self):
        unknown = [s for s in self.strategies if s not in PAIR_TYPES]
        if unknown or not self.strategies:
            raise ValueError(f"strategies must be a non-empty list of {list(PAIR_TYPES)}, got {list(self.strategies)}")
        if len(set(self.strategies)) != len(self.strategies):
            raise ValueError(f"strategies name one twice: {list(self.strategies)}")
        if self.min_margin < 0:
            raise ValueError(f"min_margin must be >= 0 (ties are never paired), got {self.min_margin}")
        if not 0.0 <= self.min_agreement <= 1.0:
            raise ValueError(f"min_agreement must be in [0, 1], got {self.min_agreement}")
        if self.max_pairs_per_prompt < 1:
            raise ValueError(f"max_pairs_per_prompt must be >= 1, got {self.max_pairs_per_prompt}")
        for name in ("max_length_ratio", "length_match_ratio"):
            value = getattr(self, name)
            if value is not None and value < 1.0:
                raise ValueError(f"{name} must be >= 1 (longer / shorter), got {value}")


PAIR_COLUMNS = ("prompt_id", "chosen_id", "rejected_id", "pair_type", "margin")
GROUP_SEPARATOR = "@"  # never in a prompt id (a hex digest) nor in a policy name (rollouts.policies)


def pair_group(cross_policy: bool) -> pl.Expr:
    """The rollouts pairs are drawn from, as an id: a prompt's rollouts (`cross_policy`), or those of one policy of
    the prompt, `<prompt_id>@<policy>`, where rollouts of several policies share the prompt (a prompt that one
    policy sampled keeps its plain id). Reads `prompt_id` and `policy` (the name); give it every rollout of a prompt,
    so that the groups never depend on filters."""
    if cross_policy:
        return pl.col("prompt_id")
    several = pl.col("policy").n_unique().over("prompt_id") > 1
    return pl.when(several).then(pl.col("prompt_id") + GROUP_SEPARATOR + pl.col("policy")).otherwise("prompt_id")


def group_prompt(group: pl.Expr) -> pl.Expr:
    """A pair group id -> its prompt id."""
    return group.str.split(GROUP_SEPARATOR).list.first()


def length_ratio(a: pl.Expr, b: pl.Expr) -> pl.Expr:
    """longer / shorter token count (an empty side counts as 1 token)."""
    return pl.max_horizontal(a, b).cast(pl.Float64) / pl.min_horizontal(a, b).clip(lower_bound=1).cast(pl.Float64)


def stable_hash(values: pl.Series, seed: int) -> pl.Series:
    """blake2b of (seed, value) as UInt64: the same order on every machine, process and polars version (polars' own
    hash is only stable within one version)."""
    key = str(seed).encode() + b"\x00"
    return pl.Series(
        [int.from_bytes(hashlib.blake2b(key + v.encode(), digest_size=8).digest(), "big") for v in values],
        dtype=pl.UInt64,
    )


def candidates(kept: pl.DataFrame, chosen: pl.Expr | None = None, rejected: pl.Expr | None = None) -> pl.DataFrame:
    """Every ordered (chosen, rejected) of a prompt with reward_chosen > reward_rejected, optionally only chosen rows
    matching `chosen` and rejected rows matching `rejected` (filtered before the join: n^2 per prompt adds up)."""
    side = kept.select("prompt_id", "rollout_id", "reward", "correct", "n_tokens")
    left = side.filter(chosen) if chosen is not None else side
    right = side.filter(rejected) if rejected is not None else side
    right = right.rename({c: f"{c}_r" for c in side.columns if c != "prompt_id"})
    return (
        left.join(right, on="prompt_id")
        .filter(pl.col("reward") > pl.col("reward_r"))
        .rename({"rollout_id": "chosen_id", "rollout_id_r": "rejected_id"})
        .with_columns(margin=pl.col("reward") - pl.col("reward_r"))
    )


def top_per_prompt(frame: pl.DataFrame, by: list[str], descending: list[bool], k: int) -> pl.DataFrame:
    """The first k rows of each prompt in (by, descending) order. Every `by` ends in ids, so the order is total."""
    ordered = frame.sort(["prompt_id", *by], descending=[False, *descending])
    return ordered.group_by("prompt_id", maintain_order=True).head(k)


def best_rollouts(kept: pl.DataFrame) -> pl.DataFrame:
    """prompt_id -> chosen_id, its reward: the highest reward, the lowest rollout id among equals."""
    best = top_per_prompt(kept.select("prompt_id", "rollout_id", "reward"), ["reward", "rollout_id"], [True, False], 1)
    return best.rename({"rollout_id": "chosen_id"})


def select(
    strategy: str, kept: pl.DataFrame, cfg: PairsConfig, every_pair: Callable[[], pl.DataFrame] | None = None
) -> pl.DataFrame:
    """The pairs one strategy picks (prompt_id, chosen_id, rejected_id, margin); all above min_margin.
    `every_pair()` gives candidates(kept) (choose_pairs builds it once for the strategies that need it)."""
    every_pair = every_pair or (lambda: candidates(kept))
    above = pl.col("margin") > cfg.min_margin
    cap = cfg.max_pairs_per_prompt
    if strategy in ("best_vs_worst", "best_vs_random"):
        best = best_rollouts(kept)
        lower = (
            kept.select("prompt_id", rejected_id="rollout_id", reward_r="reward")
            .join(best, on="prompt_id")
            .with_columns(margin=pl.col("reward") - pl.col("reward_r"))
            .filter(above)
        )
        if strategy == "best_vs_worst":  # the lowest reward, the lowest rollout id among equals
            picked = top_per_prompt(lower, ["reward_r", "rejected_id"], [False, False], 1)
        else:
            ranked = lower.with_columns(_rank=stable_hash(lower["rejected_id"], cfg.seed))
            picked = top_per_prompt(ranked, ["_rank", "rejected_id"], [False, False], 1)
    elif strategy == "all_above_margin":
        picked = top_per_prompt(
            every_pair().filter(above), ["margin", "chosen_id", "rejected_id"], [True, False, False], cap
        )
    elif strategy == "correct_vs_incorrect":
        verified = candidates(kept, pl.col("correct").fill_null(False), (~pl.col("correct")).fill_null(False))
        picked = top_per_prompt(
            verified.filter(above), ["margin", "chosen_id", "rejected_id"], [True, False, False], cap
        )
    elif strategy == "length_matched":
        ratio = length_ratio(pl.col("n_tokens"), pl.col("n_tokens_r"))
        matched = (
            every_pair().filter(above).with_columns(_ratio=ratio).filter(pl.col("_ratio") <= cfg.length_match_ratio)
        )
        picked = top_per_prompt(
            matched, ["_ratio", "margin", "chosen_id", "rejected_id"], [False, True, False, False], 1
        )
    else:  # PairsConfig rejects unknown names; this guards direct callers
        raise ValueError(f"unknown pair strategy {strategy!r}; known: {list(PAIR_TYPES)}")
    return picked.select("prompt_id", "chosen_id", "rejected_id", "margin").with_columns(pair_type=pl.lit(strategy))


def prompt_stats(prompts: pl.DataFrame, kept: pl.DataFrame) -> pl.DataFrame:
    """`prompts` (prompt_id, flag_reason, flag_detail) + what every strategy's reasons read from its kept rollouts:
    n, best, worst, n_correct, n_incorrect (nulls for a prompt without kept rollouts)."""
    stats = kept.group_by("prompt_id").agg(
        n=pl.len(),
        best=pl.col("reward").max(),
        worst=pl.col("reward").min(),
        n_correct=pl.col("correct").fill_null(False).sum(),
        n_incorrect=(~pl.col("correct")).fill_null(False).sum(),
    )
    return prompts.join(stats, on="prompt_id", how="left")


def no_pair_reasons(strategy: str, stats: pl.DataFrame, picked: pl.DataFrame, cfg: PairsConfig) -> pl.DataFrame:
    """One (row_id, reason, detail) per prompt in `stats` (prompt_stats) that `strategy` gave no pair;
    row_id = "<prompt_id>/<strategy>" so two strategies' rejects of one prompt stay distinct."""
    missing = stats.join(picked.select("prompt_id").unique(), on="prompt_id", how="anti")
    n = pl.col("n").fill_null(0)
    spread = pl.col("best") - pl.col("worst")
    specific = {
        "correct_vs_incorrect": (
            pl.when(pl.col("n_correct") == 0)
            .then(pl.lit("no_correct_rollout"))
            .when(pl.col("n_incorrect") == 0)
            .then(pl.lit("no_incorrect_rollout"))
            .otherwise(pl.lit("below_min_margin"))
        ),
        "length_matched": pl.lit("no_length_match"),
    }.get(strategy, pl.lit("below_min_margin"))
    reason = (
        pl.when(pl.col("flag_reason").is_not_null())
        .then(pl.col("flag_reason"))
        .when(n < 2)
        .then(pl.lit("too_few_scored"))
        .when(spread == 0)
        .then(pl.lit("tie"))
        .when(spread <= cfg.min_margin)
        .then(pl.lit("below_min_margin"))
        .otherwise(specific)
    )
    detail = (
        pl.when(pl.col("flag_reason").is_not_null())
        .then(pl.col("flag_detail"))
        .when(n < 2)
        .then(n.cast(pl.String) + pl.lit(" kept scored rollout(s); a pair needs 2"))
        .when(spread == 0)
        .then(
            pl.lit("all ") + n.cast(pl.String) + pl.lit(" kept rollouts have reward ") + pl.col("best").cast(pl.String)
        )
        .otherwise(
            pl.lit(f"min_margin {cfg.min_margin}, length_match_ratio {cfg.length_match_ratio}, best ")
            + pl.col("best").round(4).cast(pl.String)
            + pl.lit(", worst ")
            + pl.col("worst").round(4).cast(pl.String)
        )
    )
    return missing.select(
        row_id=pl.col("prompt_id") + pl.lit(f"/{strategy}"),
        reason=reason,
        detail=pl.lit(f"{strategy}: ") + detail,
    )


def choose_pairs(
    kept: pl.DataFrame, prompts: pl.DataFrame, cfg: PairsConfig
) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """-> (pairs: PAIR_COLUMNS, first strategy wins a pair two choose; rejects: row_id, reason, detail;
    the number of pairs a later strategy chose again)."""
    flagged = prompts.filter(pl.col("flag_reason").is_not_null()).select("prompt_id")
    kept = kept.join(flagged, on="prompt_id", how="anti")  # a flagged prompt is never paired, whatever its rollouts
    stats = prompt_stats(prompts, kept)
    every_pair = functools.cache(lambda: candidates(kept))  # n^2 per prompt: built once, if a strategy needs it
    chosen, rejects = [], []
    for strategy in cfg.strategies:
        picked = select(strategy, kept, cfg, every_pair)
        chosen.append(picked)
        rejects.append(no_pair_reasons(strategy, stats, picked, cfg))
    every = pl.concat(chosen, how="vertical")
    pairs = every.unique(subset=["prompt_id", "chosen_id", "rejected_id"], keep="first", maintain_order=True)
    return pairs.select(PAIR_COLUMNS), pl.concat(rejects, how="vertical"), every.height - pairs.height
