"""The card's "Cost per accepted row": what each config's rows rest on (assemble's manifest `spend`,
transforms/planning/spent.py), in tokens and dollars per row, in all and split by stage."""

from typing import Any

from rewardmill.transforms.export.markdown import table


def usd(value: float | None) -> str:
    return "-" if value is None else f"${value:.6f}"


def tokens(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def spend_section(manifests: dict[str, dict[str, Any]]) -> str:
    """One row per config with a recorded spend, then its split by stage. Empty when no config records one (a dataset
    assembled before spend was recorded)."""
    spent = {name: m["spend"] for name, m in sorted(manifests.items()) if m.get("spend")}
    if not spent:
        return ""
    totals = [
        [
            f"`{name}`",
            s["rows"],
            tokens(s["per_row"]["tokens"]),
            usd(s["per_row"]["cost_usd"]),
            s["total"]["requests"],
            usd(s["total"]["cost_usd"]),
        ]
        for name, s in spent.items()
    ]
    split = [
        [f"`{name}`", f"`{stage}`", tokens(per["tokens"]), usd(per["cost_usd"])]
        for name, s in spent.items()
        for stage, per in s["per_row"]["by_stage"].items()
    ]
    notes = []
    bound = sorted({stage for s in spent.values() for stage, st in s["stages"].items() if st.get("upper_bound")})
    if bound:
        notes.append(f"Upper bounds (a plan without caches, outputs at their limit): {', '.join(bound)}.")
    unpriced = sorted({m for s in spent.values() for m in s.get("unpriced_models", [])})
    if unpriced:
        notes.append(f"No price for {', '.join(unpriced)} (params `prices.models`): their tokens count, not dollars.")
    missing = sorted({stage for s in spent.values() for stage in s.get("not_recorded", [])})
    if missing:
        notes.append(f"Not recorded (built before stages recorded their spend): {', '.join(missing)}.")
    return "\n".join(
        [
            "## Cost per accepted row",
            "",
            "What each config's rows rest on, divided by its rows: every sample, and every model call the labels "
            "(pairs, rl, sft, with the rubric sets they grade against) or the step labels (prm) came from, cached "
            "or not, at params `prices` (a batch backend's calls at its discount; models run locally at "
            "`prices.local`). Rejected work is included: this is what an accepted row cost.",
            "",
            table(["config", "rows", "tokens per row", "USD per row", "requests", "USD in all"], totals),
            "",
            table(["config", "stage", "tokens per row", "USD per row"], split),
            *([""] + notes if notes else []),
        ]
    )
