"""Records from local JSONL / Parquet files and from `datasets` ids or paths, with a column mapping.

`columns` maps prompt-schema names to the file's names, e.g. {prompt: question, reference: answer}.
Each yield is (row_id, record) or (row_id, RecordError) so a bad line is rejected, not fatal.
"""

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from rewardmill.transforms.sources.normalize import RecordError

MAPPABLE = ("prompt", "messages", "reference", "tests", "rubric", "constraints", "task", "metadata")


def map_columns(raw: dict[str, Any], columns: Mapping[str, str]) -> dict[str, Any]:
    unknown = sorted(set(columns) - set(MAPPABLE))
    if unknown:
        raise ValueError(f"column mapping names unknown prompt fields {unknown}; allowed: {list(MAPPABLE)}")
    record = {key: raw.get(name) for key, name in columns.items()}
    for key in MAPPABLE:  # unmapped fields keep their own name when the file has them
        if key not in columns and key in raw:
            record[key] = raw[key]
    missing = [f"{key}<-{name}" for key, name in columns.items() if name not in raw]
    if missing:
        raise RecordError("missing_column", f"mapped column(s) not in row: {missing}")
    return record


def read_file(path: str, columns: Mapping[str, str]) -> Iterator[tuple[str, dict[str, Any] | RecordError]]:
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{path}: prompt source file not found")
    if p.suffix in (".jsonl", ".json"):
        with p.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                row_id = f"{path}:{lineno}"
                if not line.strip():
                    continue
                try:
                    raw = json.loads(line)
                except json.JSONDecodeError as exc:
                    yield row_id, RecordError("bad_json", str(exc))
                    continue
                if not isinstance(raw, dict):
                    yield row_id, RecordError("bad_json", "line is not a JSON object")
                    continue
                yield row_id, _mapped(raw, columns)
    elif p.suffix == ".parquet":
        import pyarrow.parquet as pq

        for i, raw in enumerate(pq.read_table(p).to_pylist()):
            yield f"{path}:{i}", _mapped(raw, columns)
    else:
        raise ValueError(f"{path}: unsupported prompt file type '{p.suffix}' (use .jsonl or .parquet)")


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
