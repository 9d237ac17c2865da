"""Dataset statistics of one steps stage's output, for its DVC metrics: what was labeled and at what cost."""

from pathlib import Path

from rewardmill.transforms.io.parquet import read_rows

DIGITS = 6


def step_stats(directory: str | Path) -> dict:
    """Rollouts and steps labeled, continuations spent (total and per labeled step), share of rollouts with an
    error and the mean first-error position among them, share of positive step labels."""
    rows = read_rows(str(directory))
    rollouts: dict[str, dict] = {}
    for r in rows:
        rollouts.setdefault(r["rollout_id"], r)
    with_error = [r["first_error_step"] for r in rollouts.values() if r["first_error_step"] >= 0]
    decided = [r["hard_label"] for r in rows if r["hard_label"] is not None]
    continuations = sum(r["n_continuations"] for r in rows)
    return {
        "rollouts": len(rollouts),
        "steps": len(rows),
        "mean_steps": round(len(rows) / len(rollouts), DIGITS) if rollouts else None,
        "continuations": continuations,
        "continuations_per_step": round(continuations / len(rows), DIGITS) if rows else None,
        "share_with_error": round(len(with_error) / len(rollouts), DIGITS) if rollouts else None,
        "mean_first_error": round(sum(with_error) / len(with_error), DIGITS) if with_error else None,
        "share_positive_steps": round(sum(decided) / len(decided), DIGITS) if decided else None,
        "undecided_steps": len(rows) - len(decided),
    }
