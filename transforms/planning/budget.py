"""Budgets: the most a stage's output may cost, and which prompts fit under it.

Admission is decided before anything is sent, from the stage's plan made without its caches (what the whole output
costs to compute): prompts in prompt-id order, each admitted when its whole spend still fits. So a prompt's
rollouts are labeled together or not at all (pairs need them all), and which prompts are in depends on params and
inputs only, never on the runner, a worker's timing or what an earlier run cached: same params, same bytes. A
larger budget admits a superset; the caches answer what an earlier run already paid for, so a rerun with a larger
budget sends only the new prompts' calls.
"""

from dataclasses import dataclass, field

from rewardmill.transforms.planning.spend import Spend

BUDGET_REASON = "budget"


@dataclass(frozen=True)
class Budget:
    """params `<stage section>.budget`: the most this stage sends in one run; null = no cap."""

    max_requests: int | None = None  # model calls (judge calls, policy samples, prefixes continued)
    max_tokens: int | None = None  # input tokens plus the most output tokens those calls may generate
    max_cost: float | None = None  # USD at params `prices` (an endpoint model without a price fails the stage)

    def __post_init__(self):
        for name in ("max_requests", "max_tokens", "max_cost"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0 or null, got {value!r}")

    @property
    def limited(self) -> bool:
        return any(v is not None for v in (self.max_requests, self.max_tokens, self.max_cost))

    def describe(self) -> str:
        parts = [f"{n}={getattr(self, n)}" for n in ("max_requests", "max_tokens", "max_cost")]
        return ", ".join(p for p in parts if not p.endswith("=None"))


@dataclass
class Admission:
    """Which prompts a stage works on, and what it leaves for a larger budget."""

    admitted: set[str] = field(default_factory=set)
    excluded: set[str] = field(default_factory=set)
    spend: Spend = field(default_factory=Spend)  # of the admitted prompts
    left: Spend = field(default_factory=Spend)  # what the excluded prompts would still send


def fits(budget: Budget, spend: Spend) -> bool:
    return (
        (budget.max_requests is None or spend.requests <= budget.max_requests)
        and (budget.max_tokens is None or spend.tokens <= budget.max_tokens)
        and (budget.max_cost is None or spend.cost <= budget.max_cost + 1e-12)
    )


def admit(groups: dict[str, Spend], budget: Budget) -> Admission:
    """Pure: the prompts (by id, in order) whose spend fits under `budget`, each whole or not at all. A prompt that
    does not fit is skipped and later, cheaper ones (cached ones cost nothing) are still admitted."""
    if budget.max_cost is not None:
        unpriced = sorted(set().union(*(s.unpriced for s in groups.values())) if groups else set())
        if unpriced:
            raise ValueError(
                f"budget max_cost needs a price for every endpoint model; params `prices.models` has none for "
                f"{unpriced}"
            )
    result = Admission()
    for group in sorted(groups):
        spend = groups[group]
        trial = Spend()
        trial.add(result.spend)
        trial.add(spend)
        if fits(budget, trial):
            result.admitted.add(group)
            result.spend = trial
        else:
            result.excluded.add(group)
            result.left.add(spend)
    return result
