"""DVC plot data: small CSV files that `dvc plots show` renders with the templates dvc.yaml's `plots:` picks.

    reward_histogram.csv   bin, lower, upper, count: rewards of the kept rollouts (data/datasets/_rewards) in
                           BINS equal bins over [0, 1] (the last bin holds 1.0; a reward outside [0, 1] is in no bin,
                           the rewards suite reports it); template bar_horizontal, x = count, y = bin
    margins.csv            margin, share: the empirical distribution function of every pair dataset's margins
                           (share of pairs with a margin at most this one, one row per distinct margin); template
                           linear, x = margin, y = share
    length_reward.csv      rollout_id, n_tokens, reward, correct: one point per kept rollout with a reward;
                           template scatter, x = n_tokens, y = reward

Rows are sorted (bins by lower bound, margins ascending, points by n_tokens, reward, rollout_id) and floats rounded
like the metrics, so the same data gives the same bytes. A CSV with no rows still has its header.
"""

import csv
import io
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rewardmill.transforms.validation.stats import rounded

BINS = 10
REWARD_HISTOGRAM = "reward_histogram.csv"
MARGINS = "margins.csv"
LENGTH_REWARD = "length_reward.csv"


def reward_histogram(rewards: Iterable[float], bins: int = BINS) -> list[dict[str, Any]]:
    """Rewards -> one row per bin over [0, 1]: bin (label "0.00-0.10": sorts like the bins), lower, upper, count."""
    counts = [0] * bins
    for reward in rewards:
        if 0.0 <= reward <= 1.0:
            counts[min(int(reward * bins), bins - 1)] += 1
    rows = []
    for i, count in enumerate(counts):
        lower, upper = i / bins, (i + 1) / bins
        rows.append(
            {"bin": f"{lower:.2f}-{upper:.2f}", "lower": rounded(lower), "upper": rounded(upper), "count": count}
        )
    return rows


def margin_distribution(margins: Iterable[float]) -> list[dict[str, Any]]:
    """Margins -> one (margin, share) row per distinct margin, ascending: the share of pairs whose margin is at most
    this one (the empirical distribution function at its steps)."""
    ordered = [rounded(m) for m in sorted(margins)]
    at_most = {m: (i + 1) / len(ordered) for i, m in enumerate(ordered)}  # a repeated margin keeps its last share
    return [{"margin": m, "share": rounded(s)} for m, s in at_most.items()]


def length_reward_points(points: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """{rollout_id, n_tokens, reward, correct} rows -> sorted by n_tokens, reward, rollout_id (rewards rounded)."""
    rows = [
        {
            "rollout_id": p["rollout_id"],
            "n_tokens": p["n_tokens"],
            "reward": rounded(p["reward"]),
            "correct": p["correct"],
        }
        for p in points
    ]
    return sorted(rows, key=lambda r: (r["n_tokens"], r["reward"], r["rollout_id"]))


def to_csv(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """CSV text with a header; booleans as true/false and nulls as empty cells ("\\n" line ends on every OS)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([cell(row[c]) for c in columns])
    return buffer.getvalue()


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def write_plots(directory: str | Path, points: list[dict[str, Any]], margins: list[float]) -> list[Path]:
    """Write the three CSVs into `directory` from the kept rollouts' points (dataset_metrics.kept_rewards) and the
    pair margins; returns their paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    files = {
        REWARD_HISTOGRAM: to_csv(reward_histogram(p["reward"] for p in points), ["bin", "lower", "upper", "count"]),
        MARGINS: to_csv(margin_distribution(margins), ["margin", "share"]),
        LENGTH_REWARD: to_csv(length_reward_points(points), ["rollout_id", "n_tokens", "reward", "correct"]),
    }
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    return [directory / name for name in files]
