"""polars frames in and out: Parquet shards read straight into frames, frames spilled across a shuffle, and frames
handed out as Arrow tables of a schema (the one way every columnar core hands its results out).

Columnar stages read their inputs with polars' own Parquet reader: pyarrow's reader followed by the conversion to
polars' string views took 4x as long on assemble's rollouts. Frames cross a shuffle as polars IPC files
(`spill_frame`, `load_frame`), read back without a conversion; the same scratch rules as
transforms/io/tables.spill_table apply.
"""

import io
import os
import uuid
from functools import cache

import polars as pl
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from rewardmill.transforms.io import storage


def frame_to_table(frame: pl.DataFrame, schema: pa.Schema | None = None) -> pa.Table:
    """`frame` as an Arrow table cast to `schema` (when given).

    Exported at polars' oldest compat level (large_string, large_list): casting those to the schemas' string and
    list types moves offsets only, where the newer string views are copied value by value (3x slower on pairs).
    """
    table = frame.to_arrow(compat_level=pl.CompatLevel.oldest())
    return table.cast(schema) if schema is not None else table


@cache
def _dtypes(schema: pa.Schema, columns: tuple[str, ...]) -> pl.Schema:
    frame = pl.from_arrow(pa.schema([schema.field(c) for c in columns]).empty_table())
    assert isinstance(frame, pl.DataFrame)
    return frame.schema


def empty_frame(schema: pa.Schema, columns: list[str] | tuple[str, ...]) -> pl.DataFrame:
    """No rows, `columns` of their types in `schema`."""
    return pl.DataFrame(schema=_dtypes(schema, tuple(columns)))


def read_frame(path: str, schema: pa.Schema, columns: list[str] | tuple[str, ...]) -> pl.DataFrame:
    """Only `columns` of one Parquet shard (a local path or a FileSystems URL), cast to their types in `schema`."""
    source = path if not storage.is_url(path) else io.BytesIO(storage.read_bytes(path))
    # a path is one file: no glob, no hive partitions read from its folder names
    frame = pl.read_parquet(source, columns=list(columns), glob=False, hive_partitioning=False)
    return frame.cast(dict(_dtypes(schema, tuple(columns))))


def spill_frame(frame: pl.DataFrame, directory: str) -> str:
    """Write `frame` as a polars IPC file under `directory` (a fresh unique name) and return its path."""
    path = FileSystems.join(directory, f"{uuid.uuid4().hex}.ipc")
    if not storage.is_url(directory):
        os.makedirs(directory, exist_ok=True)
        frame.write_ipc(path)
        return path
    buffer = io.BytesIO()
    frame.write_ipc(buffer)
    with FileSystems.create(path) as fh:
        fh.write(buffer.getbuffer())
    return path


def load_frame(path: str) -> pl.DataFrame:
    """A frame written by `spill_frame`."""
    return pl.read_ipc(path if not storage.is_url(path) else io.BytesIO(storage.read_bytes(path)))
