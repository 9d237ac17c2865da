"""What a stage with a budget says: the admission (or a clear error), a metrics record, and the closing message."""

import logging

from rewardmill.transforms.config import ConfigError
from rewardmill.transforms.planning.budget import Admission, Budget, admit
from rewardmill.transforms.planning.spend import StagePlan

log = logging.getLogger("rewardmill")


def admit_or_fail(where: str, plan: StagePlan, budget: Budget) -> Admission:
    try:
        return admit(plan.groups, budget)
    except ValueError as exc:
        raise ConfigError(f"params.yaml: '{where}': {exc}") from exc


def budget_record(admitted: Admission) -> dict:
    """The stage metrics' `budget`: what the admitted prompts may send, and what the others would."""
    return {
        "prompts_admitted_with_requests": len(admitted.admitted),
        "prompts_over_budget": len(admitted.excluded),
        "planned_requests": admitted.spend.requests,
        "planned_tokens": admitted.spend.tokens,
        "planned_cost_usd": round(admitted.spend.cost, 6),
        "left_requests": admitted.left.requests,
        "left_tokens": admitted.left.tokens,
        "left_cost_usd": round(admitted.left.cost, 6),
    }


def report_budget(stage: str, where: str, budget: Budget, admitted: Admission, manifest: dict) -> None:
    """One closing line: within budget, or how far it got and how to go on."""
    rejected = manifest["rejects"].get("budget", 0)
    if not admitted.excluded:
        log.info("%s: within budget (%s): %d requests planned", stage, budget.describe(), admitted.spend.requests)
        return
    log.warning(
        "%s: budget reached (%s): %d prompts (%d rows) were left out with reject reason `budget`; they would send "
        "%d more requests (%d tokens, $%.4f). Cached work is kept: raise params %s and rerun to continue without "
        "repeating a call",
        stage,
        budget.describe(),
        len(admitted.excluded),
        rejected,
        admitted.left.requests,
        admitted.left.tokens,
        admitted.left.cost,
        where,
    )
