"""A stage's budget as the stage skeleton uses it (transforms/stage/skeleton.py `BudgetHooks`): the admission that
leaves prompts out of the graph, its record in the metrics and the closing report. Only stages with a budget import
it, so a stage without one runs no planning code."""

from dataclasses import dataclass
from typing import Any

from rewardmill.transforms.planning.budget import Admission, Budget
from rewardmill.transforms.planning.report import admit_or_fail, budget_record, report_budget
from rewardmill.transforms.planning.spend import StagePlan


@dataclass(frozen=True)
class StageBudget:
    """A stage's budget admission: which prompts fit (`over`: the others, rejected with reason `budget` by the graph),
    recorded in the metrics and reported at the end."""

    where: str  # the params key, e.g. "labelers.NAME.budget"
    budget: Budget
    admitted: Admission

    @classmethod
    def admit(cls, where: str, plan: StagePlan, budget: Budget) -> "StageBudget":
        """The prompts of `plan` that fit `budget`, or a ConfigError naming `where`."""
        return cls(where, budget, admit_or_fail(where, plan, budget))

    @property
    def over(self) -> frozenset[str]:
        return frozenset(self.admitted.excluded)

    def record(self) -> dict[str, Any]:
        return budget_record(self.admitted)

    def report(self, stage: str, manifest: dict[str, Any]) -> None:
        report_budget(stage, self.where, self.budget, self.admitted, manifest)
