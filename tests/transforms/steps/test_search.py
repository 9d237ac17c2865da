import math
import pickle

import pytest

from rewardmill.transforms.steps.search import (
    BinarySearch,
    ExhaustiveMC,
    StepDecision,
    first_error_agreement,
    run_rounds,
)

K = 4
T, F = True, False


def solve(planner_cls, profile: list[int], k: int = K, budget: int | None = None) -> StepDecision:
    """Run one planner against a synthetic MC profile: profile[i] = continuations (of k) from step i's prefix that
    reach the answer. The last entry is the final answer itself, k (correct) or 0 (wrong)."""
    assert profile[-1] in (0, k)
    planner = planner_cls(len(profile), profile[-1] == k, k, budget)
    (decision,), _ = run_rounds([planner], lambda work: [profile[step] for _, step in work])
    return decision


@pytest.mark.parametrize(
    ("profile", "hard", "first_error"),
    [
        ([4, 4, 4, 0], (T, T, T, F), 3),  # only the final answer is wrong
        ([4, 2, 0, 0], (T, T, F, F), 2),  # a partial MC still counts as correct (threshold 0)
        ([0, 0, 0, 0], (F, F, F, F), 0),  # wrong from the first step
        ([1, 4, 4, 4], (T, T, T, T), -1),  # correct throughout
        ([4, 0, 4], (T, F, T), 1),  # final answer correct, yet a dead-end prefix is labeled wrong
        ([4, 0, 3, 0], (T, F, T, F), 1),  # non-monotone: raw MC labels, True after the first error
        ([0], (F,), 0),  # one step: the final answer alone decides
        ([4], (T,), -1),  # one correct step
    ],
)
def test_exhaustive(profile, hard, first_error):
    decision = solve(ExhaustiveMC, profile)
    assert (decision.hard, decision.first_error, decision.complete) == (hard, first_error, True)
    assert decision.soft == tuple(n / K for n in profile[:-1]) + (float(profile[-1] == K),)
    assert decision.n_continuations == (K,) * (len(profile) - 1) + (0,)  # the last step costs nothing
    assert decision.method == "mc"


MONOTONE = [
    [4, 4, 4, 0],  # only the final answer is wrong
    [4, 2, 0, 0],  # error in the middle
    [0, 0, 0, 0],  # error at step 0
    [3, 0],  # two steps, error at the last
    [0, 0],  # two steps, error at the first
    [0],  # one wrong step
    [4, 3, 2, 1, 1, 0, 0, 0],  # decaying MC, error at 5
    [4, 4, 4, 4, 4, 4, 4, 4, 4, 0],  # long correct run
    [4, 1, 4],  # final answer correct (binary search takes the shortcut)
    [4],  # one correct step
]


@pytest.mark.parametrize("profile", MONOTONE)
def test_binary_search_matches_exhaustive_on_monotone_profiles(profile):
    exhaustive, binary = solve(ExhaustiveMC, profile), solve(BinarySearch, profile)
    assert binary.first_error == exhaustive.first_error and first_error_agreement(binary, exhaustive)
    assert sum(binary.n_continuations) <= sum(exhaustive.n_continuations)
    assert binary.method == "binary_search" and binary.complete
    # estimated steps agree with the exhaustive soft values; the rest are inferred (None), except the final answer
    for step, spent in enumerate(binary.n_continuations[:-1]):
        assert binary.soft[step] == (exhaustive.soft[step] if spent else None)


def test_non_monotone_profiles():
    # [4, 0, 3, 0]: both find the first error at 1. Exhaustive keeps step 2's own MC (True); binary search never
    # estimates step 2 and infers it wrong, since it follows an error.
    exhaustive, binary = solve(ExhaustiveMC, [4, 0, 3, 0]), solve(BinarySearch, [4, 0, 3, 0])
    assert (exhaustive.first_error, exhaustive.hard) == (1, (T, F, T, F))
    assert (binary.first_error, binary.hard, binary.soft) == (1, (T, F, F, F), (1.0, 0.0, None, 0.0))
    # [0, 4, 4, 0]: step 0 dead-ends but later prefixes recover. Exhaustive says the first error is 0; binary search
    # probes 1 and 2 (both > 0), infers step 0 correct without estimating it, and reports 3.
    exhaustive, binary = solve(ExhaustiveMC, [0, 4, 4, 0]), solve(BinarySearch, [0, 4, 4, 0])
    assert (exhaustive.first_error, exhaustive.hard) == (0, (F, T, T, F))
    assert (binary.first_error, binary.hard, binary.soft) == (3, (T, T, T, F), (None, 1.0, 1.0, 0.0))
    assert not first_error_agreement(exhaustive, binary)
    # [4, 0, 4]: a correct final answer makes binary search call every step correct; exhaustive finds the dead end.
    assert solve(BinarySearch, [4, 0, 4]).first_error == -1 and solve(ExhaustiveMC, [4, 0, 4]).first_error == 1


@pytest.mark.parametrize("n_correct_steps", [0, 1, 31, 40, 62, 63])
def test_binary_search_cost_is_logarithmic(n_correct_steps):
    n = 64
    profile = [K] * n_correct_steps + [0] * (n - n_correct_steps)
    binary = solve(BinarySearch, profile)
    assert binary.first_error == n_correct_steps
    assert sum(binary.n_continuations) <= K * math.ceil(math.log2(n))  # 6 estimates, against 63 exhaustive
    assert sum(solve(ExhaustiveMC, profile).n_continuations) == K * (n - 1)


def test_final_correct_shortcut():
    planner = BinarySearch(5, True, K, budget=0)  # no continuations needed, so even a zero budget completes
    assert planner.done and planner.pending() == []
    assert planner.decision() == StepDecision(-1, (T,) * 5, (None,) * 4 + (1.0,), (0,) * 5, "binary_search", True)


def test_binary_search_one_estimate_per_round():
    planner = BinarySearch(16, False, K)
    profile = [K] * 10 + [0] * 6
    probes = []
    while planner.pending():
        (step,) = planner.pending()
        assert planner.pending() == [step]  # asking again does not advance the search
        probes.append(step)
        planner.update(step, profile[step], K)
    assert probes == [7, 11, 9, 10] and planner.decision().first_error == 10


@pytest.mark.parametrize(
    ("budget", "hard", "first_error", "complete"),
    [
        (None, (T,) * 10 + (F,) * 6, 10, True),  # unlimited: 4 estimates
        (16, (T,) * 10 + (F,) * 6, 10, True),  # exactly 4 estimates of k=4 fit
        (15, (T,) * 10 + (None,) + (F,) * 5, -1, False),  # the 4th does not: step 10 stays open
        (8, (T,) * 8 + (None,) * 3 + (F,) * 5, -1, False),  # 2 estimates: 7 correct, 11 wrong
        (3, (None,) * 15 + (F,), -1, False),  # not even one estimate: only the final answer is known
    ],
)
def test_binary_search_budget(budget, hard, first_error, complete):
    decision = solve(BinarySearch, [K] * 10 + [0] * 6, budget=budget)
    assert (decision.hard, decision.first_error, decision.complete) == (hard, first_error, complete)
    assert sum(decision.n_continuations) <= (budget if budget is not None else math.inf)


@pytest.mark.parametrize(
    ("budget", "hard", "first_error", "complete"),
    [
        (8, (T, T, None, None, F), -1, False),  # steps 0-1 estimated, both correct: the first error is open
        (10, (T, T, None, None, F), -1, False),  # budget // k estimates: 2 again
        (12, (T, T, F, None, F), 2, True),  # step 2 is wrong and all before it correct: settled, step 3 open
        (0, (None, None, None, None, F), -1, False),  # nothing estimated
    ],
)
def test_exhaustive_budget(budget, hard, first_error, complete):
    decision = solve(ExhaustiveMC, [4, 4, 0, 4, 0], budget=budget)
    assert (decision.hard, decision.first_error, decision.complete) == (hard, first_error, complete)
    assert sum(decision.n_continuations) <= budget


def test_exhaustive_pending_once():
    planner = ExhaustiveMC(4, False, K)
    assert planner.pending() == [0, 1, 2]  # every step but the last, all in one round
    planner.update(1, 0, K)
    assert planner.pending() == [0, 2] and not planner.done
    with pytest.raises(ValueError, match="not pending"):
        planner.update(1, 2, K)  # already estimated


def test_update_with_fewer_continuations():
    planner = ExhaustiveMC(2, False, K)
    planner.update(0, 1, 3)  # one of the k continuations failed to generate
    decision = planner.decision()
    assert decision.soft == (1 / 3, 0.0) and decision.n_continuations == (3, 0)


@pytest.mark.parametrize("planner_cls", [ExhaustiveMC, BinarySearch])
@pytest.mark.parametrize(
    ("step", "n_correct", "k"),
    [
        (3, 1, K),  # the last step is never pending
        (9, 1, K),  # out of range
        (1, -1, K),  # negative count
        (1, K + 1, K),  # more correct than continuations
        (1, 1, 0),  # no continuations
        (1, 1.0, K),  # not an integer
    ],
)
def test_update_misuse(planner_cls, step, n_correct, k):
    planner = planner_cls(4, False, K)  # binary search's first probe is step 1, exhaustive pends 0-2
    with pytest.raises(ValueError):
        planner.update(step, n_correct, k)
    assert 1 in planner.pending()  # a rejected update changes nothing


def test_binary_search_rejects_a_step_off_the_probe():
    planner = BinarySearch(4, False, K)
    with pytest.raises(ValueError, match="not pending"):
        planner.update(0, 1, K)


@pytest.mark.parametrize("planner_cls", [ExhaustiveMC, BinarySearch])
def test_decision_before_done(planner_cls):
    with pytest.raises(RuntimeError, match="not done"):
        planner_cls(4, False, K).decision()


@pytest.mark.parametrize("planner_cls", [ExhaustiveMC, BinarySearch])
@pytest.mark.parametrize(
    "args",
    [
        (0, False, K, None),  # no steps
        (3, False, 0, None),  # k = 0
        (3, False, 2.5, None),  # fractional k
        (3, False, K, -1),  # negative budget
        (True, False, K, None),  # a bool is not a step count
    ],
)
def test_constructor_misuse(planner_cls, args):
    with pytest.raises(ValueError):
        planner_cls(*args)


def test_run_rounds_batches_all_planners_per_round():
    profiles = [[4, 0, 3, 0], [2, 2, 4], [K] * 10 + [0] * 6, [1, 1, 1, 1, 4], [1, 0]]
    planners = [
        ExhaustiveMC(4, False, K),
        ExhaustiveMC(3, True, K),
        BinarySearch(16, False, K),
        BinarySearch(5, True, K),  # done before the first round
        BinarySearch(2, False, K),  # one round
    ]
    calls = []

    def estimate(work):
        calls.append(list(work))
        return [profiles[index][step] for index, step in work]

    decisions, rounds = run_rounds(planners, estimate)
    assert rounds == len(calls) == 4  # the longest binary search; exhaustive work rides along in round one
    assert calls[0] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (2, 7), (4, 0)]
    assert calls[1:] == [[(2, 11)], [(2, 9)], [(2, 10)]]  # finished planners drop out
    assert [d.first_error for d in decisions] == [1, -1, 10, -1, 1]
    assert decisions == [solve(type(p), profile) for p, profile in zip(planners, profiles, strict=True)]


def test_run_rounds_nothing_to_do():
    calls = []
    decisions, rounds = run_rounds([BinarySearch(3, True, K)], lambda work: calls.append(work) or [])
    assert (rounds, calls, decisions[0].first_error) == (0, [], -1)


def test_run_rounds_rejects_a_short_answer():
    with pytest.raises(ValueError, match="2 counts for 3 prefixes"):
        run_rounds([ExhaustiveMC(4, False, K)], lambda work: [1, 1])


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (StepDecision(2, (), (), (), "mc"), StepDecision(2, (), (), (), "binary_search"), True),  # same step
        (StepDecision(2, (), (), (), "mc"), StepDecision(1, (), (), (), "mc"), False),  # different steps
        (StepDecision(-1, (), (), (), "mc"), StepDecision(-1, (), (), (), "mc"), True),  # both: no error
        (StepDecision(-1, (), (), (), "mc"), StepDecision(-1, (), (), (), "mc", complete=False), False),  # open
    ],
)
def test_first_error_agreement(a, b, expected):
    assert first_error_agreement(a, b) is expected and first_error_agreement(b, a) is expected


def test_planners_pickle_mid_search():
    planner = BinarySearch(16, False, K)
    planner.update(7, K, K)
    copy = pickle.loads(pickle.dumps(planner))
    assert copy.pending() == planner.pending() == [11]
    decision = solve(ExhaustiveMC, [4, 0, 3, 0])
    assert pickle.loads(pickle.dumps(decision)) == decision
