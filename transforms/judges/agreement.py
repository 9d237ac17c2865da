"""Agreement statistics between judges (and between a judge and a verifier), with maintained libraries.

Krippendorff's alpha (`krippendorff`) handles missing ratings and nominal/ordinal/interval data; Fleiss' kappa and
Cohen's kappa come from statsmodels. Every function returns None when the statistic is undefined (too few
pairable ratings, no variation) instead of NaN or an exception, so metrics files stay valid JSON.
Reading: alpha >= 0.8 reliable, >= 0.667 tentative conclusions only, below that unreliable (Krippendorff).
"""

import math
from collections.abc import Hashable, Sequence

import numpy as np

# krippendorff and statsmodels (with scipy) are imported where they are used: at module level they cost every label,
# steps and evaluate process about 1 s of start-up, and only the metrics at the end of a stage need them.

LEVELS = ("nominal", "ordinal", "interval")


def alpha_label(alpha: float | None) -> str:
    """reliable (>= 0.8) | tentative (>= 0.667) | unreliable | undefined (alpha None)."""
    if alpha is None:
        return "undefined"
    return "reliable" if alpha >= 0.8 else "tentative" if alpha >= 0.667 else "unreliable"


def _codes(values: Sequence[Hashable]) -> dict[Hashable, int]:
    """Category label -> integer code, in order of first appearance (labels may be str, bool, int)."""
    codes: dict[Hashable, int] = {}
    for value in values:
        codes.setdefault(value, len(codes))
    return codes


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def krippendorff_alpha(ratings: list[list], level: str = "nominal") -> float | None:
    """Alpha over a raters x items matrix (None = missing). Nominal accepts any labels; ordinal/interval need
    numbers. None when undefined: no item rated by two raters, or a single value among the pairable ratings."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    if not ratings or len({len(row) for row in ratings}) != 1:
        raise ValueError("ratings must be a non-empty raters x items matrix with rows of equal length")
    # Items rated by fewer than two raters carry no pairs; alpha ignores them, so dropping them changes nothing
    # but lets us see the undefined cases the library would only report as an error or NaN.
    items = [col for col in zip(*ratings, strict=True) if sum(v is not None for v in col) >= 2]
    pairable = [v for col in items for v in col if v is not None]
    if len(set(pairable)) < 2:
        return None
    if level == "nominal":
        codes = _codes(pairable)
        items = [[None if v is None else codes[v] for v in col] for col in items]
    elif any(isinstance(v, bool) or not isinstance(v, int | float) for v in pairable):
        raise ValueError(f"{level} alpha needs numeric ratings")
    data = np.array([[np.nan if v is None else float(v) for v in col] for col in items]).T  # back to raters x items
    import krippendorff

    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            return _finite(krippendorff.alpha(reliability_data=data, level_of_measurement=level))
    except ValueError:  # the library's own "not enough values" checks, should ours miss a case
        return None


def fleiss_kappa(ratings: list[list]) -> float | None:
    """Fleiss' kappa over an items x raters matrix of category labels (None = missing).

    Fleiss' kappa assumes every item has the same number of ratings, so only items rated by all raters are kept
    (complete cases; use Krippendorff's alpha to use them all). None with fewer than two raters, no complete item,
    or a single category overall (chance agreement is 1)."""
    if len({len(row) for row in ratings}) > 1:
        raise ValueError("ratings must be an items x raters matrix with rows of equal length")
    complete = [row for row in ratings if row and all(v is not None for v in row)]
    if not complete or len(complete[0]) < 2:
        return None
    codes = _codes(v for row in complete for v in row)
    if len(codes) < 2:
        return None
    from statsmodels.stats import inter_rater

    table, _ = inter_rater.aggregate_raters(np.array([[codes[v] for v in row] for row in complete]), n_cat=len(codes))
    with np.errstate(divide="ignore", invalid="ignore"):
        return _finite(inter_rater.fleiss_kappa(table, method="fleiss"))


def cohen_kappa(a: list, b: list) -> float | None:
    """Cohen's kappa of two raters over the same items (None = missing; such items are dropped).
    None when no item has both ratings or chance agreement is 1 (both raters always gave the same one label)."""
    if len(a) != len(b):
        raise ValueError(f"both raters must rate the same items: {len(a)} vs {len(b)} ratings")
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    if not pairs:
        return None
    codes = _codes(v for pair in pairs for v in pair)
    if len(codes) < 2:
        return None
    table = np.zeros((len(codes), len(codes)))
    for x, y in pairs:
        table[codes[x], codes[y]] += 1
    from statsmodels.stats import inter_rater

    with np.errstate(divide="ignore", invalid="ignore"):
        return _finite(inter_rater.cohens_kappa(table, return_results=False))


def judge_verifier_agreement(judge: list[bool | None], verifier: list[bool | None]) -> dict:
    """How often an LLM judge matches a rule verifier on the items both labeled: {n_total, n (both labeled),
    agreement (share equal, None if n == 0), cohen_kappa (None if undefined)}. Lists align item by item."""
    if len(judge) != len(verifier):
        raise ValueError(f"judge and verifier must label the same items: {len(judge)} vs {len(verifier)}")
    both = [(j, v) for j, v in zip(judge, verifier, strict=True) if j is not None and v is not None]
    agreement = sum(j == v for j, v in both) / len(both) if both else None
    return {"n_total": len(judge), "n": len(both), "agreement": agreement, "cohen_kappa": cohen_kappa(judge, verifier)}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)  # stable digits for `dvc metrics diff`


def agreement_metrics(ratings: list[list], level: str = "ordinal", raters: list[str] | None = None) -> dict:
    """A JSON-able summary of a panel's agreement for DVC metrics, from a raters x items matrix (None = missing):
    n_raters, n_items, n_ratings, krippendorff_alpha (+ level, label), fleiss_kappa over complete items (labels
    as categories) with n_items_complete, and Cohen's kappa for each pair of raters ("a|b") and their mean."""
    raters = list(raters) if raters is not None else [f"rater{i}" for i in range(len(ratings))]
    if len(raters) != len(ratings):
        raise ValueError(f"{len(raters)} rater names for {len(ratings)} raters")
    alpha = krippendorff_alpha(ratings, level)
    items = [list(col) for col in zip(*ratings, strict=True)]
    pairwise = {
        f"{raters[i]}|{raters[j]}": _round(cohen_kappa(ratings[i], ratings[j]))
        for i in range(len(ratings))
        for j in range(i + 1, len(ratings))
    }
    defined = [k for k in pairwise.values() if k is not None]
    return {
        "n_raters": len(ratings),
        "n_items": len(items),
        "n_ratings": sum(v is not None for row in ratings for v in row),
        "krippendorff_alpha": _round(alpha),
        "alpha_level": level,
        "alpha_label": alpha_label(alpha),
        "fleiss_kappa": _round(fleiss_kappa(items)),
        "n_items_complete": sum(all(v is not None for v in col) for col in items),
        "cohen_kappa": pairwise,
        "mean_cohen_kappa": _round(sum(defined) / len(defined)) if defined else None,
    }
