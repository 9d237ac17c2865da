"""`rewardmill label` on bad input: every bad row is a reject (file, line, reason) or a clear one-line error.

A row that cannot be labeled goes to `<output stem>.rejects<suffix>` beside the output (REJECT_V1 plus the input
`row` and 1-based `line`), is counted, and gets one warning line naming the file and line; the good rows are labeled.
An input with no rows, or whose every row is rejected, exits non-zero.
"""

import json
import logging
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rewardmill.pipelines.label_file import REJECTS_SCHEMA, main, rejects_path

GOOD = {"completion": "\\boxed{4}", "reference": "4"}


def run(tmp_path: Path, data: bytes, *, labeler: str = "math_answer", suffix: str = ".jsonl", task=None):
    src = tmp_path / "in.jsonl"
    src.write_bytes(data)
    out = tmp_path / f"labels{suffix}"
    main(["--labeler", labeler, "--input", str(src), "--output", str(out), *(["--task", task] if task else [])])
    return out


def read(path: Path) -> list[dict]:
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()
    return [json.loads(line) for line in path.read_text().splitlines()]


def lines(*rows) -> bytes:
    return b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in rows)


@pytest.mark.parametrize(
    ("bad", "reason", "detail"),
    [
        (b'{"completion": "\xff\xfe", "reference": "4"}', "not_utf8", "byte 0xff"),  # Latin-1 bytes in a line
        (b"{oops", "not_json", "Expecting"),  # a broken line
        (b"[1, 2]", "not_an_object", "list"),  # JSON, but not one row
        (json.dumps({"completion": "4"}).encode(), "missing_column:reference", "reference"),  # math needs it
        (json.dumps({"reference": "4"}).encode(), "missing_column:completion", "completion"),
        (json.dumps({"completion": None, "reference": "4"}).encode(), "not_a_string:completion", "null"),
        (json.dumps({"completion": 4, "reference": "4"}).encode(), "not_a_string:completion", "int"),
        (json.dumps({**GOOD, "rollout_id": 7}).encode(), "not_a_string:rollout_id", "int"),  # ids are strings
        (json.dumps({**GOOD, "rollout_id": "r0"}).encode(), "duplicate_rollout_id", "row 0"),  # the first row's id
    ],
)
def test_a_bad_row_is_one_reject_with_its_line_and_the_rest_is_labeled(tmp_path, stage_log, bad, reason, detail):
    out = run(tmp_path, lines({**GOOD, "rollout_id": "r0"}, b"", bad, GOOD))  # a blank line is skipped, not a row
    labels = read(out)
    assert [(lab["row"], lab["verdict"]) for lab in labels] == [(0, "correct"), (2, "correct")]
    [reject] = read(rejects_path(out))
    assert (reject["reason"], reject["row"], reject["line"], reject["stage"]) == (reason, 1, 3, "label")
    assert detail in reject["detail"]
    warnings = [r.getMessage() for r in stage_log.records if r.levelno == logging.WARNING]
    assert any(f"in.jsonl:3: rejected ({reason})" in w for w in warnings), warnings
    assert any("3 rows -> 2 labels" in r.getMessage() and "1 rejected" in r.getMessage() for r in stage_log.records)


def test_rows_of_another_task_are_not_applicable_not_missing_a_column(tmp_path):
    """A code row (no `reference`) in a math run is skipped as the label stage skips it, not rejected."""
    out = run(tmp_path, lines(GOOD, {"completion": "def f(): pass", "task": "code"}))
    assert len(read(out)) == 1 and read(rejects_path(out)) == []


def test_rejects_follow_the_output_format(tmp_path):
    out = run(tmp_path, lines(GOOD, {"completion": None, "reference": "1"}), suffix=".parquet")
    assert rejects_path(out) == tmp_path / "labels.rejects.parquet"
    table = pq.read_table(rejects_path(out))
    assert table.schema.equals(REJECTS_SCHEMA)
    assert table.column("reason").to_pylist() == ["not_a_string:completion"]


def test_a_clean_run_writes_an_empty_rejects_file(tmp_path):
    """Always written: a stale rejects file from an earlier run never outlives a clean one."""
    out = run(tmp_path, lines(GOOD))
    assert rejects_path(out).exists() and read(rejects_path(out)) == []


@pytest.mark.parametrize(
    "data",
    [b"", b"\n\n  \n"],  # an empty file; only blank lines
)
def test_an_empty_input_fails_naming_the_file(tmp_path, data):
    with pytest.raises(SystemExit, match=r"in.jsonl: no rows to label \(empty input\)"):
        run(tmp_path, data)
    assert not (tmp_path / "labels.jsonl").exists()


def test_an_input_whose_every_row_is_rejected_fails_after_writing_the_rejects(tmp_path):
    """A Latin-1 file (every line undecodable) must not pass as an empty labeling."""
    data = '{"completion": "\\\\boxed{café}", "reference": "café"}\n'.encode("latin-1")
    with pytest.raises(SystemExit, match=r"in.jsonl: all 1 rows rejected, none labeled \(see .*labels.rejects.jsonl"):
        run(tmp_path, data)
    assert [r["reason"] for r in read(tmp_path / "labels.rejects.jsonl")] == ["not_utf8"]


def test_a_utf8_byte_order_mark_is_not_a_bad_row(tmp_path):
    out = run(tmp_path, b"\xef\xbb\xbf" + lines(GOOD))
    assert [lab["verdict"] for lab in read(out)] == ["correct"]


def test_parquet_input_rows_are_named_by_row(tmp_path, stage_log):
    import pyarrow as pa

    src = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist([GOOD, {"completion": None, "reference": "4"}]), src)
    out = tmp_path / "labels.jsonl"
    main(["--labeler", "math_answer", "--input", str(src), "--output", str(out)])
    [reject] = read(rejects_path(out))
    assert (reject["row"], reject["line"], reject["reason"]) == (1, None, "not_a_string:completion")
    assert any("in.parquet row 1: rejected (not_a_string:completion)" in r.getMessage() for r in stage_log.records)


def test_an_unreadable_parquet_file_is_one_line(tmp_path):
    src = tmp_path / "in.parquet"
    src.write_bytes(b"not parquet")
    with pytest.raises(SystemExit, match="in.parquet: not a readable Parquet file"):
        main(["--labeler", "math_answer", "--input", str(src), "--output", str(tmp_path / "o.jsonl")])
