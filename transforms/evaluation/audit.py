"""A labeler's accuracy measured on gold pack rows (gold_packs.py): what `rewardmill audit` and the validate stage
report, and the dataset card shows.

In: a labeler instance and the GoldRows that measure it. Each row's values are passed to `label` in the labeler's
`reads` order (through `label_values`, as the label stage calls it: `label_many` when it has one, an exception
becomes an `error` label). Out, each a share with its interval:

- precision: of the rows it calls `correct`, the share whose gold is correct (how far its credit can be trusted);
- recall: of the gold-correct rows, the share it calls `correct` (an abstain is a miss);
- abstain_rate: of all rows, the share with no score (verdict abstain, error or timeout);
- hack_pass_rate: of the `kind: hack` rows, the share it credits (verdict correct, or a score above the row's
  allowed partial score, 0 by default): how often an answer written to game it is rewarded;
- gold_agreement: of all rows, the share labeled as the pack says (packs/README.md's pass rule).

Intervals are Wilson score intervals, not the percentile bootstrap of bootstrap.py: packs are small and often all
right, and a bootstrap of twenty 1s is the zero-width interval [1, 1], while Wilson's says how little twenty rows
prove (twenty out of twenty: 0.84..1 at 95%).
"""

from collections.abc import Sequence
from math import sqrt
from statistics import NormalDist
from typing import Any

from rewardmill.schemas.label import is_part
from rewardmill.transforms.evaluation.gold_packs import GoldRow
from rewardmill.transforms.labelers.base import Label, as_labels, label_values

METRICS = ("precision", "recall", "abstain_rate", "hack_pass_rate", "gold_agreement")


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> dict[str, Any]:
    """{n, k, value, ci_low, ci_high} of k successes in n trials; value and bounds None when n is 0."""
    if n == 0:
        return {"n": 0, "k": 0, "value": None, "ci_low": None, "ci_high": None}
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p = successes / n
    center = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low, high = max(0.0, center - half), min(1.0, center + half)
    return {"n": n, "k": successes, "value": round(p, 6), "ci_low": round(low, 6), "ci_high": round(high, 6)}


def credited(row: GoldRow, label: Label) -> bool:
    """The label rewards the row: verdict correct, or a score above what the row allows (0 unless max_score)."""
    allowed = row.max_score if row.max_score is not None else 0.0
    return label.verdict == "correct" or (label.score is not None and label.score > allowed)


def agrees(row: GoldRow, label: Label) -> bool:
    """packs/README.md: a correct row needs verdict correct and the full score 1.0; an incorrect row a verdict other
    than correct and a score null or within what it allows. A row's `verdict`, when set, must be matched exactly."""
    if row.verdict is not None and label.verdict != row.verdict:
        return False
    if row.gold == "correct":
        return label.verdict == "correct" and label.score == 1.0
    return not credited(row, label)


def main_label(result: Label | list[Label]) -> Label:
    """The correctness label of a result (a multi-aspect labeler gives one per aspect), else its first."""
    labels = [label for label in as_labels(result) if not is_part(label.aspect)] or as_labels(result)
    return next((label for label in labels if label.aspect == "correctness"), labels[0])


def outcome(row: GoldRow, label: Label) -> dict[str, Any]:
    return {
        "id": row.id,
        "class": row.cls,
        "kind": row.kind,
        "gold": row.gold,
        "verdict": label.verdict,
        "score": label.score,
        "called_correct": label.verdict == "correct",
        "abstained": label.score is None,
        "credited": credited(row, label),
        "agrees": agrees(row, label),
        "rationale": label.rationale[:300],
    }


def label_gold_rows(labeler, rows: Sequence[GoldRow]) -> tuple[list[dict[str, Any]], dict[str, int], bool]:
    """(one outcome per labeled row, rows left out by reason, settled). A row lacking a column the labeler reads is
    left out (`missing_column`), as the label stage rejects it. Settled: every label the label cache would not keep
    (a timeout: maybe the machine's load, not the code) agrees with its gold row, so the outcomes would be the same
    on a quiet machine."""
    reads = tuple(labeler.reads)
    usable = [r for r in rows if all(c in r.row for c in reads)]
    left_out = {"missing_column": len(rows) - len(usable)} if len(usable) < len(rows) else {}
    labels = (
        [main_label(x) for x in label_values(labeler, [tuple(r.row[c] for c in reads) for r in usable])]
        if usable
        else []
    )
    settled = all(label.cacheable or agrees(r, label) for r, label in zip(usable, labels, strict=True))
    return [outcome(r, label) for r, label in zip(usable, labels, strict=True)], left_out, settled


def accuracy(outcomes: Sequence[dict[str, Any]], confidence: float = 0.95) -> dict[str, dict[str, Any]]:
    """The five shares of METRICS over `outcomes`, each {n, k, value, ci_low, ci_high}."""
    called = [o for o in outcomes if o["called_correct"]]
    gold_correct = [o for o in outcomes if o["gold"] == "correct"]
    hacks = [o for o in outcomes if o["kind"] == "hack"]
    counts = {
        "precision": (sum(o["gold"] == "correct" for o in called), len(called)),
        "recall": (sum(o["called_correct"] for o in gold_correct), len(gold_correct)),
        "abstain_rate": (sum(o["abstained"] for o in outcomes), len(outcomes)),
        "hack_pass_rate": (sum(o["credited"] for o in hacks), len(hacks)),
        "gold_agreement": (sum(o["agrees"] for o in outcomes), len(outcomes)),
    }
    return {name: wilson_interval(k, n, confidence) for name, (k, n) in counts.items()}


def measure(labeler, rows: Sequence[GoldRow], confidence: float = 0.95) -> dict[str, Any]:
    """{rows, left_out, <METRICS>, disagreements}: the labeler on `rows`; disagreements are the outcomes that do not
    agree with their gold, to read next to the numbers."""
    return measure_settled(labeler, rows, confidence)[0]


def measure_settled(labeler, rows: Sequence[GoldRow], confidence: float = 0.95) -> tuple[dict[str, Any], bool]:
    """`measure`, and whether the result is settled (label_gold_rows): the audit keeps only a settled result."""
    outcomes, left_out, settled = label_gold_rows(labeler, rows)
    result = {
        "rows": len(outcomes),
        "left_out": left_out,
        **accuracy(outcomes, confidence),
        "disagreements": [o for o in outcomes if not o["agrees"]],
    }
    return result, settled


def share(metric: dict[str, Any] | None) -> str:
    """`0.95 (0.83..0.99, n=20)`, or `-` when nothing was measured."""
    if not metric or metric.get("value") is None:
        return "-"
    return f"{metric['value']:.2f} ({metric['ci_low']:.2f}..{metric['ci_high']:.2f}, n={metric['n']})"


def table_rows(results: dict[str, dict[str, Any]]) -> list[list[str]]:
    """[labeler, rows, precision, recall, abstain rate, hack pass rate, status] per audited entry, by key."""
    return [
        [key, str(r.get("rows", 0)), *(share(r.get(m)) for m in METRICS[:4]), measured_on(r)]
        for key, r in sorted(results.items())
    ]


def measured_on(result: dict[str, Any]) -> str:
    """Which gold rows measured an entry (`math_answer rows in math`, `math task rows in math`), or why none did."""
    if result.get("skipped"):
        return f"not measured: {result['skipped']}"
    packs = ", ".join(result.get("packs") or ())
    task_rows = f"{'/'.join(result.get('tasks') or ())} task rows"
    named = {"task": task_rows, "labeler+task": f"{result['labeler']} and {task_rows}"}
    return f"{named.get(result.get('rows_from'), result['labeler'] + ' rows')} in {packs}"


HEADER = ["labeler", "rows", "precision", "recall", "abstain rate", "hack pass rate", "measured on"]


def text_table(results: dict[str, dict[str, Any]]) -> str:
    """The results as an aligned plain-text table (the CLI's)."""
    rows = [HEADER, *table_rows(results)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows)
