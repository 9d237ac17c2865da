"""DVC metrics of the configs assemble writes (one folder in, plain dict out; see metrics.py for the layout).

pairs (PAIR_V2)     count, splits, pair_types (counts), mean_margin, mean_agreement, mean_confidence,
                    length_bias (share of pairs whose chosen side has more tokens), length_ties (same tokens)
rl (RL_V1)          rows, splits, difficulty (counts), mean_pass_rate (over prompts with a pass rate),
                    share_zero_pass, share_all_pass (over all prompts: the ones with no group-relative signal)
sft (SFT_V1)        rows, splits, mean_reward, mean_n_tokens, share_correct
prm (PRM_V1)        rows, methods (counts), splits, mean_steps, share_with_error
rewards (REWARD_V1) rows, status (counts), kept, mean_reward, mean_confidence, mean_agreement (kept rollouts),
                    length_correlation {n, pearson, spearman}: reward against n_tokens over the kept rollouts;
                    reasoning_length_correlation, the same against reasoning_tokens (only where rollouts count them)
                    with a reward (null below 3 of them or when either side is constant)
"""

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from rewardmill.transforms.validation.folders import column_names, read_columns
from rewardmill.transforms.validation.stats import mean, pearson, rounded, share, spearman, value_counts

KEPT = "kept"  # REWARD_V1 status of a rollout the outputs may use


def count_true(array: pa.ChunkedArray) -> int:
    return pc.sum(array).as_py() or 0


def pair_metrics(directory: str | Path) -> dict[str, Any]:
    """Input columns: split, pair_type, margin, agreement, confidence, chosen_n_tokens, rejected_n_tokens."""
    names = ["split", "pair_type", "margin", "agreement", "confidence", "chosen_n_tokens", "rejected_n_tokens"]
    table = read_columns(directory, names)
    chosen, rejected = table.column("chosen_n_tokens"), table.column("rejected_n_tokens")
    return {
        "count": table.num_rows,
        "splits": value_counts(table.column("split")),
        "pair_types": value_counts(table.column("pair_type")),
        "mean_margin": mean(table.column("margin").to_pylist()),
        "mean_agreement": mean(table.column("agreement").to_pylist()),
        "mean_confidence": mean(table.column("confidence").to_pylist()),
        "length_bias": share(count_true(pc.greater(chosen, rejected)), table.num_rows),
        "length_ties": share(count_true(pc.equal(chosen, rejected)), table.num_rows),
    }


def rl_metrics(directory: str | Path) -> dict[str, Any]:
    """Input columns: split, difficulty, pass_rate, zero_pass, all_pass."""
    table = read_columns(directory, ["split", "difficulty", "pass_rate", "zero_pass", "all_pass"])
    return {
        "rows": table.num_rows,
        "splits": value_counts(table.column("split")),
        "difficulty": value_counts(table.column("difficulty")),
        "mean_pass_rate": mean(table.column("pass_rate").to_pylist()),
        "share_zero_pass": share(count_true(table.column("zero_pass")), table.num_rows),
        "share_all_pass": share(count_true(table.column("all_pass")), table.num_rows),
    }


def sft_metrics(directory: str | Path) -> dict[str, Any]:
    """Input columns: split, reward, n_tokens, correct."""
    table = read_columns(directory, ["split", "reward", "n_tokens", "correct"])
    return {
        "rows": table.num_rows,
        "splits": value_counts(table.column("split")),
        "mean_reward": mean(table.column("reward").to_pylist()),
        "mean_n_tokens": mean(table.column("n_tokens").to_pylist()),
        "share_correct": share(count_true(table.column("correct")), table.num_rows),
    }


def prm_metrics(directory: str | Path) -> dict[str, Any]:
    """Input columns: labels, method, split, first_error_step."""
    table = read_columns(directory, ["labels", "method", "split", "first_error_step"])
    with_error = count_true(pc.greater_equal(table.column("first_error_step"), 0))
    return {
        "rows": table.num_rows,
        "methods": value_counts(table.column("method")),
        "splits": value_counts(table.column("split")),
        "mean_steps": rounded(pc.mean(pc.list_value_length(table.column("labels"))).as_py()),
        "share_with_error": share(with_error, table.num_rows),
    }


def kept_rewards(directory: str | Path) -> list[dict[str, Any]]:
    """The kept rollouts of a REWARD_V1 folder that have a reward: rollout_id, reward, n_tokens, correct (sorted by
    rollout_id). The reward distribution, the length correlation and the plots all use these."""
    table = read_columns(directory, ["rollout_id", "status", "reward", "n_tokens", "correct"])
    rows = [r for r in table.to_pylist() if r["status"] == KEPT and r["reward"] is not None]
    return sorted(({k: r[k] for k in ("rollout_id", "reward", "n_tokens", "correct")} for r in rows), key=_by_id)


def reward_metrics(directory: str | Path) -> dict[str, Any]:
    """Input columns: rollout_id, status, reward, n_tokens, correct, confidence, agreement."""
    table = read_columns(directory, ["status", "confidence", "agreement"])
    kept = pc.equal(table.column("status"), KEPT)
    kept_table = table.filter(kept)
    points = kept_rewards(directory)
    rewards, lengths = [p["reward"] for p in points], [float(p["n_tokens"]) for p in points]
    return {
        "rows": table.num_rows,
        "status": value_counts(table.column("status")),
        "kept": kept_table.num_rows,
        "mean_reward": mean(rewards),
        "mean_confidence": mean(kept_table.column("confidence").to_pylist()),
        "mean_agreement": mean(kept_table.column("agreement").to_pylist()),
        "length_correlation": {
            "n": len(points),
            "pearson": pearson(lengths, rewards),
            "spearman": spearman(lengths, rewards),
        },
    }


def reasoning_length_correlation(rewards_dir: str | Path, rollouts_dir: str | Path) -> dict[str, Any] | None:
    """Reward against reasoning tokens over the kept rollouts that counted theirs (rollouts.reasoning: ROLLOUT_V3's
    `reasoning_tokens`): {n, pearson, spearman}, the length bias of the thinking apart from the answer's. None when
    no rollout counted reasoning tokens (single-turn v2 rollouts, or reasoning off)."""
    if "reasoning_tokens" not in column_names(rollouts_dir):
        return None
    counted = read_columns(rollouts_dir, ["rollout_id", "reasoning_tokens"]).to_pylist()
    tokens = {r["rollout_id"]: r["reasoning_tokens"] for r in counted if r["reasoning_tokens"] is not None}
    kept = [p for p in kept_rewards(rewards_dir) if p["rollout_id"] in tokens]
    points = [(float(tokens[p["rollout_id"]]), p["reward"]) for p in kept]
    if not points:
        return None
    lengths, rewards = [x for x, _ in points], [y for _, y in points]
    return {"n": len(points), "pearson": pearson(lengths, rewards), "spearman": spearman(lengths, rewards)}


def _by_id(row: dict[str, Any]) -> str:
    return row["rollout_id"]
