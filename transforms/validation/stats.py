"""Plain statistics for metrics: counts, shares, means and correlations that are null (never a silent 0) when
they are undefined, with floats rounded to DIGITS so metrics files are deterministic."""

import math
from collections import Counter
from collections.abc import Sequence

import pyarrow as pa
from scipy.stats import rankdata

DIGITS = 6
MIN_CORRELATION_ROWS = 3  # below this a correlation says nothing; it is null


def value_counts(column: pa.ChunkedArray) -> dict[str, int]:
    """Counts per value, sorted by value; nulls are counted under "null"."""
    counts = Counter("null" if v is None else str(v) for v in column.to_pylist())
    return dict(sorted(counts.items()))


def share(part: int, total: int) -> float | None:
    return rounded(part / total) if total else None


def rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), DIGITS)


def mean(values: Sequence[float | None]) -> float | None:
    """Rounded mean of the non-null values; null when there are none."""
    present = [v for v in values if v is not None]
    return rounded(math.fsum(present) / len(present)) if present else None


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson correlation, rounded; null with fewer than MIN_CORRELATION_ROWS pairs or when either side is
    constant (checked on the values, not on a float sum of squares that rounding leaves slightly above 0)."""
    if len(xs) != len(ys):
        raise ValueError(f"pearson needs equal lengths, got {len(xs)} and {len(ys)}")
    if len(xs) < MIN_CORRELATION_ROWS or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    mx, my = math.fsum(xs) / len(xs), math.fsum(ys) / len(ys)
    sxy = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx, syy = math.fsum((x - mx) ** 2 for x in xs), math.fsum((y - my) ** 2 for y in ys)
    return rounded(max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy))))


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank (what Spearman's correlation needs)."""
    return rankdata(values, method="average").tolist() if len(values) else []


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman rank correlation (Pearson on average ranks); null when pearson would be."""
    if len(xs) != len(ys):
        raise ValueError(f"spearman needs equal lengths, got {len(xs)} and {len(ys)}")
    return pearson(ranks(xs), ranks(ys))  # constant values have constant ranks
