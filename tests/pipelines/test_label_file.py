"""`rewardmill label` on files outside DVC."""

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rewardmill.pipelines.label_file import OUTPUT_SCHEMA, main

ROWS = [
    {"completion": "so \\boxed{4}", "reference": "4", "task": "math"},
    {"completion": "5", "reference": "4"},
    {"completion": "x", "reference": "\\frac{"},
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_jsonl_in_parquet_out(tmp_path):
    out = tmp_path / "labels.parquet"
    main(["--labeler", "math_answer", "--input", str(write_jsonl(tmp_path / "in.jsonl", ROWS)), "--output", str(out)])
    table = pq.read_table(out)
    assert table.schema.equals(OUTPUT_SCHEMA)
    assert [(r["row"], r["verdict"]) for r in table.to_pylist()] == [(0, "correct"), (1, "incorrect"), (2, "abstain")]
    # no temp file left; the rejects file is written (empty) on every run
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "labels.parquet", "labels.rejects.parquet"]


@pytest.mark.slow
def test_console_script_with_config_and_jsonl_output(tmp_path):
    out = tmp_path / "labels.jsonl"
    script = Path(sys.executable).parent / "rewardmill"
    proc = subprocess.run(
        [
            str(script),
            "label",
            "--labeler",
            "math_answer",
            "--config",
            '{"timeout_seconds": 2}',
            "--input",
            str(write_jsonl(tmp_path / "in.jsonl", ROWS[:2])),
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["score"] for r in rows] == [1.0, 0.0] and "2 rows -> 2 labels" in proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--labeler", "nope"], "unknown labeler"),  # not in the registry
        (["--labeler", "math_answer", "--config", '{"timeout": 1}'], "timeout"),  # typo in the config
        (["--labeler", "math_answer", "--config", "{bad json"], "Expecting"),  # not JSON
    ],
)
def test_bad_arguments_fail_with_a_clear_message(tmp_path, args, message):
    src = write_jsonl(tmp_path / "in.jsonl", ROWS)
    with pytest.raises(SystemExit, match=message):
        main([*args, "--input", str(src), "--output", str(tmp_path / "o.jsonl")])


def test_an_input_with_no_labelable_row_fails_naming_the_file(tmp_path):
    """Bad rows are rejects (tests/pipelines/test_label_file_bad_input.py); a file of nothing else fails."""
    src = tmp_path / "in.jsonl"
    src.write_text('{"completion": "1"}\n{oops\n')
    with pytest.raises(SystemExit, match="in.jsonl: all 2 rows rejected"):
        main(["--labeler", "math_answer", "--input", str(src), "--output", str(tmp_path / "o.jsonl")])


@pytest.mark.slow
def test_humaneval_canonical_solutions_pass_through_the_cli(tmp_path):
    """Through `rewardmill label`, canonical solutions (every 12th of the 164, first and last included) score 1.0 and
    wrong ones 0. All 164 go through the same labeler in tests/transforms/labelers/test_code_tests.py
    (test_humaneval_all_canonical_solutions_pass): here the CLI's reading, config and writing are what is checked."""
    from rewardmill.transforms.sources import humaneval

    records = humaneval.generate()
    assert len(records) == 164
    chosen = [*records[::12], records[-1]]
    rows = [{"completion": r["reference"], "tests": r["tests"], "task": "code"} for r in chosen]
    wrong = [
        {"completion": "    return None\n", "tests": records[0]["tests"], "task": "code"},  # wrong value
        {"completion": "    raise ValueError('no')\n", "tests": records[1]["tests"], "task": "code"},  # raises
    ]
    out = tmp_path / "labels.parquet"
    src = write_jsonl(tmp_path / "he.jsonl", rows + wrong)
    main(["--labeler", "code_tests", "--config", '{"workers": 4}', "--input", str(src), "--output", str(out)])
    labels = pq.read_table(out).to_pylist()
    n = len(chosen)
    assert len(labels) == n + 2 and [lab["row"] for lab in labels] == list(range(n + 2))
    failed = {chosen[lab["row"]]["metadata"]: lab["rationale"] for lab in labels[:n] if lab["score"] != 1.0}
    assert failed == {}
    assert [(lab["verdict"], lab["score"]) for lab in labels[n:]] == [("incorrect", 0.0)] * 2
    assert "ValueError" in labels[n + 1]["rationale"]
