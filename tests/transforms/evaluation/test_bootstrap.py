import pytest

from rewardmill.transforms.evaluation.bootstrap import accuracy_interval


@pytest.mark.parametrize(
    "outcomes, accuracy, low, high",
    [
        ([], None, None, None),  # nothing measured: no accuracy, no interval
        ([True], 1.0, 1.0, 1.0),  # one outcome: every resample is that outcome
        ([False] * 5, 0.0, 0.0, 0.0),  # constant outcomes: zero-width interval (scipy would give NaN)
    ],
)
def test_edge_cases(outcomes, accuracy, low, high):
    result = accuracy_interval(outcomes)
    assert result == {"n": len(outcomes), "accuracy": accuracy, "ci_low": low, "ci_high": high}


def test_interval_brackets_the_accuracy_narrows_with_n_and_is_seeded():
    small = accuracy_interval([True, False] * 10)
    large = accuracy_interval([True, False] * 500)
    for r in (small, large):
        assert r["ci_low"] < r["accuracy"] == 0.5 < r["ci_high"]
    assert large["ci_high"] - large["ci_low"] < small["ci_high"] - small["ci_low"]
    assert accuracy_interval([True, False] * 10, seed=3) == accuracy_interval([True, False] * 10, seed=3)
    # a wider confidence level gives a wider interval on the same outcomes and resamples
    wide = accuracy_interval([True, False] * 10, confidence=0.99)
    assert wide["ci_low"] <= small["ci_low"] and wide["ci_high"] >= small["ci_high"]


def test_percentile_interval_of_the_binomial_proportion_is_about_right():
    # 70 of 100: the normal approximation gives 0.7 +- 1.96 * sqrt(0.21 / 100) = 0.610 .. 0.790
    result = accuracy_interval([True] * 70 + [False] * 30, resamples=4000)
    assert result["ci_low"] == pytest.approx(0.61, abs=0.025) and result["ci_high"] == pytest.approx(0.79, abs=0.025)
