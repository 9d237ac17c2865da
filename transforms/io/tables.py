"""Arrow tables (not rows) through Beam: read a stage output shard by shard, write sorted deterministic shards.

For columnar stages (assemble) whose cores work on whole tables: a Python dict per row would cost more than the
work. Output files match WriteSortedParquet's exactly: a row goes to shard stable_shard(key) and shards are sorted by
the key, so the same rows give the same bytes whichever transform wrote them.

Big tables can cross a shuffle by reference: `spill_table` writes one as an Arrow IPC file in a scratch folder and
the shuffle moves only its path (`load_table` reads it back). Beam's data plane pickles every element it shuffles,
which cost assemble more than its own work; a scratch folder must be reachable by every worker (like the output).
"""

import io
import uuid
from collections.abc import Iterable

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystems import FileSystems

from rewardmill.transforms.io.parquet import list_shards, read_table, shard_name, stable_shard, write_table


def spill_table(table: pa.Table, directory: str) -> str:
    """Write `table` as an Arrow IPC file under `directory` (a fresh unique name) and return its path."""
    buffer = io.BytesIO()
    with pa.ipc.new_file(buffer, table.schema) as writer:
        writer.write_table(table)
    path = FileSystems.join(directory, f"{uuid.uuid4().hex}.arrow")
    with FileSystems.create(path) as fh:
        fh.write(buffer.getvalue())
    return path


def load_table(path: str) -> pa.Table:
    """A table written by `spill_table`."""
    with FileSystems.open(path) as fh:
        return pa.ipc.open_file(pa.py_buffer(fh.read())).read_all()


class _ReadTable(beam.DoFn):
    def __init__(self, schema: pa.Schema | None, columns: list[str] | None):
        self.schema = schema
        self.columns = columns

    def process(self, path: str) -> Iterable[pa.Table]:
        table = read_table(path, self.schema)
        yield table.select(self.columns) if self.columns else table


class ReadStageTables(beam.PTransform):
    """One Arrow table per data shard of a stage output folder, cast to `schema`, optionally only `columns`."""

    def __init__(self, directory: str, schema: pa.Schema | None = None, columns: list[str] | None = None):
        super().__init__()
        self.directory = directory
        self.schema = schema
        self.columns = columns

    def expand(self, pbegin):
        shards = list_shards(self.directory)
        if not shards:
            raise FileNotFoundError(f"{self.directory}: no *.parquet shards; run the upstream stage first")
        return (
            pbegin
            | "List shards" >> beam.Create(shards)
            | "Read shard" >> beam.ParDo(_ReadTable(self.schema, self.columns))
        )


def sort_keys(table: pa.Table, key_columns: tuple[str, ...]) -> list[str]:
    """The per-row key WriteSortedParquet hashes to pick a shard: the key columns joined with NUL (null as empty)."""
    columns = [table.column(c).to_pylist() for c in key_columns]
    return ["\x00".join("" if v is None else str(v) for v in values) for values in zip(*columns, strict=True)]


def shard_indices(keys: list[str], num_shards: int) -> np.ndarray:
    return np.fromiter((stable_shard(k, num_shards) for k in keys), dtype=np.int64, count=len(keys))


class _SplitByShard(beam.DoFn):
    """table -> (shard index, the table's rows for that shard), or (index, path) of them spilled to `spill_dir`."""

    def __init__(self, key_columns: tuple[str, ...], num_shards: int, spill_dir: str | None = None):
        self.key_columns = key_columns
        self.num_shards = num_shards
        self.spill_dir = spill_dir

    def process(self, table: pa.Table):
        for index, part in self._parts(table):
            yield index, spill_table(part, self.spill_dir) if self.spill_dir else part

    def _parts(self, table: pa.Table) -> Iterable[tuple[int, pa.Table]]:
        if table.num_rows == 0:
            return
        if self.num_shards == 1:  # one shard: no key to hash (a Python loop over every row)
            yield 0, table
            return
        shards = shard_indices(sort_keys(table, self.key_columns), self.num_shards)
        for index in np.unique(shards):
            yield int(index), table.take(np.nonzero(shards == index)[0])


def sorted_by_key(table: pa.Table, key_columns: tuple[str, ...], where: str) -> pa.Table:
    """Rows in the order of their joined key (as WriteSortedParquet sorts them): lexicographic over the key columns
    is the same order while no key holds a NUL character. Fails on a null key or two rows sharing a key (the key
    must be an id)."""
    for name in key_columns:
        column = table.column(name)
        if column.null_count:
            raise ValueError(f"{where}: column {name!r} is part of the sort key and has {column.null_count} null(s)")
        if pa.types.is_string(column.type) and pc.any(pc.match_substring(column, "\x00")).as_py():
            raise ValueError(f"{where}: column {name!r} holds a NUL character; it cannot be part of a sort key")
    if table.group_by(list(key_columns)).aggregate([]).num_rows != table.num_rows:
        raise ValueError(f"{where}: the sort key {list(key_columns)} is not unique per row")
    order = pc.sort_indices(
        table,
        sort_keys=[(c, "ascending") for c in key_columns],
    )
    return table.take(order)


class _WriteTableShard(beam.DoFn):
    def __init__(
        self, directory: str, basename: str, num_shards: int, schema: pa.Schema, key_columns: tuple[str, ...]
    ):
        self.directory = directory
        self.basename = basename
        self.num_shards = num_shards
        self.schema = schema
        self.key_columns = key_columns

    def process(self, element):
        index, grouped = element
        name = shard_name(self.basename, index, self.num_shards)
        tables = (load_table(t) if isinstance(t, str) else t for t in grouped["tables"])
        parts = [t.select(self.schema.names).cast(self.schema) for t in tables]
        if parts:
            table = sorted_by_key(pa.concat_tables(parts), self.key_columns, f"{self.directory}/{name}")
        else:
            table = self.schema.empty_table()
        write_table(table.replace_schema_metadata(self.schema.metadata), f"{self.directory}/{name}")
        yield name, table.num_rows


class WriteSortedTables(beam.PTransform):
    """Arrow tables -> `directory/<basename>-0000i-of-0000N.parquet`, like WriteSortedParquet with sort key
    "\\x00".join(key_columns). Every shard file is written, empty ones too. Returns (shard name, rows).

    With `spill_dir`, each table's shard parts cross the shuffle as Arrow files there (see `spill_table`).
    """

    def __init__(
        self,
        directory: str,
        schema: pa.Schema,
        key_columns: tuple[str, ...],
        num_shards: int = 1,
        basename: str = "part",
        spill_dir: str | None = None,
    ):
        super().__init__()
        if num_shards < 1:
            raise ValueError("num_shards must be >= 1")
        self.directory = directory
        self.schema = schema
        self.key_columns = key_columns
        self.num_shards = num_shards
        self.basename = basename
        self.spill_dir = spill_dir

    def expand(self, tables):
        split = _SplitByShard(self.key_columns, self.num_shards, self.spill_dir)
        keyed = tables | "Split by shard" >> beam.ParDo(split)
        indices = tables.pipeline | "Shard indices" >> beam.Create([(i, None) for i in range(self.num_shards)])
        return (
            {"tables": keyed, "index": indices}
            | "Group shards" >> beam.CoGroupByKey()
            | "Write shards"
            >> beam.ParDo(
                _WriteTableShard(self.directory, self.basename, self.num_shards, self.schema, self.key_columns)
            )
        )
