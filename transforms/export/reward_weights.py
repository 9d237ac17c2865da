"""The card's *Reward weights*: the weight each model-based labeler's scores got in the reward, and why.

In: the assemble manifests' `reward_weights` (transforms/aggregate/measured_weights.weight_record): labeler ->
{weight, source (params | measured | fallback), reason, rows, accuracy, kappa}. Pure text; "" when no manifest
records weights (an export of datasets assembled before weights were recorded).
"""

from typing import Any

from rewardmill.transforms.export.markdown import table

SOURCES = {
    "params": "set in params",
    "measured": "measured",
    "fallback": "fallback (not measurable)",
}


def reward_weights_section(manifests: dict[str, dict[str, Any]]) -> str:
    record = next((m["reward_weights"] for _, m in sorted(manifests.items()) if m.get("reward_weights")), None)
    if not record:
        return ""
    rows = [
        [
            f"`{name}`",
            f"{w['weight']:g}",
            SOURCES.get(w["source"], w["source"]),
            _number(w.get("kappa")),
            _number(w.get("accuracy")),
            w.get("rows", "-"),
            w["reason"],
        ]
        for name, w in sorted(record.items())
    ]
    return "\n".join(
        [
            "## Reward weights",
            "",
            "The gates (rule verifiers) decide whether a sample is correct; the model-based labelers' scores, "
            "weighted as below, only rank samples within a correctness class. A `measured` weight is the "
            "labeler's Cohen's kappa against the deciding gate on this run's samples that both decided, floored at "
            "0: a judge that agrees with the gate no better than chance (whatever its raw accuracy) gets 0 and does "
            "not rank. Where too few samples were decided by both, or the gate decided them one way only, the "
            "weight falls back to params `assemble.aggregate.fallback_weight`, as the reason says. A weight set as "
            "a number in params `assemble.aggregate.weights` is used as is.",
            "",
            table(["labeler", "weight", "how", "kappa", "accuracy vs gate", "samples", "why"], rows),
        ]
    )


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
