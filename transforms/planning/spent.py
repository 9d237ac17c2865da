"""What a built stage's output cost: the `spend` its manifest records, and assemble divides by each dataset config's
rows (dollars and tokens per accepted row: the card, the metrics, `rewardmill plan`).

It is what the rows rest on, not what this run happened to send: a rerun answered from the caches records the same
spend as the first run, so the manifest's bytes do not depend on the caches' state.
- Sampling: every rollout written, one request per sample (an episode: one per assistant turn), its prompt's tokens
  in and its generated tokens out, at its policy's price (an endpoint's served model, or `prices.local`). An
  episode's later turns read the turns before them too; those inputs are not counted (a lower bound there).
- A label stage (label_plan.label_spend, judge_calls.SpendRecorder): the labeler replayed over its rows as
  `rewardmill plan` runs it, with every call the call cache holds charged once at the tokens the model reported (a
  backend with `batch:` at its discount). A seeded or greedy call the cache does not hold was not answered (it
  failed, or was never needed): counted in `uncached`, not charged. An unseeded call is never cached: charged at the
  plan's estimate (outputs at their limit) and counted in `estimated`.
- A steps stage: its plan without caches, an upper bound (every prefix continued, outputs at their limit).
- A rubrics stage (rubrics_plan.rubrics_spend): the writer replayed as a label stage's labeler is; the label stages
  graded by the set carry its spend, and assemble counts it once per dataset config.
"""

from rewardmill.transforms.planning.spend import Prices, Spend, priced
from rewardmill.transforms.planning.tokens import TokenCounter


def spend_record(spend: Spend, estimated: int = 0, uncached: int = 0, bound: bool = False) -> dict:
    """The manifest's `spend`."""
    return {
        "requests": spend.requests,
        "tokens_in": spend.tokens_in,
        "tokens_out": spend.tokens_out,
        "cost_usd": round(spend.cost, 6),
        "unpriced_models": sorted(spend.unpriced),
        "estimated_requests": estimated,
        "uncached_requests": uncached,
        "upper_bound": bound,
    }


def rollouts_spend(
    rows: list[dict], models: dict[str, tuple[str, str, float]], prices: Prices, tokens: TokenCounter
) -> dict:
    """`rows`: the written rollouts (messages, n_tokens, policy, turns when episodes ran); `models`: policy name ->
    (backend, model as priced: an endpoint's served name or the local folder, the share of the price it pays: a
    batch's discount, else 1)."""
    total = Spend()
    prompt_tokens: dict[tuple[str, str], int] = {}
    for row in rows:
        name = row["policy"]["name"]
        backend, model, discount = models.get(name, ("transformers", name, 1.0))
        key = (model, row["prompt_id"])
        if key not in prompt_tokens:
            prompt_tokens[key] = tokens.chat(model, row["messages"])
        turns = row.get("turns")
        requests = sum(1 for t in turns if t.get("role") == "assistant") if turns else 1
        price = prices.price(backend, model, discount)
        total.add(priced(price, model, max(1, requests), prompt_tokens[key], row["n_tokens"]))
    return spend_record(total)


def per_row(spends: dict[str, dict | None], rows: int) -> dict:
    """A dataset config's `spend`: the stages its rows rest on (`spends`: stage -> its manifest's spend, None when
    that manifest records none), their totals, and tokens and dollars per accepted row, in all and per stage."""
    have = {stage: s for stage, s in sorted(spends.items()) if s is not None}

    def each(s: dict) -> dict:
        return {"requests": s["requests"], "tokens": s["tokens_in"] + s["tokens_out"], "cost_usd": s["cost_usd"]}

    def per(value: float) -> float | None:
        return round(value / rows, 8) if rows else None

    stages = {stage: each(s) | {"upper_bound": s.get("upper_bound", False)} for stage, s in have.items()}
    total = {key: sum(s[key] for s in stages.values()) for key in ("requests", "tokens", "cost_usd")}
    total["cost_usd"] = round(total["cost_usd"], 6)
    return {
        "rows": rows,
        "stages": stages,
        "total": total,
        "per_row": {
            "tokens": per(total["tokens"]),
            "cost_usd": per(total["cost_usd"]),
            "by_stage": {
                stage: {"tokens": per(s["tokens"]), "cost_usd": per(s["cost_usd"])} for stage, s in stages.items()
            },
        },
        "upper_bound": any(s["upper_bound"] for s in stages.values()),
        "unpriced_models": sorted({m for s in have.values() for m in s.get("unpriced_models", [])}),
        "not_recorded": sorted(stage for stage, s in spends.items() if s is None),
    }
