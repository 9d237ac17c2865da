"""The math gold pack (transforms/evaluation/packs/math.jsonl): every row through MathAnswerVerifier with the row's
config gets its gold verdict (packs/README.md's pass rule)."""

from pathlib import Path

import pytest

from rewardmill.transforms.evaluation.gold_packs import load_pack
from rewardmill.transforms.labelers.math_answer import HEDGED
from tests.transforms.labelers.pack_rows import pack_labels

PACK = Path(__file__).parents[3] / "transforms/evaluation/packs/math.jsonl"
ROWS = load_pack(PACK)  # checks each row against the README's format
# Classes whose rows are final answers that commit to no single value: rejected with HEDGED, never appealed.
NO_VALUE = ("retraction", "negation", "range", "hedge", "homoglyph", "restated_question", "empty_symbol")


@pytest.fixture(scope="module")
def labels() -> dict:
    """Each row's label, one verifier per distinct config (label_many keeps the order)."""
    return pack_labels(ROWS)


def test_the_pack_covers_every_class():
    assert len(ROWS) >= 30 and len({r.id for r in ROWS}) == len(ROWS)
    classes = {r.cls for r in ROWS}
    assert {*NO_VALUE, "reasoning_placement", "near_miss", "wrong", "honest", "equivalent"} <= classes
    for row in ROWS:
        assert row.id.startswith(f"math/{row.cls}/") and row.labeler == "math_answer" and row.note


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_every_row_gets_its_gold(labels, row):
    label = labels[row.id]
    if row.verdict:
        assert label.verdict == row.verdict, label
    if row.gold == "correct":
        assert (label.verdict, label.score) == ("correct", 1.0), label
    else:
        assert label.verdict != "correct" and label.score in (None, 0.0), label
    if row.cls in NO_VALUE:
        assert label.rationale.startswith(HEDGED), label.rationale  # final: a reference judge never appeals it
