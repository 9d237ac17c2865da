import json
import math

import krippendorff
import numpy as np
import pytest

from rewardmill.transforms.judges.agreement import (
    agreement_metrics,
    alpha_label,
    cohen_kappa,
    fleiss_kappa,
    judge_verifier_agreement,
    krippendorff_alpha,
)

N = None
# The krippendorff package's README example (Krippendorff 2011): 3 coders x 15 units, with missing ratings.
README = [
    [N, N, N, N, N, 3, 4, 1, 2, 1, 1, 3, 3, N, 3],
    [1, N, 2, 1, 3, 3, 4, 3, N, N, N, N, N, N, N],
    [N, N, 2, 1, 3, 4, 4, N, 2, 1, 1, 3, 3, N, 4],
]
# Wikipedia's Fleiss' kappa example: 10 items, 14 raters, counts per category 1-5; kappa = 0.210.
FLEISS_COUNTS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]
WIKI_FLEISS = [[c + 1 for c, n in enumerate(row) for _ in range(n)] for row in FLEISS_COUNTS]


def library_alpha(ratings, level):
    data = np.array([[np.nan if v is None else v for v in row] for row in ratings], dtype=float)
    return krippendorff.alpha(reliability_data=data, level_of_measurement=level)


@pytest.mark.parametrize(
    ("ratings", "level", "expected"),
    [
        (README, "nominal", 0.691358),  # README value, units with a single rating included
        (README, "ordinal", 0.806721),  # same data, ordinal
        (README, "interval", 0.810845),  # README value, interval
        ([[1, 2, 3], [1, 2, 3]], "interval", 1.0),  # perfect agreement
        ([["yes", "no", "yes"], ["yes", "no", "yes"]], "nominal", 1.0),  # nominal labels need not be numbers
        ([[True, False], [True, True]], "nominal", 0.0),  # bool labels; one pairable disagreement
        ([[1, 2], [2, 1]], "nominal", -0.5),  # systematic disagreement
        ([[1, 1, 1], [1, 1, 1]], "nominal", None),  # undefined: no variation
        ([[1, 2, 3]], "nominal", None),  # undefined: one rater, nothing pairable
        ([[N, N], [N, N]], "interval", None),  # undefined: all missing
        ([[1, N, 2], [1, N, N]], "nominal", None),  # undefined: variation only in an unpairable item
    ],
)
def test_krippendorff_alpha(ratings, level, expected):
    got = krippendorff_alpha(ratings, level)
    assert got == (pytest.approx(expected, abs=1e-6) if expected is not None else None)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_matches_library_on_missing_data(level):
    # dropping the unpairable units ourselves must not change the library's value
    assert krippendorff_alpha(README, level) == pytest.approx(library_alpha(README, level))


@pytest.mark.parametrize(
    ("ratings", "level", "error"),
    [
        ([[1, 2], [1]], "nominal", "equal length"),  # ragged matrix
        ([], "nominal", "non-empty"),  # no raters
        ([[1, 2], [1, 2]], "ratio", "level must be"),  # unsupported level
        ([["a", "b"], ["a", "b"]], "ordinal", "numeric"),  # labels where numbers are needed
    ],
)
def test_krippendorff_alpha_rejects(ratings, level, error):
    with pytest.raises(ValueError, match=error):
        krippendorff_alpha(ratings, level)


@pytest.mark.parametrize(
    ("alpha", "label"),
    [
        (0.9, "reliable"),  # above 0.8
        (0.8, "reliable"),  # at the boundary
        (0.7, "tentative"),  # between 0.667 and 0.8
        (0.5, "unreliable"),  # below 0.667
        (-0.2, "unreliable"),  # systematic disagreement
        (None, "undefined"),  # not computable
    ],
)
def test_alpha_label(alpha, label):
    assert alpha_label(alpha) == label


@pytest.mark.parametrize(
    ("ratings", "expected"),
    [
        (WIKI_FLEISS, 0.209930),  # Wikipedia example
        ([[1, 1], [2, 2], [1, 1]], 1.0),  # perfect agreement
        ([["yes", "yes", "no"], ["no", "no", "no"], ["yes", "yes", "yes"]], 0.55),  # string labels
        (
            [["yes", "yes", "no"], ["no", None, "no"], ["no", "no", "no"], ["yes", "yes", "yes"]],
            0.55,
        ),  # incomplete out
        ([[1, 1], [1, 1]], None),  # undefined: a single category
        ([[1], [2]], None),  # undefined: one rater
        ([[1, None], [None, 2]], None),  # undefined: no complete item
        ([], None),  # no items
    ],
)
def test_fleiss_kappa(ratings, expected):
    got = fleiss_kappa(ratings)
    assert got == (pytest.approx(expected, abs=1e-6) if expected is not None else None)


def test_fleiss_kappa_rejects_ragged():
    with pytest.raises(ValueError, match="equal length"):
        fleiss_kappa([[1, 2], [1]])


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([1, 1, 0, 0], [1, 0, 0, 0], 0.5),  # po 0.75, pe 0.5
        (["yes", "no", "no"], ["yes", "no", "no"], 1.0),  # perfect, string labels
        ([1, 0, 1, 0], [0, 1, 0, 1], -1.0),  # always opposite
        ([1, 1, 1, 1], [1, 0, 1, 0], 0.0),  # one rater constant: no better than chance
        ([1, None, 0, 0], [1, 1, 0, None], 1.0),  # items missing a rating are dropped
        ([1, 1], [1, 1], None),  # undefined: both always the same label
        ([None, 1], [1, None], None),  # undefined: no item rated by both
        ([], [], None),  # no items
    ],
)
def test_cohen_kappa(a, b, expected):
    got = cohen_kappa(a, b)
    assert got == (pytest.approx(expected, abs=1e-9) if expected is not None else None)


def test_cohen_kappa_rejects_misaligned():
    with pytest.raises(ValueError, match="same items"):
        cohen_kappa([1, 0], [1])


@pytest.mark.parametrize(
    ("judge", "verifier", "expected"),
    [
        (
            [True, True, False, None],
            [True, False, False, True],
            {"n_total": 4, "n": 3, "agreement": 2 / 3, "cohen_kappa": 0.4},
        ),  # one judge abstention
        (
            [True, False],
            [True, False],
            {"n_total": 2, "n": 2, "agreement": 1.0, "cohen_kappa": 1.0},
        ),  # perfect
        (
            [None, None],
            [True, False],
            {"n_total": 2, "n": 0, "agreement": None, "cohen_kappa": None},
        ),  # judge never answered
    ],
)
def test_judge_verifier_agreement(judge, verifier, expected):
    got = judge_verifier_agreement(judge, verifier)
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == (pytest.approx(value) if isinstance(value, float) else value)


def test_judge_verifier_agreement_rejects_misaligned():
    with pytest.raises(ValueError, match="same items"):
        judge_verifier_agreement([True], [True, False])


@pytest.mark.parametrize(
    ("ratings", "level", "expected"),
    [
        (
            README,
            "interval",
            {"n_raters": 3, "n_items": 15, "n_ratings": 27, "alpha_label": "reliable", "n_items_complete": 2},
        ),  # missing data: alpha uses every pairable rating, Fleiss only the 2 complete items
        (
            [[4, 4, 2], [4, 5, 2]],
            "ordinal",
            {"n_raters": 2, "n_items": 3, "n_ratings": 6, "n_items_complete": 3, "mean_cohen_kappa": 0.5},
        ),  # complete data; pairwise Cohen's kappa over labels
        (
            [[3, 3], [3, 3]],
            "ordinal",
            {"krippendorff_alpha": None, "alpha_label": "undefined", "fleiss_kappa": None, "mean_cohen_kappa": None},
        ),  # undefined everywhere: null in JSON, never NaN
    ],
)
def test_agreement_metrics(ratings, level, expected):
    metrics = agreement_metrics(ratings, level)
    json.dumps(metrics, allow_nan=False)  # valid JSON for DVC metrics
    assert metrics["alpha_level"] == level
    for key, value in expected.items():
        assert metrics[key] == value
    assert all(v is None or math.isfinite(v) for v in metrics["cohen_kappa"].values())


def test_agreement_metrics_names_rater_pairs():
    metrics = agreement_metrics([[1, 0, 1], [1, 0, 0], [1, 1, 1]], "nominal", raters=["strict", "lenient", "expert"])
    assert list(metrics["cohen_kappa"]) == ["strict|lenient", "strict|expert", "lenient|expert"]
    with pytest.raises(ValueError, match="rater names"):
        agreement_metrics([[1, 0], [0, 1]], "nominal", raters=["only one"])
