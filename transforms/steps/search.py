"""Step-label planners for process rewards: which step prefixes to estimate, and the labels that follow.

Setting: a rollout of `n_steps` steps whose final answer a rule verifier already checked (`final_correct`). The
Monte Carlo value of step i is the share of k continuations from the prefix through step i that reach the correct
answer (Math-Shepherd); a step's hard label is MC > 0. The last step needs no continuations: its value is the final
answer itself (1.0 or 0.0).

Planners are small state machines so a driver can batch work across many rollouts in rounds: collect `pending()`
from every unfinished planner, estimate all those prefixes in one batched generation call, feed each result back
with `update(step, n_correct, k)`, repeat until all are `done` (`run_rounds` does exactly that).
`ExhaustiveMC` estimates every step in one round (k·(n_steps-1) continuations); `BinarySearch` (OmegaPRM) looks for the
first error with about log2(n_steps) sequential estimates, assuming MC never rises after it falls to 0.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class StepDecision:
    """Step labels of one rollout.

    first_error: index of the earliest wrong step, -1 when none, and also -1 when not `complete` (read that first).
    hard: one label per step, None = not decided (budget ran out). soft: MC estimates (n_correct / k), None = not
    estimated (inferred or undecided); the last step's soft value is the final answer's 1.0 / 0.0.
    n_continuations: continuations spent per step. method: "mc" | "binary_search" | "consensus".
    complete: the first error is settled, i.e. every step before it (every step, when -1) is decided.
    """

    first_error: int
    hard: tuple[bool | None, ...]
    soft: tuple[float | None, ...]
    n_continuations: tuple[int, ...]
    method: str
    complete: bool = True


class StepPlanner(Protocol):
    """What `run_rounds` drives: ExhaustiveMC and BinarySearch."""

    k: int

    @property
    def done(self) -> bool: ...

    def pending(self) -> list[int]: ...

    def update(self, step: int, n_correct: int, k: int) -> None: ...

    def decision(self) -> StepDecision: ...


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Planner:
    """Shared bookkeeping: arguments, the estimates received, their validation, soft values and spend."""

    method = ""

    def __init__(self, n_steps: int, final_correct: bool, k: int, budget: int | None = None):
        if not _is_int(n_steps) or n_steps < 1:
            raise ValueError(f"n_steps must be an integer >= 1, got {n_steps!r}")
        if not _is_int(k) or k < 1:
            raise ValueError(f"k must be an integer >= 1, got {k!r}")
        if budget is not None and (not _is_int(budget) or budget < 0):
            raise ValueError(f"budget must be None or an integer >= 0, got {budget!r}")
        self.n_steps, self.final_correct, self.k, self.budget = n_steps, bool(final_correct), k, budget
        self._estimates: dict[int, tuple[int, int]] = {}  # step -> (n_correct, k)

    def pending(self) -> list[int]:
        raise NotImplementedError

    def _advance(self, step: int, positive: bool) -> None:
        """Move the search after an estimate; ExhaustiveMC has nothing to move."""

    @property
    def done(self) -> bool:
        return not self.pending()

    @property
    def spent(self) -> int:
        """Continuations spent so far (the k reported with each update)."""
        return sum(k for _, k in self._estimates.values())

    def update(self, step: int, n_correct: int, k: int) -> None:
        """Record that `n_correct` of `k` continuations from the prefix through `step` reached the answer. `k` may
        be below the planned k when some continuations failed. ValueError for a step not pending or bad counts."""
        if step not in self.pending():
            raise ValueError(f"step {step!r} is not pending (pending: {self.pending()})")
        if not _is_int(k) or k < 1:
            raise ValueError(f"k must be an integer >= 1, got {k!r}")
        if not _is_int(n_correct) or not 0 <= n_correct <= k:
            raise ValueError(f"n_correct must be an integer in 0..{k}, got {n_correct!r}")
        self._estimates[step] = (n_correct, k)
        self._advance(step, n_correct > 0)

    def _check_done(self) -> None:
        if not self.done:
            raise RuntimeError(f"{type(self).__name__} is not done: steps {self.pending()} are pending")

    def _soft(self) -> tuple[float | None, ...]:
        soft: list[float | None] = [None] * self.n_steps
        for step, (n_correct, k) in self._estimates.items():
            soft[step] = n_correct / k
        soft[-1] = 1.0 if self.final_correct else 0.0
        return tuple(soft)

    def _continuations(self) -> tuple[int, ...]:
        return tuple(self._estimates[step][1] if step in self._estimates else 0 for step in range(self.n_steps))

    def _decision(self, hard: list[bool | None]) -> StepDecision:
        """first_error from hard labels read left to right: the first False settles it, a None before any False
        leaves it open (incomplete)."""
        first_error, complete = -1, True
        for step, label in enumerate(hard):
            if label is None:
                complete = False
                break
            if not label:
                first_error = step
                break
        return StepDecision(first_error, tuple(hard), self._soft(), self._continuations(), self.method, complete)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(n_steps={self.n_steps}, final_correct={self.final_correct}, k={self.k}, "
            f"budget={self.budget}, pending={self.pending()})"
        )


class ExhaustiveMC(_Planner):
    """Math-Shepherd: estimate every step 0..n_steps-2 in one round; hard = MC > 0 per step, the last step is the
    final answer. Labels are raw per-step MC, so a non-monotone profile can hold True after the first error.

    budget: the most continuations for this rollout, planned up front at k per step; only the first budget // k
    steps are estimated (early steps settle the first error), the rest stay None.
    """

    method = "mc"

    def __init__(self, n_steps: int, final_correct: bool, k: int, budget: int | None = None):
        super().__init__(n_steps, final_correct, k, budget)
        planned = n_steps - 1 if budget is None else min(n_steps - 1, budget // k)
        self._planned = tuple(range(planned))

    def pending(self) -> list[int]:
        return [step for step in self._planned if step not in self._estimates]

    def decision(self) -> StepDecision:
        self._check_done()
        hard: list[bool | None] = [None] * self.n_steps
        for step, (n_correct, _) in self._estimates.items():
            hard[step] = n_correct > 0
        hard[-1] = self.final_correct
        return self._decision(hard)


class BinarySearch(_Planner):
    """OmegaPRM: binary search for the first step whose MC is 0, one estimate per round.

    A correct final answer settles everything at once: every prefix can reach it, so all steps are True and no
    continuations are spent. Otherwise the last step is wrong and the search keeps `lo` (all steps before it are
    correct) and `hi` (the earliest step known wrong): MC(mid) > 0 means steps 0..mid are correct, else the first
    error is at or before mid. Assumes monotone MC; steps it did not estimate are inferred (soft None).

    budget: the most continuations for this rollout; the search stops when the next estimate (k) would exceed it,
    leaving steps lo..hi-1 undecided (None) and the decision incomplete.
    """

    method = "binary_search"

    def __init__(self, n_steps: int, final_correct: bool, k: int, budget: int | None = None):
        super().__init__(n_steps, final_correct, k, budget)
        self._lo, self._hi = (n_steps, n_steps) if self.final_correct else (0, n_steps - 1)

    def pending(self) -> list[int]:
        if self._lo >= self._hi or (self.budget is not None and self.spent + self.k > self.budget):
            return []
        return [(self._lo + self._hi) // 2]

    def _advance(self, step: int, positive: bool) -> None:
        if positive:
            self._lo = step + 1
        else:
            self._hi = step

    def decision(self) -> StepDecision:
        self._check_done()
        # before lo: known correct; lo..hi-1: undecided (budget stop); from hi on: a prefix holding an error
        hard: list[bool | None] = (
            [True] * self._lo + [None] * (self._hi - self._lo) + [False] * (self.n_steps - self._hi)
        )
        return self._decision(hard)


def run_rounds(
    planners: Sequence[StepPlanner], estimate: Callable[[list[tuple[int, int]]], list[int | tuple[int, int]]]
) -> tuple[list[StepDecision], int]:
    """Drive planners to the end in rounds. Each round calls `estimate` once with every pending (planner index,
    step) across all unfinished planners, and expects for each, in order, n_correct out of the planner's k, or a
    (n_correct, k) pair when fewer continuations came back. Returns the decisions (in planner order) and the number
    of rounds, i.e. of `estimate` calls."""
    rounds = 0
    while work := [(index, step) for index, planner in enumerate(planners) for step in planner.pending()]:
        counts = list(estimate(work))
        if len(counts) != len(work):
            raise ValueError(f"estimate returned {len(counts)} counts for {len(work)} prefixes")
        for (index, step), count in zip(work, counts, strict=True):
            n_correct, k = count if isinstance(count, tuple) else (count, planners[index].k)
            planners[index].update(step, n_correct, k)
        rounds += 1
    return [planner.decision() for planner in planners], rounds


def first_error_agreement(a: StepDecision, b: StepDecision) -> bool:
    """True when both decisions settled the first error and put it at the same step (-1 = no error counts)."""
    return a.complete and b.complete and a.first_error == b.first_error
