"""Consensus filter for step labels: keep Monte Carlo labels only where an LLM judge agrees on the first error.

Qwen's "Lessons of Developing PRMs": MC labels alone are noisy (a wrong step can still reach the answer, a right one
can dead-end); keeping only rollouts where MC and a critique judge (step_critique.py) put the earliest error at the
same step loses most data (~40 % survive) but trains better PRMs than MC alone.
"""

from dataclasses import replace

from rewardmill.transforms.steps.search import StepDecision

# Why a rollout was dropped, checked in this order: MC first, since without a settled MC first error the judge's
# answer cannot be compared at all.
MC_INCOMPLETE = "mc_incomplete"  # the MC search ran out of budget before settling the first error
JUDGE_UNREADABLE = "judge_unreadable"  # the judge's reply did not parse (parse_first_error gave None)
JUDGE_OUT_OF_RANGE = "judge_out_of_range"  # an index outside -1..n_steps-1: a caller bug upstream, counted apart
FIRST_ERROR_DISAGREES = "first_error_disagrees"  # both answered, at different steps


def consensus(mc: StepDecision, judge_first_error: int | None) -> tuple[StepDecision | None, str | None]:
    """MC step labels (`mc`, from ExhaustiveMC or BinarySearch) and the judge's earliest wrong step (-1 = none,
    None = unreadable) -> (the MC decision unchanged but for method "consensus", None) when both put the first error
    at the same step, else (None, reason). Labels after the first error stay MC's own."""
    if not mc.complete:
        return None, MC_INCOMPLETE
    if judge_first_error is None:
        return None, JUDGE_UNREADABLE
    if not -1 <= judge_first_error < len(mc.hard):
        return None, JUDGE_OUT_OF_RANGE
    if judge_first_error != mc.first_error:
        return None, FIRST_ERROR_DISAGREES
    return replace(mc, method="consensus"), None
