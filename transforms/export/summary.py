"""Summary statistics of one exported config, computed from the rows written (the dataset card's numbers).

In: the config's table and its kind (hub_layout.ConfigSpec.kind). Out: a `Summary` of (metric, formatted value)
pairs and value counts of the config's categorical columns. Pure; the same rows give the same text in any order
(means use math.fsum, counts are sorted), so the card stays byte-identical across reruns.

- preference (pairs): agreement and confidence of the labels behind the pairs, the margin, how often both sides
  were rule-verified, and length bias (reward models learn "longer is better" when chosen is usually longer).
- prompt_only (rl): pass rates over the policy's own samples; 0/k and k/k prompts give GRPO no signal.
- prompt_completion (sft): reward and verified correctness of the kept completions.
- stepwise (prm): steps per row and where the first error falls.
"""

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

# Categorical columns whose value counts the card lists, per kind.
COUNTED = {
    "preference": ("pair_type", "task"),
    "prompt_only": ("difficulty", "task"),
    "prompt_completion": ("task",),
    "stepwise": ("method", "labeler", "task"),
}


@dataclass(frozen=True)
class Summary:
    metrics: tuple[tuple[str, str], ...] = ()  # (what, value as text), in a fixed order per kind
    counts: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = ()  # (column, ((value, rows), ...) by value)


def summarize(kind: str, table: pa.Table) -> Summary:
    if table.num_rows == 0:
        return Summary()
    metrics = {
        "preference": _pairs,
        "prompt_only": _rl,
        "prompt_completion": _sft,
        "stepwise": _prm,
    }.get(kind, lambda _: [])(table)
    counts = tuple(
        (column, value_counts(table.column(column).to_pylist()))
        for column in COUNTED.get(kind, ())
        if column in table.column_names
    )
    return Summary(tuple(metrics), counts)


def value_counts(values: list[Any]) -> tuple[tuple[str, int], ...]:
    """(value, rows) sorted by value; null shows as "(null)"."""
    return tuple(sorted(Counter("(null)" if v is None else str(v) for v in values).items()))


def mean(values: list[float | None]) -> float | None:
    """Mean of the non-null values (exactly rounded, so row order cannot change it); None when there are none."""
    present = [v for v in values if v is not None]
    return math.fsum(present) / len(present) if present else None


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def share(n: int, total: int) -> str:
    return f"{n} ({n / total:.1%})" if total else "0"


def _col(table: pa.Table, name: str) -> list[Any]:
    return table.column(name).to_pylist()


def _pairs(table: pa.Table) -> list[tuple[str, str]]:
    n = table.num_rows
    agreement = _col(table, "agreement")
    chosen_tokens, rejected_tokens = _col(table, "chosen_n_tokens"), _col(table, "rejected_n_tokens")
    verified = sum(
        c is True and r is False
        for c, r in zip(_col(table, "chosen_correct"), _col(table, "rejected_correct"), strict=True)
    )
    return [
        ("pairs", str(n)),
        ("mean agreement", fmt(mean(agreement))),
        ("pairs all labelers agree on (agreement = 1)", share(sum(a == 1.0 for a in agreement), n)),
        ("mean confidence", fmt(mean(_col(table, "confidence")))),
        ("mean margin", fmt(mean(_col(table, "margin")))),
        ("verified pairs (chosen correct, rejected incorrect)", share(verified, n)),
        (
            "chosen longer than rejected",
            share(sum(c > r for c, r in zip(chosen_tokens, rejected_tokens, strict=True)), n),
        ),
        ("mean tokens, chosen / rejected", f"{fmt(mean(chosen_tokens))} / {fmt(mean(rejected_tokens))}"),
    ]


def _rl(table: pa.Table) -> list[tuple[str, str]]:
    n = table.num_rows
    pass_rate = _col(table, "pass_rate")
    return [
        ("prompts", str(n)),
        ("prompts with a verified sample", share(sum(p is not None for p in pass_rate), n)),
        ("mean pass rate (verified prompts)", fmt(mean(pass_rate))),
        ("zero pass (0/k: no group-relative signal)", share(sum(_col(table, "zero_pass")), n)),
        ("all pass (k/k: no group-relative signal)", share(sum(_col(table, "all_pass")), n)),
        ("mean samples per prompt", fmt(mean(_col(table, "n_samples")))),
        ("mean reward of the samples", fmt(mean(_col(table, "mean_reward")))),
    ]


def _sft(table: pa.Table) -> list[tuple[str, str]]:
    n = table.num_rows
    correct = _col(table, "correct")
    return [
        ("completions", str(n)),
        ("prompts", str(len(set(_col(table, "prompt_id"))))),
        ("mean reward", fmt(mean(_col(table, "reward")))),
        ("mean confidence", fmt(mean(_col(table, "confidence")))),
        ("verified correct", share(sum(c is True for c in correct), n)),
        ("not verified", share(sum(c is None for c in correct), n)),
        ("mean tokens", fmt(mean(_col(table, "n_tokens")))),
    ]


def _prm(table: pa.Table) -> list[tuple[str, str]]:
    n = table.num_rows
    steps = [len(c) for c in _col(table, "completions")]
    first_error = [e for e in _col(table, "first_error_step") if e >= 0]
    labels = [label for row in _col(table, "labels") for label in row]
    return [
        ("rows", str(n)),
        ("rollouts", str(len(set(_col(table, "rollout_id"))))),
        ("mean steps per row", fmt(mean(steps))),
        ("rows with a wrong step", share(len(first_error), n)),
        ("mean index of the first wrong step", fmt(mean(first_error))),
        ("steps labelled correct", share(sum(labels), len(labels))),
        ("mean min step score", fmt(mean(_col(table, "min_score")))),
    ]
