import pickle

import pytest

from rewardmill.transforms.steps.consensus import consensus
from rewardmill.transforms.steps.search import StepDecision

T, F = True, False
ERROR_AT_1 = StepDecision(1, (T, F, F), (1.0, 0.0, 0.0), (4, 4, 0), "mc")
NO_ERROR = StepDecision(-1, (T, T, T), (None, None, 1.0), (0, 0, 0), "binary_search")
OPEN = StepDecision(-1, (T, None, F), (1.0, None, 0.0), (4, 0, 0), "mc", complete=False)


@pytest.mark.parametrize(
    ("mc", "judge", "reason"),
    [
        (ERROR_AT_1, 1, None),  # both put the error at step 1: kept
        (NO_ERROR, -1, None),  # both say no error: kept
        (ERROR_AT_1, 2, "first_error_disagrees"),  # judge puts it later
        (ERROR_AT_1, -1, "first_error_disagrees"),  # judge sees no error
        (NO_ERROR, 0, "first_error_disagrees"),  # judge sees an error MC does not
        (ERROR_AT_1, None, "judge_unreadable"),  # judge reply did not parse
        (ERROR_AT_1, 3, "judge_out_of_range"),  # index past the last step
        (ERROR_AT_1, -2, "judge_out_of_range"),  # index below -1
        (OPEN, -1, "mc_incomplete"),  # MC ran out of budget: its -1 is not "no error"
        (OPEN, None, "mc_incomplete"),  # MC checked before the judge
    ],
)
def test_consensus(mc, judge, reason):
    decision, why = consensus(mc, judge)
    assert why == reason
    if reason is None:
        assert decision.method == "consensus"
        assert (decision.first_error, decision.hard, decision.soft, decision.n_continuations, decision.complete) == (
            mc.first_error,
            mc.hard,
            mc.soft,
            mc.n_continuations,
            mc.complete,
        )
    else:
        assert decision is None


def test_consensus_does_not_touch_its_input():
    before = pickle.dumps(ERROR_AT_1)
    consensus(ERROR_AT_1, 1)
    assert pickle.dumps(ERROR_AT_1) == before and ERROR_AT_1.method == "mc"
