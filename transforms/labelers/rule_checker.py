"""RuleChecker: scores each rollout against a learned rule set (a rubrics@NAME stage in mode autorule).

Input columns: as RubricJudge, with the rule set joined as `generated_rubric` (the set's one row applies to every
prompt). Output: score = the share of rules the judge says the answer follows (one yes/no call per rule, P(yes) at the
answer where the backend gives logprobs), each rule's result in raw; abstain when the set kept no rule. The rules and
their measured agreement are in the label stage's manifest and on the card.
"""

from dataclasses import dataclass
from typing import Literal

from rewardmill.transforms.labelers.rubric_judge import RubricJudge, RubricJudgeConfig


@dataclass(frozen=True)
class RuleCheckerConfig(RubricJudgeConfig):
    mode: Literal["prometheus", "principles"] = "principles"  # yes/no per rule
    max_tokens: int = 4
    aspect: str = "rules"

    def __post_init__(self):
        super().__post_init__()
        if self.rubrics is None:
            raise ValueError("rule_checker needs `rubrics`: the rubric set (mode autorule) whose rules it checks")


class RuleChecker(RubricJudge):
    name = "rule_checker"
    version = "1"
    Config = RuleCheckerConfig

    def __init__(self, config: RuleCheckerConfig | None = None):
        super().__init__(config or RuleCheckerConfig(rubrics="rules"))
