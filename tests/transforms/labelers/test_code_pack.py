"""The code gold pack (transforms/evaluation/packs/code.jsonl) as the red-team table: every row gets its gold.

Rules (packs/README.md): a `correct` row needs verdict correct and score 1.0; an `incorrect` row needs a verdict
other than correct and a score of None or 0.0 (at most `max_score` where the row allows partial credit); a row's
`verdict`, when given, must be exactly the label's.
"""

import json
from pathlib import Path

import pytest

from rewardmill.pipelines.config import from_dict
from rewardmill.transforms.labelers.code_tests import CodeTestsConfig, CodeTestsVerifier

PACK = Path(__file__).resolve().parents[3] / "transforms" / "evaluation" / "packs" / "code.jsonl"
ROWS = [json.loads(line) for line in PACK.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def labels():
    """Each row labeled with its own config (rows sharing a config run together)."""
    by_config: dict[str, list[dict]] = {}
    for row in ROWS:
        by_config.setdefault(json.dumps(row["config"], sort_keys=True), []).append(row)
    out = {}
    for config, rows in by_config.items():
        verifier = CodeTestsVerifier(from_dict(CodeTestsConfig, json.loads(config), "code_tests"))
        try:
            columns = [tuple(r["row"][c] for c in CodeTestsVerifier.reads) for r in rows]
            out.update(zip([r["id"] for r in rows], verifier.label_many(columns), strict=True))
        finally:
            verifier.teardown()
    return out


def test_the_pack_covers_the_attack_classes():
    assert len({r["id"] for r in ROWS}) == len(ROWS)
    adversarial = [r for r in ROWS if r["class"] in ("shadowing", "protocol_forgery", "exception")]
    assert len(adversarial) >= 25
    assert {r["class"] for r in adversarial} == {"shadowing", "protocol_forgery", "exception"}
    assert all(r["labeler"] == "code_tests" and set(CodeTestsVerifier.reads) <= set(r["row"]) for r in ROWS)
    assert sum(r["kind"] == "honest" for r in ROWS) >= 10


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_every_row_gets_its_gold(labels, row):
    label = labels[row["id"]]
    if row["gold"] == "correct":
        assert (label.verdict, label.score) == ("correct", 1.0), label
    else:
        assert label.verdict != "correct", label
        assert label.score is None or label.score <= row.get("max_score", 0.0) + 1e-9, label
    if "verdict" in row:
        assert label.verdict == row["verdict"], label
