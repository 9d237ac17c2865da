"""Measured weights: a judge's weight is its agreement with the deciding gate beyond chance (Cohen's kappa, floored
at 0), the fallback where that cannot be measured, and an explicit number always as given."""

import pickle

import polars as pl
import pytest

from rewardmill.transforms.aggregate.measured_weights import (
    Agreement,
    WeightUsed,
    agreements,
    deciding_gate,
    measured_weight,
    resolve_weights,
    weight_record,
)
from rewardmill.transforms.aggregate.reward import AggregateConfig


@pytest.mark.parametrize(
    "cells, weight, source",
    [
        # agrees with the gate on 18 of 20, both verdicts common: kappa 0.8
        ((9, 1, 1, 9), 0.8, "measured"),
        # always agrees: weight 1
        ((10, 0, 0, 10), 1.0, "measured"),
        # worse than chance (the demo panel's cells: accuracy 0.25): 0, it does not rank
        ((1, 31, 2, 10), 0.0, "measured"),
        # always says "correct": 50% accurate here, no better than chance: 0
        ((10, 10, 0, 0), 0.0, "measured"),
        # always says "incorrect" where the gate rejects 9 in 10: 90% accurate, still tells nothing apart: 0
        ((0, 0, 2, 18), 0.0, "measured"),
        # too few rows decided by both: the fallback weight, kept
        ((5, 0, 0, 5), 1.0, "fallback"),
        # no row decided by both (no gate, or the judge abstains everywhere): the fallback
        ((0, 0, 0, 0), 1.0, "fallback"),
        # the gate decided one way only (an appeal judge sees only what the rule rejects): undefined, the fallback
        ((0, 12, 0, 30), 1.0, "fallback"),
    ],
)
def test_measured_weight(cells, weight, source):
    used = measured_weight(Agreement(*cells), min_rows=20, fallback=1.0)
    assert (used.weight, used.source) == (pytest.approx(weight), source)
    assert used.agreement == Agreement(*cells)


def test_the_reason_says_what_was_measured_or_why_not():
    assert measured_weight(Agreement(9, 1, 1, 9), 20, 1.0).reason == (
        "Cohen's kappa 0.800 against the deciding gate (accuracy 0.900) on 20 rollouts"
    )
    assert measured_weight(Agreement(1, 31, 2, 10), 20, 1.0).reason.endswith("no better than chance, so 0")
    assert measured_weight(Agreement(5, 0, 0, 5), 20, 0.5).reason == (
        "10 rollouts decided by it and a gate, fewer than min_measured_rows=20: fallback_weight 0.5 kept"
    )


def label(rollout: str, labeler: str, verdict: str, confidence: float = 1.0, aspect: str = "correctness") -> dict:
    score = {"correct": 1.0, "incorrect": 0.0}.get(verdict)
    return {"rollout_id": rollout, "labeler": labeler, "aspect": aspect, "score": score, "confidence": confidence,
            "verdict": verdict}  # fmt: skip


def test_the_deciding_gate_is_the_first_decided_confident_gate_in_params_order():
    labels = pl.DataFrame(
        [
            label("r1", "math", "correct"), label("r1", "code", "incorrect"),  # math first
            label("r2", "math", "timeout"), label("r2", "code", "incorrect"),  # math undecided: code
            label("r3", "math", "correct", 0.4), label("r3", "code", "correct"),  # math not confident enough
            label("r4", "judge", "correct"),  # no gate
        ]
    )  # fmt: skip
    truth = deciding_gate(labels, ("math", "code"), 0.5).sort("rollout_id")
    assert truth.rows() == [("r1", True), ("r2", False), ("r3", True)]


def test_agreements_count_each_judges_first_aspect_against_the_gate():
    labels = pl.DataFrame(
        [
            label("r1", "judge", "correct"), label("r1", "judge", "incorrect", aspect="style"),  # first aspect
            label("r2", "judge", "correct"),
            label("r3", "judge", "abstain"),  # undecided: not counted
            label("r4", "judge", "incorrect"),  # no gate on r4
        ]
    )  # fmt: skip
    truth = pl.DataFrame({"rollout_id": ["r1", "r2", "r3"], "correct": [True, False, True]})
    assert agreements(labels, truth, ["judge", "other"]) == {"judge": Agreement(1, 1, 0, 0), "other": Agreement()}


def rows_with(judge_agrees: bool, n: int = 24) -> pl.DataFrame:
    rows = []
    for i in range(n):
        gate = "correct" if i % 2 else "incorrect"
        judge = gate if judge_agrees else {"correct": "incorrect", "incorrect": "correct"}[gate]
        rows += [label(f"r{i}", "math", gate), label(f"r{i}", "judge", judge, 0.8), label(f"r{i}", "other", judge)]
    return pl.DataFrame(rows)


@pytest.mark.parametrize(
    "weights, agrees, expected",
    [
        # measured, agreeing: kappa 1
        ({"judge": "measured"}, True, {"judge": (1.0, "measured")}),
        # measured, always the opposite of the gate: 0
        ({"judge": "measured"}, False, {"judge": (0.0, "measured")}),
        # an explicit number wins over any measurement
        ({"judge": 2.0, "other": "measured"}, False, {"judge": (2.0, "params"), "other": (0.0, "measured")}),
    ],
)
def test_resolve_weights(weights, agrees, expected):
    cfg = AggregateConfig(gates=("math",), weights=weights)
    used = resolve_weights(rows_with(agrees), cfg)
    assert {name: (w.weight, w.source) for name, w in used.items()} == expected


def test_low_support_keeps_the_fallback_and_the_record_says_so():
    cfg = AggregateConfig(gates=("math",), weights={"judge": "measured"}, min_measured_rows=30, fallback_weight=0.5)
    used = resolve_weights(rows_with(False), cfg)
    record = weight_record(used)["judge"]
    assert record["weight"] == 0.5 and record["source"] == "fallback" and record["rows"] == 24
    assert (
        record["accuracy"] == 0.0 and record["kappa"] == -1.0 and "fewer than min_measured_rows=30" in record["reason"]
    )
    assert record["cells"] == {"correct_correct": 0, "correct_incorrect": 12, "incorrect_correct": 12,
                               "incorrect_incorrect": 0}  # fmt: skip


def test_a_config_with_measured_weights_scores_only_once_resolved():
    cfg = AggregateConfig(gates=("math",), weights={"judge": "measured", "panel": 1})
    assert cfg.with_weights({"judge": 0.25}).weights == {"judge": 0.25, "panel": 1}
    assert pickle.loads(pickle.dumps(WeightUsed(1.0, "params", "x"))) == WeightUsed(1.0, "params", "x")
    from rewardmill.transforms.aggregate.reward import weight_expr

    with pytest.raises(ValueError, match="resolve them"):
        weight_expr(cfg)


@pytest.mark.parametrize(
    "weights, message",
    [
        ({"judge": "measure"}, "numbers >= 0 or 'measured'"),  # a typo of `measured`
        ({"judge": True}, "numbers >= 0 or 'measured'"),  # yaml `yes`
        ({"judge": -0.5}, ">= 0"),
    ],
)
def test_bad_weights_fail_naming_them(weights, message):
    with pytest.raises(ValueError, match=message):
        AggregateConfig(weights=weights)
