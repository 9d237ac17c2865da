"""polars frames in and out: Parquet shards read into frames of a schema's types, frames across a shuffle."""

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from rewardmill.schemas import REJECT_V1
from rewardmill.transforms.io.frames import empty_frame, frame_to_table, load_frame, read_frame, spill_frame

SCHEMA = pa.schema([pa.field("id", pa.string()), pa.field("n", pa.int32()), pa.field("tags", pa.list_(pa.string()))])


def test_read_frame_reads_the_columns_asked_for_in_the_schemas_types(tmp_path):
    written = pa.table({"id": ["a", "b"], "n": pa.array([1, 2], pa.int64()), "tags": [["x"], []], "extra": [1, 2]})
    pq.write_table(written, tmp_path / "part.parquet")  # n written as int64: the schema says int32
    frame = read_frame(str(tmp_path / "part.parquet"), SCHEMA, ["n", "id"])
    assert frame.columns == ["n", "id"] and frame.schema["n"] == pl.Int32
    assert frame.rows() == [(1, "a"), (2, "b")]


def test_read_frame_of_an_empty_shard(tmp_path):
    pq.write_table(SCHEMA.empty_table(), tmp_path / "part.parquet")
    frame = read_frame(str(tmp_path / "part.parquet"), SCHEMA, ["id", "tags"])
    assert frame.height == 0 and frame.schema == empty_frame(SCHEMA, ["id", "tags"]).schema


def test_a_spilled_frame_round_trips(tmp_path):
    frame = pl.DataFrame(
        {
            "stage": ["s", "s"],
            "row_id": ["a", "é"],
            "reason": ["r", "q"],
            "detail": [None, "d"],
            "payload": [None, None],
        },
        schema=empty_frame(REJECT_V1, REJECT_V1.names).schema,
    )
    first, second = spill_frame(frame, str(tmp_path / "new")), spill_frame(frame, str(tmp_path / "new"))
    assert first != second  # every spill gets its own file: a retried bundle never overwrites another's part
    loaded = load_frame(first)
    assert loaded.equals(frame)
    assert frame_to_table(loaded, REJECT_V1).equals(frame_to_table(frame, REJECT_V1))
