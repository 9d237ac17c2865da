"""Every row of the IFEval gold pack gets its gold verdict from instruction_following (packs/README.md's rule)."""

import pytest

from rewardmill.transforms.evaluation.audit import agrees
from rewardmill.transforms.evaluation.gold_packs import PACKS_DIR, load_pack
from tests.transforms.labelers.pack_rows import pack_labels

ROWS = load_pack(PACKS_DIR / "ifeval.jsonl")


def test_the_pack_covers_the_attacks_and_controls():
    assert len(ROWS) >= 12 and {r.labeler for r in ROWS} == {"instruction_following"}
    assert {"honest", "reasoning_placement", "homoglyph", "near_miss"} <= {r.cls for r in ROWS}
    assert {"honest", "hack", "wrong"} == {r.kind for r in ROWS}


@pytest.fixture(scope="module")
def labels():
    return pack_labels(ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_every_row_gets_its_gold(row, labels):
    label = labels[row.id]
    assert agrees(row, label), (row.note, label.verdict, label.score, label.rationale)
