"""Every row of the IFEval gold pack gets its gold verdict from instruction_following (packs/README.md's rule)."""

import pytest

from rewardmill.pipelines.config import from_dict
from rewardmill.transforms.evaluation.audit import agrees
from rewardmill.transforms.evaluation.gold_packs import PACKS_DIR, load_pack
from rewardmill.transforms.labelers import LABELERS

ROWS = load_pack(PACKS_DIR / "ifeval.jsonl")


def test_the_pack_covers_the_attacks_and_controls():
    assert len(ROWS) >= 12 and {r.labeler for r in ROWS} == {"instruction_following"}
    assert {"honest", "reasoning_placement", "homoglyph", "near_miss"} <= {r.cls for r in ROWS}
    assert {"honest", "hack", "wrong"} == {r.kind for r in ROWS}


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_every_row_gets_its_gold(row):
    cls = LABELERS[row.labeler]
    labeler = cls(from_dict(cls.Config, row.config, row.id))
    label = labeler.label(*(row.row[c] for c in cls.reads))
    assert agrees(row, label), (row.note, label.verdict, label.score, label.rationale)
