"""Table-level Beam IO writes the same files as the row-level writer, for the same rows."""

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to

from rewardmill.schemas import REJECT_V1
from rewardmill.transforms.io.parquet import WriteSortedParquet, read_rows, write_table
from rewardmill.transforms.io.tables import (
    ReadStageTables,
    TableSink,
    WriteSortedTables,
    WriteTables,
    load_table,
    retain_freed_memory,
    shard_table,
    sorted_by_key,
    spill_table,
)

ROWS = [
    {"stage": "s", "row_id": f"id{i:02d}é", "reason": ["a", "b"][i % 2], "detail": f"d{i}", "payload": None}
    for i in range(23)
]
KEY = ("row_id", "reason", "stage")


def run(build):
    with beam.Pipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
        build(p)


@pytest.mark.parametrize("num_shards", [1, 3])
def test_same_bytes_as_the_row_writer(tmp_path, num_shards):
    tables = [pa.Table.from_pylist(ROWS[:10], REJECT_V1), pa.Table.from_pylist(ROWS[10:], REJECT_V1)]
    run(lambda p: p | beam.Create(tables[::-1]) | WriteSortedTables(str(tmp_path / "t"), REJECT_V1, KEY, num_shards))
    run(
        lambda p: (
            p
            | beam.Create(ROWS)
            | WriteSortedParquet(
                str(tmp_path / "r"), REJECT_V1, lambda r: f"{r['row_id']}\x00{r['reason']}\x00{r['stage']}", num_shards
            )
        )
    )
    names = sorted(f.name for f in (tmp_path / "r").iterdir())
    assert names == sorted(f.name for f in (tmp_path / "t").iterdir()) and len(names) == num_shards
    for name in names:
        assert (tmp_path / "t" / name).read_bytes() == (tmp_path / "r" / name).read_bytes()
    assert pq.read_schema(tmp_path / "t" / names[0]).metadata == REJECT_V1.metadata


def test_spilled_table_round_trips_with_its_schema(tmp_path):
    table = pa.Table.from_pylist(ROWS, REJECT_V1)
    first, second = (
        spill_table(table, str(tmp_path / "new" / "dir")),
        spill_table(table, str(tmp_path / "new" / "dir")),
    )
    assert first != second  # every spill gets its own file: a retried bundle never overwrites another's part
    loaded = load_table(first)
    assert loaded.equals(table) and loaded.schema.equals(REJECT_V1, check_metadata=True)


@pytest.mark.parametrize("num_shards", [1, 3])
def test_spilling_through_the_shuffle_writes_the_same_bytes(tmp_path, num_shards):
    """Only paths cross the shuffle; the shard files are those of the in-memory route."""
    tables = [pa.Table.from_pylist(ROWS[:10], REJECT_V1), pa.Table.from_pylist(ROWS[10:], REJECT_V1)]
    run(lambda p: p | beam.Create(tables) | WriteSortedTables(str(tmp_path / "m"), REJECT_V1, KEY, num_shards))
    spill = tmp_path / "scratch"
    run(
        lambda p: (
            p
            | beam.Create(tables[::-1])
            | WriteSortedTables(str(tmp_path / "s"), REJECT_V1, KEY, num_shards, spill_dir=str(spill))
        )
    )
    names = sorted(f.name for f in (tmp_path / "m").iterdir())
    assert names == sorted(f.name for f in (tmp_path / "s").iterdir())
    for name in names:
        assert (tmp_path / "s" / name).read_bytes() == (tmp_path / "m" / name).read_bytes()
    assert len(list(spill.glob("*.arrow"))) == (2 if num_shards == 1 else 2 * num_shards)  # one per table and shard


def test_empty_input_still_writes_every_shard(tmp_path):
    run(lambda p: p | beam.Create([REJECT_V1.empty_table()]) | WriteSortedTables(str(tmp_path), REJECT_V1, KEY, 2))
    assert read_rows(str(tmp_path)) == [] and len(list(tmp_path.glob("*.parquet"))) == 2


@pytest.mark.parametrize(
    "rows, message",
    [
        ([ROWS[0], ROWS[0]], "not unique"),  # a key must be an id
        ([{**ROWS[0], "row_id": None}], "null"),  # a null key has no place in the row writer's order
        ([{**ROWS[0], "row_id": "a\x00b"}], "NUL"),  # NUL is the key separator
    ],
)
def test_bad_keys_fail(tmp_path, rows, message):
    table = pa.Table.from_pylist(rows, REJECT_V1)
    with pytest.raises(Exception, match=message):
        run(lambda p: p | beam.Create([table]) | WriteSortedTables(str(tmp_path), REJECT_V1, KEY))


def test_read_tables_selects_columns(tmp_path):
    run(
        lambda p: (
            p
            | beam.Create([pa.Table.from_pylist(ROWS, REJECT_V1)])
            | WriteSortedTables(str(tmp_path), REJECT_V1, KEY, 2)
        )
    )

    def check(p):
        ids = (
            p
            | ReadStageTables(str(tmp_path), REJECT_V1, ["row_id"])
            | beam.FlatMap(lambda t: t.column("row_id").to_pylist())
        )
        assert_that(ids, equal_to([r["row_id"] for r in ROWS]))

    run(check)


def test_one_write_serves_several_sinks(tmp_path):
    """Tables for two folders through one WriteTables: each folder gets the files its own writer would."""
    first, second = pa.Table.from_pylist(ROWS[:10], REJECT_V1), pa.Table.from_pylist(ROWS[10:], REJECT_V1)
    sinks = {
        "a": TableSink(str(tmp_path / "a"), REJECT_V1, KEY),
        "b": TableSink(str(tmp_path / "b"), REJECT_V1, KEY, num_shards=3),
        "empty": TableSink(str(tmp_path / "empty"), REJECT_V1, KEY, num_shards=2),
    }
    run(lambda p: p | beam.Create([("b", second), ("a", first), ("b", first)]) | WriteTables(sinks))
    run(lambda p: p | beam.Create([first]) | WriteSortedTables(str(tmp_path / "a1"), REJECT_V1, KEY))
    run(lambda p: p | beam.Create([first, second]) | WriteSortedTables(str(tmp_path / "b1"), REJECT_V1, KEY, 3))
    for folder, alone in (("a", "a1"), ("b", "b1")):
        names = sorted(f.name for f in (tmp_path / folder).iterdir())
        assert names == sorted(f.name for f in (tmp_path / alone).iterdir())
        for name in names:
            assert (tmp_path / folder / name).read_bytes() == (tmp_path / alone / name).read_bytes()
    assert len(list((tmp_path / "empty").glob("*.parquet"))) == 2 and read_rows(str(tmp_path / "empty")) == []


@pytest.mark.parametrize("order", ["sorted", "reversed"])
def test_sorted_by_key_keeps_sorted_rows_and_sorts_others(order):
    table = pa.Table.from_pylist(ROWS, REJECT_V1)  # ROWS are in key order
    given = table if order == "sorted" else table.take(list(range(table.num_rows))[::-1])
    assert sorted_by_key(given, KEY, "here").equals(table)


def test_sorted_by_key_finds_a_repeated_key_in_sorted_rows():
    table = pa.Table.from_pylist([ROWS[0], ROWS[0], ROWS[1]], REJECT_V1)
    with pytest.raises(ValueError, match="here: the sort key .* is not unique"):
        sorted_by_key(table, KEY, "here")


def test_a_one_column_key_may_hold_a_nul(tmp_path):
    """NUL separates key columns; a key of one column has no separator, so its values sort as the row writer's."""
    rows = [{**r, "row_id": f"a\x00{i:02d}" if i % 2 else f"a{i:02d}"} for i, r in enumerate(ROWS)]
    run(
        lambda p: (
            p
            | beam.Create([pa.Table.from_pylist(rows, REJECT_V1)])
            | WriteSortedTables(str(tmp_path / "t"), REJECT_V1, ("row_id",))
        )
    )
    run(lambda p: p | beam.Create(rows) | WriteSortedParquet(str(tmp_path / "r"), REJECT_V1, lambda r: r["row_id"]))
    name = "part-00000-of-00001.parquet"
    assert (tmp_path / "t" / name).read_bytes() == (tmp_path / "r" / name).read_bytes()


def test_parts_in_order_give_the_bytes_of_one_table(tmp_path):
    """Parquet pages follow the chunks of the table written: parts that arrive already in key order (so nothing is
    sorted) are still written as one chunk per column, the bytes of the whole table at once."""
    n = 60_000
    table = pa.table(
        {
            "stage": ["s"] * n,
            "row_id": [f"id{i:06d}" for i in range(n)],
            "reason": ["a", "b", "c"] * (n // 3),
            "detail": [f"{i * 7919 % 10007}" * (i % 40) for i in range(n)],  # MiBs of text: several pages
            "payload": pa.nulls(n, pa.string()),
        }
    ).cast(REJECT_V1)
    sink = TableSink(str(tmp_path), REJECT_V1, ("row_id",))
    parts = [table.slice(0, 777), table.slice(777, 30_000), table.slice(30_777)]  # in key order: no sort, no take
    joined = shard_table(parts, sink, "here")
    assert joined.column("detail").num_chunks == 1
    write_table(joined, str(tmp_path / "parts.parquet"))
    write_table(shard_table([table], sink, "here"), str(tmp_path / "one.parquet"))
    assert (tmp_path / "parts.parquet").read_bytes() == (tmp_path / "one.parquet").read_bytes()


def test_retain_freed_memory_makes_jemalloc_the_default_pool():
    before = pa.default_memory_pool()
    try:
        retain_freed_memory()
        try:
            pa.jemalloc_memory_pool()
        except NotImplementedError:  # a pyarrow built without jemalloc keeps its pool
            assert pa.default_memory_pool().backend_name == before.backend_name
        else:
            assert pa.default_memory_pool().backend_name == "jemalloc"
    finally:
        pa.set_memory_pool(before)
