"""Pair rows: the agreement of the named scores with each pair's order."""

import polars as pl
import pytest

from rewardmill.transforms.aggregate.reward import SCORES_DTYPE
from rewardmill.transforms.pairing.rows import pair_agreement


def scores(**named) -> list[dict]:
    return [{"name": name, "score": score} for name, score in named.items()]


@pytest.mark.parametrize(
    "chosen, rejected, agreement",
    [
        (scores(judge=0.9, panel=0.8), scores(judge=0.1, panel=0.2), 1.0),  # both order the pair as it is
        (scores(judge=0.9, panel=0.1), scores(judge=0.1, panel=0.2), 0.5),  # one of two
        (scores(judge=0.5), scores(judge=0.5), 0.0),  # a tie counts against
        (scores(judge=0.9, panel=None), scores(judge=0.1, panel=0.5), 1.0),  # a missing score does not vote
        (scores(judge=0.9), scores(panel=0.1), 0.0),  # no name on both sides: 0.0, not null
        ([], [], 0.0),  # no scores at all
        # a name scored twice on a side (two versions of a labeler) votes once per pair of its scores
        (
            [{"name": "judge", "score": 0.9}, {"name": "judge", "score": 0.2}],
            [{"name": "judge", "score": 0.5}],
            0.5,
        ),
    ],
)
def test_pair_agreement(chosen, rejected, agreement):
    pairs = pl.DataFrame(
        {"scores_c": [chosen, scores(a=1.0)], "scores_r": [rejected, scores(a=0.0)]},
        schema={"scores_c": SCORES_DTYPE, "scores_r": SCORES_DTYPE},
    )
    assert pair_agreement(pairs).to_list() == [agreement, 1.0]  # the second pair checks the rows stay in order
