"""Parquet in and out of Beam with explicit schemas and deterministic, sorted shards.

Same rows in => same bytes out: rows are assigned to a fixed number of shards by a stable hash of their sort key,
sorted inside each shard, and every shard file is written (empty ones too) under a deterministic name.
"""

import hashlib
import io
from collections.abc import Callable, Iterable
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from rewardmill.transforms.io import storage, timings

PARQUET_OPTIONS = {"compression": "zstd", "write_statistics": True}


def shard_name(basename: str, index: int, num_shards: int) -> str:
    return f"{basename}-{index:05d}-of-{num_shards:05d}.parquet"


def stable_shard(key: str, num_shards: int) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % num_shards


def rows_to_table(rows: list[dict[str, Any]], schema: pa.Schema, where: str = "") -> pa.Table:
    """Build a table strictly against `schema`: a missing or extra column is an error, not a silent drop."""
    names = set(schema.names)
    for i, row in enumerate(rows):
        extra, missing = set(row) - names, names - set(row)
        if extra or missing:
            raise ValueError(
                f"{where} row {i}: columns do not match schema: extra={sorted(extra)} missing={sorted(missing)}"
            )
    return pa.Table.from_pylist(rows, schema=schema)


def write_table(table: pa.Table, path: str) -> None:
    """Write through Beam's FileSystems so the same code writes to local disk, GCS or S3."""
    with timings.timed("parquet"):
        buffer = io.BytesIO()
        pq.write_table(table, buffer, **PARQUET_OPTIONS)
        with FileSystems.create(path) as fh:
            fh.write(buffer.getvalue())


def read_table(path: str, schema: pa.Schema | None = None, columns: list[str] | None = None) -> pa.Table:
    """One Parquet file (local, GCS, S3), cast to `schema` when given; `columns` reads only those."""
    with timings.timed("parquet"):
        return _read_table(path, schema, columns)


def _read_table(path: str, schema: pa.Schema | None, columns: list[str] | None) -> pa.Table:
    with FileSystems.open(path) as fh:
        data = io.BytesIO(fh.read())
    parquet = pq.ParquetFile(data)
    if parquet.metadata.num_rows == 0:
        # pyarrow 25 aborts the interpreter at exit after a threaded read of an empty file with nested
        # columns ("terminate called without an active exception"); an empty shard needs no reading.
        table = parquet.schema_arrow.empty_table()
        table = table.select(columns) if columns is not None else table
    else:
        table = parquet.read(columns=columns)
    if schema is not None:
        table = table.select(schema.names).cast(schema)
    return table


def list_shards(directory: str) -> list[str]:
    """Data shards of a stage output folder, sorted; `_rejects/` and `_manifest.json` are not data."""
    return storage.matching(directory, "*.parquet")


def read_rows(directory: str, schema: pa.Schema | None = None) -> list[dict[str, Any]]:
    """All rows of a stage output folder in a plain list (small inputs, tests, and the driver side)."""
    rows: list[dict[str, Any]] = []
    for path in list_shards(directory):
        rows.extend(read_table(path, schema).to_pylist())
    return rows


class _ReadShard(beam.DoFn):
    def __init__(self, schema: pa.Schema | None):
        self.schema = schema

    def process(self, path: str) -> Iterable[dict[str, Any]]:
        yield from read_table(path, self.schema).to_pylist()


class ReadStageOutput(beam.PTransform):
    """Rows of every data shard in a stage output folder, cast to `schema` (checks the contract on read)."""

    def __init__(self, directory: str, schema: pa.Schema | None = None):
        super().__init__()
        self.directory = directory
        self.schema = schema

    def expand(self, pbegin):
        shards = list_shards(self.directory)
        if not shards:
            raise FileNotFoundError(f"{self.directory}: no *.parquet shards; run the upstream stage first")
        return pbegin | "List shards" >> beam.Create(shards) | "Read shard" >> beam.ParDo(_ReadShard(self.schema))


class _WriteShard(beam.DoFn):
    def __init__(self, directory: str, basename: str, num_shards: int, schema: pa.Schema, sort_key: Callable):
        self.directory = directory
        self.basename = basename
        self.num_shards = num_shards
        self.schema = schema
        self.sort_key = sort_key

    def process(self, element):
        index, grouped = element
        rows = sorted(grouped["rows"], key=self.sort_key)
        name = shard_name(self.basename, index, self.num_shards)
        table = rows_to_table(rows, self.schema, where=name)
        write_table(table, FileSystems.join(self.directory, name))
        yield name, len(rows)


class WriteSortedParquet(beam.PTransform):
    """Write rows to `directory/<basename>-0000i-of-0000N.parquet`, deterministic for the same set of rows.

    `sort_key(row)` must be unique per row (an id): it decides both the shard and the order inside it.
    Returns a PCollection of (shard name, row count).
    """

    def __init__(
        self,
        directory: str,
        schema: pa.Schema,
        sort_key: Callable[[dict[str, Any]], str],
        num_shards: int = 1,
        basename: str = "part",
    ):
        super().__init__()
        if num_shards < 1:
            raise ValueError("num_shards must be >= 1")
        self.directory = directory
        self.schema = schema
        self.sort_key = sort_key
        self.num_shards = num_shards
        self.basename = basename

    def expand(self, rows):
        num_shards, sort_key = self.num_shards, self.sort_key
        keyed = rows | "Key by shard" >> beam.Map(lambda row: (stable_shard(sort_key(row), num_shards), row))
        # Every shard index appears, so empty shards are still written and names never depend on the data.
        indices = rows.pipeline | "Shard indices" >> beam.Create([(i, None) for i in range(num_shards)])
        return (
            {"rows": keyed, "index": indices}
            | "Group shards" >> beam.CoGroupByKey()
            | "Write shards"
            >> beam.ParDo(_WriteShard(self.directory, self.basename, num_shards, self.schema, sort_key))
        )
