"""Records from local JSONL / Parquet files and from `datasets` ids or paths, with a column mapping.

`columns` maps prompt-schema names to the file's names, e.g. {prompt: question, reference: answer}.
Each yield is (row_id, record) or (row_id, RecordError) so a bad line is rejected, not fatal: a line that is not JSON,
or whose bytes are not UTF-8 (`not_utf8`, naming the file, line and byte), is one reject and the other rows go on. A
file that cannot be read at all (missing, a folder, a suffix no reader takes) is a SourceFileError before any row.
"""

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from rewardmill.transforms.errors import UserError
from rewardmill.transforms.sources.normalize import RecordError

SUFFIXES = (".jsonl", ".json", ".parquet")  # .json is read as JSON Lines too: one object per line
NOT_UTF8 = "not_utf8"


class SourceFileError(UserError, ValueError):
    """A prompt file no reader can open: the message names the path and what to do."""


MAPPABLE = ("prompt", "messages", "reference", "tests", "rubric", "constraints", "task", "metadata")


def check_mapping(columns: Mapping[str, str]) -> None:
    unknown = sorted(set(columns) - set(MAPPABLE))
    if unknown:
        raise ValueError(f"column mapping names unknown prompt fields {unknown}; allowed: {list(MAPPABLE)}")


def check_file(path: str) -> None:
    """The file exists and has a suffix a reader takes; FileNotFoundError / SourceFileError otherwise."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{path}: prompt source file not found")
    if p.is_dir():
        raise SourceFileError(f"{path}: a folder, not a prompt file (name one {'/'.join(SUFFIXES)} file)")
    if p.suffix not in SUFFIXES:
        raise SourceFileError(
            f"{path}: unsupported prompt file type '{p.suffix}' (use .jsonl or .parquet; for a CSV file, convert it: "
            "python -c \"import pandas as p; p.read_csv('f.csv').to_parquet('f.parquet')\")"
        )


def map_columns(raw: dict[str, Any], columns: Mapping[str, str]) -> dict[str, Any]:
    check_mapping(columns)
    record = {key: raw.get(name) for key, name in columns.items()}
    for key in MAPPABLE:  # unmapped fields keep their own name when the file has them
        if key not in columns and key in raw:
            record[key] = raw[key]
    missing = [f"{key}<-{name}" for key, name in columns.items() if name not in raw]
    if missing:
        raise RecordError("missing_column", f"mapped column(s) not in row: {missing}")
    return record


def read_file(path: str, columns: Mapping[str, str]) -> Iterator[tuple[str, dict[str, Any] | RecordError]]:
    check_file(path)
    if Path(path).suffix == ".parquet":
        yield from _parquet_rows(path, columns)
    else:
        yield from _jsonl_rows(path, columns)


def _jsonl_rows(path: str, columns: Mapping[str, str]) -> Iterator[tuple[str, dict[str, Any] | RecordError]]:
    for lineno, raw in jsonl_objects(path):
        yield f"{path}:{lineno}", raw if isinstance(raw, RecordError) else _mapped(raw, columns)


def jsonl_objects(path: str) -> Iterator[tuple[int, dict[str, Any] | RecordError]]:
    """(line number, the line's JSON object) per non-blank line; a line that is not UTF-8, not JSON or not an object
    is (line number, RecordError)."""
    with Path(path).open("rb") as fh:  # bytes: one line that is not UTF-8 is that row's reject, not the file's
        for lineno, data in enumerate(fh, start=1):
            try:
                line = data.decode("utf-8-sig" if lineno == 1 else "utf-8")  # a leading BOM is not part of the row
            except UnicodeDecodeError as exc:
                yield lineno, _not_utf8(f"{path} line {lineno}", data, exc)
                continue
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                yield lineno, RecordError("bad_json", f"line {lineno}: {exc}")
                continue
            yield (
                lineno,
                raw if isinstance(raw, dict) else RecordError("bad_json", f"line {lineno}: not a JSON object"),
            )


def _parquet_rows(path: str, columns: Mapping[str, str]) -> Iterator[tuple[str, dict[str, Any] | RecordError]]:
    """Parquet does not check that a string column holds UTF-8; pyarrow fails the whole batch on converting one bad
    value, so such a batch is converted row by row and only the bad rows are rejected."""
    import pyarrow.parquet as pq

    i = 0
    for batch in pq.ParquetFile(path).iter_batches():
        try:
            rows = batch.to_pylist()
        except UnicodeDecodeError:
            rows = [_parquet_row(path, i + j, batch.slice(j, 1)) for j in range(batch.num_rows)]
        for raw in rows:
            yield f"{path}:{i}", raw if isinstance(raw, RecordError) else _mapped(raw, columns)
            i += 1


def _parquet_row(path: str, index: int, row) -> dict[str, Any] | RecordError:
    try:
        return row.to_pylist()[0]
    except UnicodeDecodeError as exc:
        bad = next(n for n in row.column_names if not _decodes(row.column(n)))
        value = row.column(bad).cast("binary")[0].as_py()
        return _not_utf8(f"{path} row {index} column {bad!r}", value, exc)


def _decodes(column) -> bool:
    try:
        column.to_pylist()
    except UnicodeDecodeError:
        return False
    return True


def _not_utf8(where: str, data: bytes, exc: UnicodeDecodeError) -> RecordError:
    """`not_utf8` naming the row and the first bad byte; latin-1 or cp1252 files are the usual cause."""
    column = exc.start + 1
    return RecordError(
        NOT_UTF8,
        f"{where}: byte 0x{data[exc.start]:02x} at position {column} is not UTF-8 ({exc.reason}); save the text as "
        "UTF-8 (a latin-1 file: iconv -f latin1 -t utf-8)",
    )


def read_hf(dataset: str, config: str | None, split: str, columns: Mapping[str, str], limit: int | None):
    """A `datasets` id or local path; ids need network, local folders and saved datasets do not."""
    import datasets

    ds = datasets.load_dataset(dataset, config, split=split)
    for i, raw in enumerate(ds):
        if limit is not None and i >= limit:
            break
        yield f"{dataset}:{split}:{i}", _mapped(raw, columns)


def _mapped(raw: dict[str, Any], columns: Mapping[str, str]) -> dict[str, Any] | RecordError:
    try:
        return map_columns(raw, columns)
    except RecordError as exc:
        return exc
