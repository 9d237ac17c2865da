"""Per-aspect pairs in the assemble bucket: for each named aspect, each prompt's best against its worst on that
aspect's own scores, every (prompt, aspect) without a pair rejected with its reason."""

from dataclasses import replace

import polars as pl
import pytest

from rewardmill.schemas.pair import PAIR_ASPECT_V1
from rewardmill.transforms.aggregate.bucket import assemble_bucket
from rewardmill.transforms.pairing.by_aspect import AspectPairsConfig
from tests.transforms.aggregate.test_bucket import CFG, synthetic

ASPECTS = ("panel/correctness", "math_answer/correctness")


@pytest.fixture(scope="module")
def result():
    rollouts, labels = synthetic(12)
    cfg = replace(CFG, by_aspect=AspectPairsConfig(aspects=ASPECTS, min_margin=0.1))
    return rollouts, labels, assemble_bucket(rollouts, labels, {"p003": ("contaminated", "in bench.jsonl:1")}, cfg)


def test_each_row_is_its_aspects_best_against_its_worst(result):
    _, _, out = result
    table = out.tables["pairs_by_aspect"]
    assert table.schema == PAIR_ASPECT_V1 and table.num_rows > 0
    rows = pl.from_arrow(table)
    assert set(rows["aspect"]) <= set(ASPECTS) and set(rows["pair_type"]) == {"by_aspect"}
    assert rows["pair_id"].n_unique() == rows.height and (rows["margin"] > 0.1).all()
    rewards = pl.from_arrow(out.tables["_rewards"]).filter(pl.col("status") == "kept")
    for row in rows.iter_rows(named=True):
        scores = rewards.filter(pl.col("prompt_id") == row["prompt_id"]).explode("scores").unnest("scores")
        mine = scores.filter(pl.col("name") == row["aspect"]).drop_nulls("score")
        assert row["score_chosen"] == mine["score"].max() and row["score_rejected"] == mine["score"].min()
        assert row["margin"] == pytest.approx(row["score_chosen"] - row["score_rejected"])
    assert "p003" not in set(rows["prompt_id"])  # a flagged prompt is never paired


def test_every_prompt_and_aspect_has_a_pair_or_a_reason(result):
    rollouts, _, out = result
    rows = pl.from_arrow(out.tables["pairs_by_aspect"])
    rejects = pl.from_arrow(out.rejects["pairs_by_aspect"])
    assert set(rejects["reason"]) <= {"no_aspect_score", "aspect_tie", "low_agreement", "length_ratio", "contaminated"}
    assert set(rejects.filter(pl.col("reason") == "contaminated")["row_id"]) == {f"p003/{a}" for a in ASPECTS}
    accounted = {f"{p}/{a}" for p, a in rows.select("prompt_id", "aspect").iter_rows()} | set(rejects["row_id"])
    prompts = set(pl.from_arrow(rollouts)["prompt_id"])
    assert accounted == {f"{p}/{a}" for p in prompts for a in ASPECTS}


def test_no_aspects_no_rows_and_config_checks():
    rollouts, labels = synthetic(3)
    out = assemble_bucket(rollouts, labels, {}, CFG)
    assert out.tables["pairs_by_aspect"].num_rows == 0 and out.rejects["pairs_by_aspect"].num_rows == 0
    with pytest.raises(ValueError, match="labeler/aspect"):
        AspectPairsConfig(aspects=("panel",))
    with pytest.raises(ValueError, match="twice"):
        AspectPairsConfig(aspects=("a/b", "a/b"))
