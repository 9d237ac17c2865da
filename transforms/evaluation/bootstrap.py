"""Accuracy with a percentile bootstrap confidence interval (scipy.stats.bootstrap), seeded: same outcomes, same
interval."""

from collections.abc import Sequence
from typing import Any

import numpy as np


def accuracy_interval(
    outcomes: Sequence[bool], confidence: float = 0.95, resamples: int = 1000, seed: int = 0
) -> dict[str, Any]:
    """{n, accuracy, ci_low, ci_high} of 0/1 outcomes; accuracy and bounds None when there are none. A sample that
    is all 1s or all 0s has a zero-width interval (every resample has the same mean); scipy would warn and return
    NaN, so that case is answered directly."""
    n = len(outcomes)
    if n == 0:
        return {"n": 0, "accuracy": None, "ci_low": None, "ci_high": None}
    data = np.asarray(outcomes, dtype=float)
    accuracy = float(data.mean())
    if data.min() == data.max():
        low = high = accuracy
    else:
        from scipy.stats import bootstrap

        result = bootstrap(
            (data,),
            np.mean,
            n_resamples=resamples,
            confidence_level=confidence,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
        low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    return {"n": n, "accuracy": round(accuracy, 6), "ci_low": round(low, 6), "ci_high": round(high, 6)}
