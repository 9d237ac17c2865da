"""Arrow tables (not rows) through Beam: read a stage output shard by shard, write sorted deterministic shards.

For columnar stages (assemble) whose cores work on whole tables: a Python dict per row would cost more than the
work. Output files match WriteSortedParquet's exactly: a row goes to shard stable_shard(key) and shards are sorted by
the key, so the same rows give the same bytes whichever transform wrote them.

Big tables can cross a shuffle by reference: `spill_table` writes one as an Arrow IPC file in a scratch folder and
the shuffle moves only its path (`load_table` reads it back). Beam's data plane pickles every element it shuffles,
which cost assemble more than its own work; a scratch folder must be reachable by every worker (like the output).
"""

import io
import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystems import FileSystems

from rewardmill.transforms.io import storage
from rewardmill.transforms.io.parquet import list_shards, read_table, shard_name, stable_shard, write_table
from rewardmill.transforms.io.threads import ThreadedDoFn


def retain_freed_memory() -> None:
    """Let pyarrow allocate from its jemalloc pool (where the build has one; else nothing changes). Its default pool,
    mimalloc, hands freed memory back to the OS within milliseconds, so a stage that builds and drops hundreds of
    MiB of tables pays the kernel to zero the same pages again and again: about a second of CPU on assemble's
    million rollouts. Process-wide: call it once, from a stage's main()."""
    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:  # a build without jemalloc (Windows wheels)
        return
    pa.set_memory_pool(pool)


def spill_table(table: pa.Table, directory: str) -> str:
    """Write `table` as an Arrow IPC file under `directory` (a fresh unique name) and return its path.

    A local folder gets the file written in place (no copy in memory: a million-row part is hundreds of MiB); a
    store (s3://, gs://) gets it as one object."""
    path = FileSystems.join(directory, f"{uuid.uuid4().hex}.arrow")
    if not storage.is_url(directory):
        os.makedirs(directory, exist_ok=True)
        with pa.OSFile(path, "wb") as fh, pa.ipc.new_file(fh, table.schema) as writer:
            writer.write_table(table)
        return path
    buffer = io.BytesIO()
    with pa.ipc.new_file(buffer, table.schema) as writer:
        writer.write_table(table)
    with FileSystems.create(path) as fh:
        fh.write(buffer.getbuffer())
    return path


def load_table(path: str) -> pa.Table:
    """A table written by `spill_table`. A local file is memory-mapped: its columns are read where they lie, not
    copied (the scratch folder outlives every table loaded from it within a stage; an unlinked file stays mapped)."""
    if not storage.is_url(path):
        return pa.ipc.open_file(pa.memory_map(path)).read_all()
    with FileSystems.open(path) as fh:
        return pa.ipc.open_file(pa.py_buffer(fh.read())).read_all()


def stage_shards(directory: str) -> list[str]:
    """The data shards of a stage output folder; none is an error naming the folder (checked when the pipeline is
    built, before any work)."""
    shards = list_shards(directory)
    if not shards:
        raise FileNotFoundError(f"{directory}: no *.parquet shards; run the upstream stage first")
    return shards


def read_columns(path: str, schema: pa.Schema, columns: list[str]) -> pa.Table:
    """Only `columns` of one shard, cast to their types in `schema`."""
    return read_table(path, columns=columns).cast(pa.schema([schema.field(c) for c in columns]))


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
        return (
            pbegin
            | "List shards" >> beam.Create(stage_shards(self.directory))
            | "Read shard" >> beam.ParDo(_ReadTable(self.schema, self.columns))
        )


def sort_keys(table: pa.Table, key_columns: tuple[str, ...]) -> list[str]:
    """The per-row key WriteSortedParquet hashes to pick a shard: the key columns joined with NUL (null as empty)."""
    columns = [table.column(c).to_pylist() for c in key_columns]
    return ["\x00".join("" if v is None else str(v) for v in values) for values in zip(*columns, strict=True)]


def shard_indices(keys: list[str], num_shards: int) -> np.ndarray:
    return np.fromiter((stable_shard(k, num_shards) for k in keys), dtype=np.int64, count=len(keys))


@dataclass(frozen=True)
class TableSink:
    """One output folder of WriteTables: `directory/<basename>-0000i-of-0000N.parquet`, rows sorted by the key
    columns joined with NUL (each row's key must be unique: an id)."""

    directory: str
    schema: pa.Schema
    key_columns: tuple[str, ...]
    num_shards: int = 1
    basename: str = "part"

    def __post_init__(self):
        if self.num_shards < 1:
            raise ValueError(f"{self.directory}: num_shards must be >= 1")


def shard_parts(
    name: str, table: pa.Table, sinks: dict[str, TableSink], spill_dir: str | None = None
) -> Iterable[tuple[tuple[str, int], pa.Table | str]]:
    """A table for sink `name` -> ((name, shard index), its rows for that shard), or the path of those rows spilled
    to `spill_dir`: the elements WriteTables shuffles. A DoFn that makes big tables can yield these itself, so no
    table is ever an element between two steps (a runner that does not fuse them would pickle it)."""
    if table.num_rows == 0:
        return
    sink = sinks[name]
    if sink.num_shards == 1:  # one shard: no key to hash (a Python loop over every row)
        parts: Iterable[tuple[int, pa.Table]] = [(0, table)]
    else:
        shards = shard_indices(sort_keys(table, sink.key_columns), sink.num_shards)
        parts = ((int(index), table.take(np.nonzero(shards == index)[0])) for index in np.unique(shards))
    for index, part in parts:
        yield (name, index), spill_table(part, spill_dir) if spill_dir else part


def rewrite_sink(sink: TableSink, table: pa.Table) -> None:
    """Write `table` as the whole of `sink`: every shard file (empty ones too), rows sorted by key, over the old
    files (for a stage's temp output folder, which is renamed into place only when the stage is done)."""
    table = table.select(sink.schema.names).cast(sink.schema)
    shards = (
        shard_indices(sort_keys(table, sink.key_columns), sink.num_shards)
        if sink.num_shards > 1
        else np.zeros(table.num_rows, dtype=np.int64)
    )
    for index in range(sink.num_shards):
        name = shard_name(sink.basename, index, sink.num_shards)
        part = sorted_by_key(table.take(np.nonzero(shards == index)[0]), sink.key_columns, f"{sink.directory}/{name}")
        write_table(part.replace_schema_metadata(sink.schema.metadata), f"{sink.directory}/{name}")


def joined_key(table: pa.Table, key_columns: tuple[str, ...], where: str) -> pa.Array:
    """Each row's key columns joined with NUL, as one string array: its order is WriteSortedParquet's. Fails on a
    null key or a NUL inside a key value (NUL is the separator)."""
    columns = []
    for name in key_columns:
        column = table.column(name)
        if column.null_count:
            raise ValueError(f"{where}: column {name!r} is part of the sort key and has {column.null_count} null(s)")
        columns.append(column if pa.types.is_string(column.type) else pc.cast(column, pa.string()))
    key = columns[0] if len(columns) == 1 else pc.binary_join_element_wise(*columns, "\x00")
    key = key.combine_chunks() if isinstance(key, pa.ChunkedArray) else key
    separators = (len(key_columns) - 1) * len(key)
    # one column has no separator: its values are the key, NUL or not
    if separators and pc.sum(pc.count_substring(key, "\x00")).as_py() != separators:
        raise ValueError(f"{where}: a key column in {list(key_columns)} holds a NUL character (the key separator)")
    return key


def sorted_by_key(table: pa.Table, key_columns: tuple[str, ...], where: str) -> pa.Table:
    """Rows in the order of their joined key (as WriteSortedParquet sorts them). Fails on a null key, a NUL in a key
    value or two rows sharing a key (the key must be an id). Rows already in order are not moved (a take of nested
    columns costs more than the sort)."""
    key = joined_key(table, key_columns, where)
    if not _strictly_increasing(key):
        order = pc.sort_indices(key)
        table, key = table.take(order), key.take(order)
        if not _strictly_increasing(key):
            raise ValueError(f"{where}: the sort key {list(key_columns)} is not unique per row")
    return table


def _strictly_increasing(key: pa.Array) -> bool:
    return len(key) < 2 or pc.all(pc.less(key[:-1], key[1:])).as_py()


class _WriteTableShards(ThreadedDoFn):
    """((sink, shard index), {"tables": tables or spilled paths}) -> the shard file written, as (sink, shard name,
    rows). Shards are sorted and written `threads` at a time (pyarrow releases the GIL)."""

    def __init__(self, sinks: dict[str, TableSink], threads: int):
        super().__init__(threads)
        self.sinks = sinks

    def work(self, element) -> tuple[str, str, int]:
        (sink_name, index), grouped = element
        tables = [load_table(t) if isinstance(t, str) else t for t in grouped["tables"]]
        return self._write(sink_name, index, tables)

    def _write(self, sink_name: str, index: int, tables: list[pa.Table]) -> tuple[str, str, int]:
        sink = self.sinks[sink_name]
        name = shard_name(sink.basename, index, sink.num_shards)
        table = shard_table(tables, sink, f"{sink.directory}/{name}")
        write_table(table.replace_schema_metadata(sink.schema.metadata), f"{sink.directory}/{name}")
        return sink_name, name, table.num_rows


def shard_table(tables: list[pa.Table], sink: TableSink, where: str) -> pa.Table:
    """The rows of `tables` as `sink` writes a shard of them: cast to its schema, sorted by key, one chunk per column
    however the parts arrived (Parquet pages, and so the file's bytes, follow the chunks)."""
    parts = [t.select(sink.schema.names).cast(sink.schema) for t in tables]
    table = sorted_by_key(pa.concat_tables(parts), sink.key_columns, where) if parts else sink.schema.empty_table()
    return table.combine_chunks()


class WriteTables(beam.PTransform):
    """(sink name, Arrow table) -> every sink's sorted shards, like WriteSortedParquet with sort key
    "\\x00".join(key_columns). Every shard file of every sink is written, empty ones too. Returns (sink name, shard
    name, rows).

    One transform for many folders: one shuffle and one bundle of writes, which run `threads` at a time. With
    `spill_dir`, each table's shard parts cross the shuffle as Arrow files there (see `spill_table`). With
    `parts=True` the input is already `shard_parts` elements.
    """

    def __init__(
        self, sinks: dict[str, TableSink], spill_dir: str | None = None, threads: int = 2, parts: bool = False
    ):
        super().__init__()
        self.sinks = sinks
        self.spill_dir = spill_dir
        self.threads = threads
        self.parts = parts

    def expand(self, tables):
        keyed = tables
        if not self.parts:
            keyed = tables | "Split by shard" >> beam.FlatMap(
                lambda e, s, d: shard_parts(*e, s, d), self.sinks, self.spill_dir
            )
        every = [((name, i), None) for name, sink in sorted(self.sinks.items()) for i in range(sink.num_shards)]
        indices = tables.pipeline | "Shard indices" >> beam.Create(every)
        return (
            {"tables": keyed, "index": indices}
            | "Group shards" >> beam.CoGroupByKey()
            | "Write shards" >> beam.ParDo(_WriteTableShards(self.sinks, self.threads))
        )


class WriteSortedTables(beam.PTransform):
    """Arrow tables -> `directory/<basename>-0000i-of-0000N.parquet` (WriteTables with one sink). Returns (shard
    name, rows)."""

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
        self.sink = TableSink(directory, schema, key_columns, num_shards, basename)
        self.spill_dir = spill_dir

    def expand(self, tables):
        return (
            tables
            | "To sink" >> beam.Map(lambda table: ("out", table))
            | "Write" >> WriteTables({"out": self.sink}, self.spill_dir)
            | "Shard rows" >> beam.Map(lambda written: written[1:])
        )
