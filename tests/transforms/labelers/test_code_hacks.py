"""The hack table (code_hacks.py): every known trick scores 0, every honest control scores 1, in process and through
`rewardmill label --labeler code_tests` as a user runs it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rewardmill.transforms.labelers.code_tests import CodeTestsConfig, CodeTestsVerifier
from tests.transforms.labelers import code_hacks

REPO = Path(__file__).resolve().parents[3]
ROWS = code_hacks.rows()


@pytest.fixture(scope="module")
def labels():
    verifier = CodeTestsVerifier(CodeTestsConfig(timeout_seconds=2, workers=2))
    try:
        scored = verifier.label_many([(r["completion"], r["tests"]) for r in ROWS])
        return dict(zip([r["name"] for r in ROWS], scored, strict=True))
    finally:
        verifier.teardown()


def test_the_table_is_big_enough():
    assert len(code_hacks.HACKS) >= 15 and len(code_hacks.CONTROLS) >= 5
    assert len({r["name"] for r in ROWS}) == len(ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[r["name"] for r in ROWS])
def test_every_hack_scores_zero_and_every_control_one(labels, row):
    label = labels[row["name"]]
    assert label.score == row["expected"], label
    assert label.verdict == ("correct" if row["expected"] == 1.0 else label.verdict) != "error", label
    assert json.loads(label.raw)["isolation"] in ("bwrap", "unshare")  # the mechanism is on every label


@pytest.mark.slow
def test_the_cli_scores_the_table(tmp_path):
    """The README's two commands, as written (default config), in a scratch folder."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    bin_dir = Path(sys.executable).parent
    subprocess.run([str(bin_dir / "python"), "-m", "tests.transforms.labelers.code_hacks", "hacks.jsonl"], check=True,
                   cwd=tmp_path, env=env, timeout=60)  # fmt: skip
    argv = [str(bin_dir / "rewardmill"), "label", "--labeler", "code_tests", "--input", "hacks.jsonl"]
    subprocess.run([*argv, "--output", "labels.jsonl"], check=True, cwd=tmp_path, env=env, timeout=600)
    out = tmp_path / "labels.jsonl"
    scored = {r["row"]: r["score"] for r in map(json.loads, out.read_text().splitlines())}
    assert {ROWS[i]["name"]: s for i, s in scored.items()} == {r["name"]: r["expected"] for r in ROWS}
