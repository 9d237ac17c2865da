"""The worst case of a step search: Monte Carlo asks for every step once; binary search for at most
ceil(log2(n_steps)) estimates on a wrong answer and none on a right one."""

import math

import pytest

from rewardmill.transforms.planning.steps_plan import worst_rounds
from rewardmill.transforms.steps.search import BinarySearch, ExhaustiveMC


@pytest.mark.parametrize("n_steps", [1, 2, 3, 5, 8, 13])
def test_worst_rounds(n_steps):
    assert worst_rounds(ExhaustiveMC(n_steps, False, 4)) == n_steps - 1  # the last step is the final answer
    assert worst_rounds(BinarySearch(n_steps, True, 4)) == 0  # a right answer settles every step
    assert worst_rounds(BinarySearch(n_steps, False, 4)) == math.ceil(math.log2(n_steps))


def test_worst_rounds_respects_the_per_rollout_budget():
    assert worst_rounds(BinarySearch(13, False, 4, budget=8)) == 2  # two estimates of k=4
    assert worst_rounds(ExhaustiveMC(13, False, 4, budget=8)) == 2
