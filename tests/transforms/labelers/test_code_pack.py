"""The code gold pack (transforms/evaluation/packs/code.jsonl) as the red-team table: every row gets its gold from
code_tests, by packs/README.md's rule (evaluation/audit.py `agrees`)."""

import pytest

from rewardmill.transforms.evaluation.audit import agrees
from rewardmill.transforms.evaluation.gold_packs import PACKS_DIR, load_pack
from tests.transforms.labelers.pack_rows import pack_labels

ROWS = load_pack(PACKS_DIR / "code.jsonl")
ATTACKS = ("shadowing", "protocol_forgery", "exception")


@pytest.fixture(scope="module")
def labels():
    """Each row labeled with its own config, rows sharing a config together (`workers` sandboxes at a time)."""
    return pack_labels(ROWS)


def test_the_pack_covers_the_attacks_and_controls():
    assert {r.labeler for r in ROWS} == {"code_tests"}
    assert len([r for r in ROWS if r.cls in ATTACKS]) >= 25 and set(ATTACKS) <= {r.cls for r in ROWS}
    assert {"honest", "hack", "wrong"} == {r.kind for r in ROWS}
    # a hack must not slip out as `error` (score None would exclude it from ranking): each names its verdict
    assert all(r.verdict == "incorrect" for r in ROWS if r.kind == "hack")


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_every_row_gets_its_gold(labels, row):
    label = labels[row.id]
    assert agrees(row, label), (row.note, label.verdict, label.score, label.rationale)
