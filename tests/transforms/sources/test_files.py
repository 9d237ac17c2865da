"""transforms/sources/files.py: JSONL / Parquet rows with a column mapping; a bad row is a RecordError, not fatal."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rewardmill.transforms.sources import files
from rewardmill.transforms.sources.files import MAPPABLE, map_columns, read_file
from rewardmill.transforms.sources.normalize import RecordError


def write_lines(path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def as_results(items) -> list[tuple[str, object]]:
    """(row_id, record) or (row_id, 'error:<reason>') for easy comparison."""
    return [(row_id, f"error:{rec.reason}" if isinstance(rec, RecordError) else rec) for row_id, rec in items]


# --- map_columns ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, columns, expected",
    [
        # no mapping: the prompt fields the row has are kept, other columns are dropped
        ({"prompt": "q", "reference": "1", "id": 9}, {}, {"prompt": "q", "reference": "1"}),
        # a mapping renames file columns to prompt fields
        (
            {"question": "q", "answer": "1"},
            {"prompt": "question", "reference": "answer"},
            {"prompt": "q", "reference": "1"},
        ),
        # a mapped field wins over a same-named column in the file
        ({"prompt": "old", "question": "new"}, {"prompt": "question"}, {"prompt": "new"}),
        # mapped and unmapped fields combine
        (
            {"q": "x", "task": "open", "metadata": {"k": 1}},
            {"prompt": "q"},
            {"prompt": "x", "task": "open", "metadata": {"k": 1}},
        ),
        # a mapped column that is present but null is kept as null (normalize decides)
        ({"q": None}, {"prompt": "q"}, {"prompt": None}),
        # one file column can feed two fields
        ({"q": "x"}, {"prompt": "q", "metadata": "q"}, {"prompt": "x", "metadata": "x"}),
    ],
)
def test_map_columns(raw, columns, expected):
    assert map_columns(raw, columns) == expected


def test_map_columns_missing_column_is_a_record_error():
    with pytest.raises(RecordError) as info:
        map_columns({"question": "q"}, {"prompt": "question", "reference": "answer"})
    assert info.value.reason == "missing_column"
    assert "reference<-answer" in info.value.detail


@pytest.mark.parametrize(
    "columns, name",
    [
        # a prompt field that does not exist
        ({"question": "q"}, "question"),
        # a schema column that is not mappable (computed by normalize)
        ({"prompt_id": "id"}, "prompt_id"),
        # split is computed from the hash, never read
        ({"prompt": "q", "split": "s"}, "split"),
    ],
)
def test_map_columns_unknown_prompt_field(columns, name):
    with pytest.raises(ValueError, match=f"unknown prompt fields \\['{name}'\\]") as info:
        map_columns({"q": "x", "id": 1, "s": "train"}, columns)
    assert not isinstance(info.value, RecordError)  # a config error, fatal, not a per-row reject


def test_mappable_covers_the_record_fields_normalize_reads():
    assert set(MAPPABLE) == {"prompt", "messages", "reference", "tests", "rubric", "constraints", "task", "metadata"}


# --- read_file: JSONL ----------------------------------------------------------------------------------------------


def test_jsonl_rows_and_per_row_errors(tmp_path):
    path = write_lines(
        tmp_path / "p.jsonl",
        [
            json.dumps({"question": "What is 1 + 1?", "answer": "2"}),  # 1: good
            '{"question": "broken", ',  # 2: not JSON
            "",  # 3: blank line, skipped
            "[1, 2]",  # 4: JSON but not an object
            json.dumps({"question": "no answer"}),  # 5: missing the mapped column
            '"just a string"',  # 6: a JSON scalar
            "   ",  # 7: whitespace-only, skipped
            json.dumps({"question": "What is 2 + 2?", "answer": 4, "task": "math"}),  # 8: good, extra field kept
        ],
    )
    results = as_results(read_file(path, {"prompt": "question", "reference": "answer"}))
    assert results == [
        (f"{path}:1", {"prompt": "What is 1 + 1?", "reference": "2"}),
        (f"{path}:2", "error:bad_json"),
        (f"{path}:4", "error:bad_json"),
        (f"{path}:5", "error:missing_column"),
        (f"{path}:6", "error:bad_json"),
        (f"{path}:8", {"prompt": "What is 2 + 2?", "reference": 4, "task": "math"}),
    ]


@pytest.mark.parametrize(
    "line, detail",
    [
        # truncated JSON: the decoder's message is kept
        ('{"a": ', "Expecting value"),
        # a list: says it is not an object
        ("[1]", "not a JSON object"),
        # null
        ("null", "not a JSON object"),
    ],
)
def test_jsonl_error_details(tmp_path, line, detail):
    path = write_lines(tmp_path / "p.jsonl", [line])
    [(row_id, error)] = list(read_file(path, {}))
    assert row_id == f"{path}:1"
    assert isinstance(error, RecordError) and detail in error.detail


def test_json_suffix_reads_as_jsonl(tmp_path):
    path = write_lines(tmp_path / "p.json", [json.dumps({"prompt": "a"}), json.dumps({"prompt": "b"})])
    assert as_results(read_file(path, {})) == [(f"{path}:1", {"prompt": "a"}), (f"{path}:2", {"prompt": "b"})]


def test_jsonl_unicode(tmp_path):
    path = write_lines(
        tmp_path / "p.jsonl", [json.dumps({"prompt": "Combien font 2 + 2 ? é ü 漢"}, ensure_ascii=False)]
    )
    assert as_results(read_file(path, {})) == [(f"{path}:1", {"prompt": "Combien font 2 + 2 ? é ü 漢"})]


def test_empty_jsonl(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text("")
    assert list(read_file(str(path), {})) == []


def test_jsonl_unknown_mapping_raises(tmp_path):
    path = write_lines(tmp_path / "p.jsonl", [json.dumps({"q": "x"})])
    with pytest.raises(ValueError, match="unknown prompt fields"):
        list(read_file(path, {"question": "q"}))


def test_a_line_that_is_not_utf8_is_that_rows_reject_naming_file_line_and_byte(tmp_path):
    """One latin-1 line used to fail the whole source with a UnicodeDecodeError traceback; now it is one not_utf8
    reject and the rows around it go on."""
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"prompt": "a"}\n{"prompt": "caf\xe9"}\n{"prompt": "b"}\n')
    [first, (row_id, error), last] = list(read_file(str(path), {}))
    assert first == (f"{path}:1", {"prompt": "a"}) and last == (f"{path}:3", {"prompt": "b"})
    assert row_id == f"{path}:2" and isinstance(error, RecordError) and error.reason == "not_utf8"
    assert f"{path} line 2" in error.detail and "0xe9 at position 16" in error.detail and "UTF-8" in error.detail


def test_a_leading_byte_order_mark_is_not_part_of_the_first_row(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"prompt": "a"}\n')
    assert as_results(read_file(str(path), {})) == [(f"{path}:1", {"prompt": "a"})]


# --- read_file: Parquet --------------------------------------------------------------------------------------------


def test_parquet_rows(tmp_path):
    path = tmp_path / "p.parquet"
    table = pa.table({"question": ["What is 1 + 1?", "What is 2 + 2?"], "answer": [2, 4], "id": [10, 11]})
    pq.write_table(table, path)
    assert as_results(read_file(str(path), {"prompt": "question", "reference": "answer"})) == [
        (f"{path}:0", {"prompt": "What is 1 + 1?", "reference": 2}),  # Parquet ids are 0-based row indices
        (f"{path}:1", {"prompt": "What is 2 + 2?", "reference": 4}),
    ]


def test_parquet_missing_mapped_column_rejects_each_row(tmp_path):
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"question": ["a", "b"]}), path)
    assert as_results(read_file(str(path), {"prompt": "question", "reference": "answer"})) == [
        (f"{path}:0", "error:missing_column"),
        (f"{path}:1", "error:missing_column"),
    ]


def test_parquet_nested_messages(tmp_path):
    path = tmp_path / "p.parquet"
    messages = [{"role": "user", "content": "hi"}]
    pq.write_table(pa.table({"messages": [messages], "task": ["open"]}), path)
    assert as_results(read_file(str(path), {})) == [(f"{path}:0", {"messages": messages, "task": "open"})]


def test_parquet_text_that_is_not_utf8_rejects_only_its_row(tmp_path):
    """Parquet does not check a string column's bytes, and pyarrow fails a whole batch on one bad value."""
    path = tmp_path / "p.parquet"
    good = pa.array([b"q1", b"caf\xe9", b"q3"], pa.binary())
    pq.write_table(pa.table({"prompt": pa.Array.from_buffers(pa.string(), 3, good.buffers())}), path)
    results = list(read_file(str(path), {}))
    assert [r for _, r in results if not isinstance(r, RecordError)] == [{"prompt": "q1"}, {"prompt": "q3"}]
    [(row_id, error)] = [(i, r) for i, r in results if isinstance(r, RecordError)]
    assert row_id == f"{path}:1" and error.reason == "not_utf8" and f"{path} row 1 column 'prompt'" in error.detail


# --- read_file: unusable paths -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        # CSV is not supported
        "p.csv",
        # neither is plain text
        "p.txt",
        # no suffix at all
        "prompts",
    ],
)
def test_unsupported_suffix(tmp_path, name):
    path = tmp_path / name
    path.write_text('{"prompt": "a"}\n')
    with pytest.raises(ValueError, match="unsupported prompt file type"):
        list(read_file(str(path), {}))


@pytest.mark.parametrize("name", ["p.csv", "folder"])
def test_a_file_no_reader_takes_is_a_user_error(tmp_path, name):
    from rewardmill.transforms.errors import UserError

    path = tmp_path / name
    path.mkdir() if name == "folder" else path.write_text("prompt\na\n")
    with pytest.raises(files.SourceFileError) as exc:
        files.check_file(str(path))
    assert isinstance(exc.value, UserError) and str(path) in str(exc.value)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        list(read_file(str(tmp_path / "nope.jsonl"), {}))


def test_hf_source_reads_a_local_dataset_folder(tmp_path, monkeypatch):
    """`kind: hf` goes through the real `datasets.load_dataset` (a local folder: no network)."""
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "ds"
    data.mkdir()
    rows = [{"question": f"What is {i} + 1?", "answer": str(i + 1)} for i in range(5)]
    (data / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = list(files.read_hf(str(data), None, "train", {"prompt": "question", "reference": "answer"}, limit=3))
    assert [row_id for row_id, _ in out] == [f"{data}:train:{i}" for i in range(3)]
    assert out[0][1] == {"prompt": "What is 0 + 1?", "reference": "1"}
