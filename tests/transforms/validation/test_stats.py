"""Statistics behind the metrics: means, ranks and correlations that are null, not 0, when undefined."""

import math

import pytest

from rewardmill.transforms.validation.stats import mean, pearson, ranks, spearman


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1.0, 2.0], 1.5),
        ([1.0, None, 2.0], 1.5),  # nulls are left out
        ([None], None),  # nothing to average
        ([], None),
        ([1 / 3, 1 / 3, 1 / 3], 0.333333),  # rounded to 6 digits
    ],
)
def test_mean(values, expected):
    assert mean(values) == expected


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([30, 10, 20], [3.0, 1.0, 2.0]),
        ([1.0, 0.25, 1.0, 0.5], [3.5, 1.0, 3.5, 2.0]),  # ties share their average rank
        ([5, 5, 5], [2.0, 2.0, 2.0]),
        ([], []),
    ],
)
def test_ranks(values, expected):
    assert ranks(values) == expected


@pytest.mark.parametrize(
    ("xs", "ys", "expected_pearson", "expected_spearman"),
    [
        ([1, 2, 3], [2, 4, 6], 1.0, 1.0),  # exactly linear
        ([1, 2, 3], [3, 2, 1], -1.0, -1.0),
        ([1, 2, 3, 4], [1, 4, 9, 16], 0.984374, 1.0),  # monotone, not linear: Spearman sees a perfect order
        ([10, 20, 30, 40], [1.0, 0.25, 1.0, 0.5], round(-3.75 / math.sqrt(210.9375), 6), -0.210819),
        ([1, 2], [1, 2], None, None),  # two points say nothing
        ([1, 2, 3], [0.5, 0.5, 0.5], None, None),  # constant reward: no variance
        ([7, 7, 7], [1, 2, 3], None, None),  # constant length
        ([0.1] * 3, [1, 2, 3], None, None),  # constant, whatever float sums make of it
        ([], [], None, None),
    ],
)
def test_correlations(xs, ys, expected_pearson, expected_spearman):
    assert pearson(xs, ys) == expected_pearson
    assert spearman(xs, ys) == expected_spearman


def test_correlations_need_equal_lengths():
    with pytest.raises(ValueError, match="equal lengths"):
        pearson([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="equal lengths"):
        spearman([1, 2, 3], [1, 2])
