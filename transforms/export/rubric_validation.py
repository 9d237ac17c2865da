"""The card's *Rubric validation*: how well each generated rubric set reproduced the preferences the trusted labelers
(the rule verifiers, unless params name others) decided, so a reader sees whether the rubric scores can be trusted.

In: the assemble manifests' `rubric_validation` (transforms/aggregate/rubric_validation.py): {labelers: labeler ->
{rubric_set, rubrics_validated, pairs, accuracy, agreement, mean_accuracy, flagged, dropped, min_accuracy, worst},
labels_dropped}. Pure text; "" when no manifest records one.
"""

from typing import Any

from rewardmill.transforms.export.markdown import table


def rubric_validation_section(manifests: dict[str, dict[str, Any]]) -> str:
    record = next((m["rubric_validation"] for _, m in sorted(manifests.items()) if m.get("rubric_validation")), None)
    if not record or not record.get("labelers"):
        return ""
    rows = [
        [
            f"`{name}`",
            f"`{r['rubric_set']}`",
            r["rubrics_validated"],
            r["pairs"],
            _number(r["accuracy"]),
            _number(r["agreement"]),
            _number(r["mean_accuracy"]),
            f"{r['flagged']} (below {r['min_accuracy']:g})",
            r["dropped"],
        ]
        for name, r in sorted(record["labelers"].items())
    ]
    verdicts = [_verdict(name, r) for name, r in sorted(record["labelers"].items())]
    trusted = sorted({t for r in record["labelers"].values() for t in r.get("trusted", [])})
    by = ", ".join(f"`{t}`" for t in trusted) if trusted else "the rule verifiers"
    return "\n".join(
        [
            "## Rubric validation",
            "",
            f"Each generated rubric is measured on the prompt's trusted pairs: a rollout the trusted labelers ({by}) "
            "decided correct against one they decided incorrect. Accuracy counts a pair won when the rubric scores the "
            "correct rollout higher and half when it ties; agreement leaves the ties out. 0.5 is chance. A rubric "
            "below the threshold is flagged; a dropped rubric's labels left the reward "
            f"({record.get('labels_dropped', 0)} labels in all).",
            "",
            table(
                ["labeler", "rubric set", "rubrics", "pairs", "accuracy", "agreement", "mean per rubric", "flagged",
                 "dropped"],
                rows,
            ),  # fmt: skip
            "",
            *verdicts,
        ]
    )


def _verdict(name: str, r: dict) -> str:
    accuracy = r["accuracy"]
    if accuracy is None:
        return f"- `{name}`: no trusted pair to measure its rubrics on; their scores are unvalidated."
    if accuracy <= 0.5:
        return f"- `{name}`: its rubrics reproduce the trusted preferences no better than chance ({accuracy:.3f})."
    return f"- `{name}`: its rubrics reproduce {accuracy:.1%} of the trusted preferences."


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def learned_rules_section(learned: dict[str, dict[str, Any]] | None) -> str:
    """*Learned rules*: each rule set (AutoRule) a labeler checked, its kept rules and their held-out agreement."""
    if not learned:
        return ""
    lines = [
        "## Learned rules",
        "",
        "Rules extracted from a judge's explanations of trusted preferences, merged, and kept where they order the "
        "held-out pairs as the preference does (agreement = pairs ordered right among the pairs the rule decides).",
    ]
    for name, manifest in sorted(learned.items()):
        rules = manifest.get("rules") or []
        lines += ["", f"`{name}` checks rule set `{manifest.get('rubric_set')}`: {len(rules)} rules kept."]
        if rules:
            rows = [[r["rule"], r["support"], f"{r['agree']} / {r['agree'] + r['disagree']}", _number(r["agreement"])]
                    for r in rules]  # fmt: skip
            lines += ["", table(["rule", "rationales", "held-out pairs ordered right", "agreement"], rows)]
    return "\n".join(lines)
