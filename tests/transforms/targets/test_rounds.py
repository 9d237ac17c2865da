"""The rounds' arithmetic: met or not, how far to grow from the rates observed per task, and the plan's prediction."""

import pytest

from rewardmill.transforms.targets.params import TargetsConfig
from rewardmill.transforms.targets.rounds import DRY, GROW, MET, decide, predict
from rewardmill.transforms.targets.yields import Observation


def obs(prompts: dict, rows: dict) -> Observation:
    return Observation({tuple(k.split("/")): n for k, n in prompts.items()}, rows)


def test_met_targets_stop_the_rounds():
    seen = obs({"arith/math": 10}, {"pairs": {"math": 20}})
    assert decide(seen, TargetsConfig(pairs=20), 1.0, {"arith"}).outcome == MET


def test_the_next_round_asks_for_the_rows_missing_plus_the_margin_at_the_observed_rate():
    seen = obs({"arith/math": 10}, {"pairs": {"math": 10}})  # 1 pair per prompt
    decision = decide(seen, TargetsConfig(pairs=20, margin=0.1), 1.0, {"arith"})
    assert decision.outcome == GROW and decision.factor == pytest.approx(2.2)
    assert decision.expected == {"pairs": pytest.approx(22.0)} and decision.short == {"pairs": 10}


def test_a_source_that_cannot_grow_keeps_its_rows_and_the_others_make_up_the_rest():
    # code (fixed) gives 10 pairs; math grows: 33 wanted - 10 fixed = 23 from math's 1 pair per prompt
    seen = obs({"arith/math": 10, "code/code": 5}, {"pairs": {"math": 10, "code": 10}})
    decision = decide(seen, TargetsConfig(pairs=30, margin=0.1), 1.0, {"arith"})
    assert decision.factor == pytest.approx(2.3)


def test_rates_are_per_task_across_sources():
    # two sources of task math: the rate is math's (12 pairs / 12 prompts), and only `arith` grows
    seen = obs({"arith/math": 8, "file/math": 4}, {"pairs": {"math": 12}})
    decision = decide(seen, TargetsConfig(pairs=24, margin=0.0), 1.0, {"arith"})
    assert decision.factor == pytest.approx((24 - 4) / 8)


def test_no_row_yet_grows_by_the_most_a_round_may_and_growth_is_capped():
    none_yet = obs({"arith/math": 10}, {"pairs": {}})
    assert decide(none_yet, TargetsConfig(pairs=5, max_growth=3.0), 1.0, {"arith"}).factor == pytest.approx(3.0)
    rare = obs({"arith/math": 10}, {"pairs": {"math": 1}})
    assert decide(rare, TargetsConfig(pairs=100, max_growth=4.0), 2.0, {"arith"}).factor == pytest.approx(8.0)


def test_short_with_nothing_left_to_grow_is_dry():
    seen = obs({"file/math": 10}, {"pairs": {"math": 3}})
    decision = decide(seen, TargetsConfig(pairs=20), 1.0, set())
    assert decision.outcome == DRY and decision.short == {"pairs": 17}


def test_every_target_must_be_met_and_the_neediest_sizes_the_round():
    seen = obs({"arith/math": 10}, {"pairs": {"math": 30}, "sft": {"math": 2}})
    decision = decide(seen, TargetsConfig(pairs=20, sft=10, margin=0.0, max_growth=10.0), 1.0, {"arith"})
    assert decision.factor == pytest.approx(5.0) and set(decision.short) == {"sft"}


def test_the_prediction_at_constant_rates():
    seen = obs({"arith/math": 10}, {"pairs": {"math": 10}})
    assert len(predict(seen, TargetsConfig(pairs=10), {"arith"}).rounds) == 1  # met already
    two = predict(seen, TargetsConfig(pairs=30), {"arith"})
    assert two.outcome == MET and [r[1] for r in two.rounds] == [10, pytest.approx(33.0)]
    capped = predict(seen, TargetsConfig(pairs=100, max_growth=4.0), {"arith"})  # 10 -> 40 -> 110
    assert capped.outcome == MET and len(capped.rounds) == 3
    assert predict(seen, TargetsConfig(pairs=10**6, max_rounds=3), {"arith"}).outcome == "max_rounds"
    assert predict(seen, TargetsConfig(pairs=30), set()).outcome == DRY
