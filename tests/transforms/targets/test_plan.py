"""`rewardmill plan`'s cost per accepted row: each config priced by the stages its rows rest on, as assemble counts
them (pairs, rl, sft: the sampling, the label stages and the rubric sets they grade against; prm: the sampling and
the steps)."""

import pytest

from rewardmill.transforms.planning.spend import Spend
from rewardmill.transforms.targets.plan import plan_row_costs
from rewardmill.transforms.targets.yields import Observation

FULL = {
    "rollouts": Spend(8, 800, 80, 0.8),
    "label@judge": Spend(4, 400, 4, 0.4),
    "rubrics@ref": Spend(2, 200, 20, 0.2),
    "rubrics@unread": Spend(3, 300, 30, 0.3),
    "steps@mc": Spend(5, 500, 50, 0.5),
}
OBS = Observation({("math", "math"): 4}, {"pairs": {"math": 2}, "prm": {"math": 4}})


def test_a_config_rests_on_the_rubric_sets_its_labels_grade_against_and_no_other():
    costs = plan_row_costs(FULL, OBS, growable={"math"}, rubric_sets=frozenset({"ref"})).configs
    assert set(costs["pairs"]["stages"]) == {"rollouts", "label@judge", "rubrics@ref"}
    assert costs["pairs"]["per_row"]["cost_usd"] == pytest.approx((0.8 + 0.4 + 0.2) / 2)
    assert set(costs["prm"]["stages"]) == {"rollouts", "steps@mc"}
    without = plan_row_costs(FULL, OBS, growable={"math"}).configs
    assert set(without["pairs"]["stages"]) == {"rollouts", "label@judge"}
