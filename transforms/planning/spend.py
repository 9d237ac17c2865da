"""Plain values of a plan: what one unit of work would send, priced by params `prices`, and a stage's totals.

A request is one call to a model: a judge call, one policy sample, one prefix's k continuations. Input tokens are
counted with the model's own tokenizer and chat template (an endpoint's model without a local tokenizer is counted
with the policy's, and the plan says so); output tokens are the most a request may generate (max_tokens x n), so a
plan's tokens and money are upper bounds of what the run spends.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float = 0.0
    output: float = 0.0

    def __post_init__(self):
        if self.input < 0 or self.output < 0:
            raise ValueError(f"prices must be >= 0, got input={self.input!r}, output={self.output!r}")


@dataclass(frozen=True)
class Prices:
    """params `prices`: endpoint models by the name they are served under; in-process models at one `local` price."""

    models: dict[str, Price] = field(default_factory=dict)
    local: Price = field(default_factory=Price)  # transformers / vllm in this process: 0 = compute not priced

    def price(self, kind: str, model: str, discount: float = 1.0) -> Price | None:
        """The price of a model reached by `kind` (openai = an endpoint); None when an endpoint's model has none.
        `discount`: the share of it a batch pays (a backend's batch.discount)."""
        price = self.models.get(model, self.local) if kind != "openai" else self.models.get(model)
        if price is None or discount == 1.0:
            return price
        return Price(price.input * discount, price.output * discount)


@dataclass
class Spend:
    """What some work sends. `unpriced` names endpoint models without a price (their tokens cost nothing here)."""

    requests: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    unpriced: set[str] = field(default_factory=set)

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out

    def add(self, other: "Spend") -> None:
        self.requests += other.requests
        self.tokens_in += other.tokens_in
        self.tokens_out += other.tokens_out
        self.cost += other.cost
        self.unpriced |= other.unpriced


def priced(price: Price | None, model: str, requests: int, tokens_in: int, tokens_out: int) -> Spend:
    """A Spend of `requests` with their tokens, at `price` (None: an endpoint model with no price)."""
    if price is None:
        return Spend(requests, tokens_in, tokens_out, 0.0, {model})
    return Spend(requests, tokens_in, tokens_out, (tokens_in * price.input + tokens_out * price.output) / 1e6)


@dataclass
class StagePlan:
    """One stage's plan. `rows`: the units it reads (rollouts, prompts, selected rollouts); `rows_cached`: those the
    caches answer whole; `send` / `cached`: requests to send and requests the call caches answer. `groups`: the
    spend per prompt, what a budget admits. `bound`: requests are an upper bound (an adaptive search)."""

    stage: str
    unit: str
    rows: int = 0
    rows_cached: int = 0
    send: Spend = field(default_factory=Spend)
    cached: int = 0
    bound: bool = False
    notes: list[str] = field(default_factory=list)
    groups: dict[str, Spend] = field(default_factory=dict)

    def charge(self, group: str, spend: Spend) -> None:
        self.send.add(spend)
        self.groups.setdefault(group, Spend()).add(spend)

    def summary(self) -> dict:
        """JSON-able totals (what `rewardmill plan --json` prints per stage)."""
        return {
            "stage": self.stage,
            "unit": self.unit,
            "rows": self.rows,
            "rows_cached": self.rows_cached,
            "requests": self.send.requests,
            "requests_cached": self.cached,
            "requests_bound": self.bound,
            "tokens_in": self.send.tokens_in,
            "tokens_out_max": self.send.tokens_out,
            "cost_usd": round(self.send.cost, 6),
            "unpriced_models": sorted(self.send.unpriced),
            "notes": list(self.notes),
        }
