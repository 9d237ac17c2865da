"""transforms/io/parquet.py: explicit schemas, deterministic sorted shards, strict columns, reads that check."""

import pickle
import random

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to

from rewardmill.schemas import PROMPT_V1, REJECT_V1
from rewardmill.schemas.common import schema_id
from rewardmill.transforms.io.parquet import (
    ReadStageOutput,
    WriteSortedParquet,
    _ReadShard,
    _WriteShard,
    list_shards,
    read_rows,
    read_table,
    rows_to_table,
    shard_name,
    stable_shard,
    write_table,
)


def pipeline() -> test_pipeline.TestPipeline:
    # The plain DirectRunner wants to download Prism; FnApiRunner runs in process and offline.
    return test_pipeline.TestPipeline(options=PipelineOptions(["--runner=FnApiRunner"]))


def reject_row(i: int) -> dict:
    return {"stage": "test", "row_id": f"r{i:03d}", "reason": "bad", "detail": f"detail {i}", "payload": None}


def prompt_row(i: int) -> dict:
    return {
        "prompt_id": f"p{i:03d}",
        "source": "unit",
        "task": "math",
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": f"What is {i} + 1?"}],
        "reference": str(i + 1),
        "tests": None,
        "rubric": [{"criterion": "correct", "weight": 1.0}] if i % 2 else None,
        "constraints": None,
        "split": "train",
        "metadata": f'{{"i": {i}}}',
    }


def row_key(row: dict) -> str:
    return row["row_id"]


def prompt_key(row: dict) -> str:
    return row["prompt_id"]


# --- pure helpers ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "basename, index, num_shards, expected",
    [
        # the first of one shard
        ("part", 0, 1, "part-00000-of-00001.parquet"),
        # zero-padded index and count
        ("pairs", 11, 12, "pairs-00011-of-00012.parquet"),
    ],
)
def test_shard_name(basename, index, num_shards, expected):
    assert shard_name(basename, index, num_shards) == expected


def test_stable_shard_is_a_pure_function_of_the_key():
    keys = [f"k{i}" for i in range(200)]
    first = [stable_shard(k, 7) for k in keys]
    assert first == [stable_shard(k, 7) for k in keys]
    assert set(first) == set(range(7))  # 200 keys reach every one of 7 shards
    assert all(stable_shard(k, 1) == 0 for k in keys)


@pytest.mark.parametrize(
    "row, fragments",
    [
        # an extra column is an error, not a silent drop
        ({**reject_row(0), "bogus": 1}, ["where.parquet row 0", "extra=['bogus']", "missing=[]"]),
        # a missing column is an error, not a silent null
        ({k: v for k, v in reject_row(0).items() if k != "detail"}, ["row 0", "extra=[]", "missing=['detail']"]),
        # both at once are both reported
        (
            {**{k: v for k, v in reject_row(0).items() if k != "reason"}, "reasn": "x"},
            ["extra=['reasn']", "missing=['reason']"],
        ),
    ],
)
def test_rows_to_table_rejects_column_mismatch(row, fragments):
    with pytest.raises(ValueError) as info:
        rows_to_table([row, reject_row(1)], REJECT_V1, where="where.parquet")
    for fragment in fragments:
        assert fragment in str(info.value)


def test_rows_to_table_names_the_bad_row_index():
    with pytest.raises(ValueError, match=r"shard row 2: "):
        rows_to_table([reject_row(0), reject_row(1), {"stage": "x"}], REJECT_V1, where="shard")


def test_rows_to_table_keeps_schema_and_metadata():
    table = rows_to_table([prompt_row(0)], PROMPT_V1)
    assert table.schema.equals(PROMPT_V1, check_metadata=True)


def test_rows_to_table_empty():
    table = rows_to_table([], REJECT_V1)
    assert table.num_rows == 0 and table.schema.equals(REJECT_V1, check_metadata=True)


@pytest.mark.parametrize(
    "column, error",
    [
        # a null in a top-level non-nullable column fails the write
        ("reason", "Column 'reason' is declared non-nullable but contains nulls"),
        # a null in a nullable column is fine
        ("detail", None),
    ],
)
def test_write_table_nulls(tmp_path, column, error):
    # from_pylist does not check nullability; the Parquet writer does, so a null never lands in a required column
    table = rows_to_table([{**reject_row(0), column: None}], REJECT_V1)
    path = str(tmp_path / "x.parquet")
    if error is None:
        write_table(table, path)
        assert read_table(path, REJECT_V1).to_pylist()[0][column] is None
    else:
        with pytest.raises(pa.ArrowInvalid, match=error):
            write_table(table, path)


def test_write_sorted_parquet_rejects_zero_shards(tmp_path):
    with pytest.raises(ValueError, match="num_shards"):
        WriteSortedParquet(str(tmp_path), REJECT_V1, sort_key=row_key, num_shards=0)


def test_dofns_pickle():
    # Everything shipped to workers pickles.
    write_fn = pickle.loads(pickle.dumps(_WriteShard("d", "part", 2, REJECT_V1, row_key)))
    assert write_fn.schema.equals(REJECT_V1, check_metadata=True) and write_fn.sort_key is row_key
    read_fn = pickle.loads(pickle.dumps(_ReadShard(PROMPT_V1)))
    assert read_fn.schema.equals(PROMPT_V1, check_metadata=True)


# --- WriteSortedParquet in a real pipeline ----------------------------------------------------------------------

# name -> (rows, schema, sort key, num_shards, basename); all written by one pipeline (each run costs ~1 s).
ROWS = [reject_row(i) for i in range(40)]
SHUFFLED = random.Random(0).sample(ROWS, len(ROWS))
PROMPTS = [prompt_row(i) for i in range(5)]
OUTPUTS = {
    # no rows at all: every shard is still written, empty
    "none": ([], REJECT_V1, row_key, 3, "part"),
    # fewer rows than shards: some shards are empty
    "one": ([reject_row(0)], REJECT_V1, row_key, 3, "part"),
    # many rows in reverse order over several shards
    "reversed": (ROWS[::-1], REJECT_V1, row_key, 3, "part"),
    # the same rows in a shuffled order
    "shuffled": (SHUFFLED, REJECT_V1, row_key, 3, "part"),
    # nested types (messages, rubric), one shard holding everything, another basename
    "prompts": (PROMPTS, PROMPT_V1, prompt_key, 1, "prompts"),
}


def expected_counts(rows, key, num_shards, basename):
    return [
        (shard_name(basename, s, num_shards), sum(stable_shard(key(r), num_shards) == s for r in rows))
        for s in range(num_shards)
    ]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """name -> output folder, for every case in OUTPUTS; the (shard, count) outputs are asserted in the pipeline."""
    root = tmp_path_factory.mktemp("written")
    with pipeline() as p:
        counts, expected = [], []
        for name, (rows, schema, key, num_shards, basename) in OUTPUTS.items():
            written_counts = (
                p
                | f"Create {name}" >> beam.Create(rows)
                | f"Write {name}" >> WriteSortedParquet(str(root / name), schema, key, num_shards, basename)
            )
            counts.append(written_counts | f"Tag {name}" >> beam.Map(lambda count, name=name: (name, *count)))
            expected += [(name, *count) for count in expected_counts(rows, key, num_shards, basename)]
        # One assert_that for all outputs: each one adds about a second to the FnApiRunner run.
        assert_that(tuple(counts) | "All counts" >> beam.Flatten(), equal_to(expected))
    return {name: root / name for name in OUTPUTS}


@pytest.mark.parametrize("name", ["none", "one", "reversed", "prompts"])
def test_writes_every_shard_with_deterministic_names(written, name):
    rows, schema, key, num_shards, basename = OUTPUTS[name]
    names = sorted(p.name for p in written[name].iterdir())
    assert names == [shard_name(basename, s, num_shards) for s in range(num_shards)]
    for shard, count in expected_counts(rows, key, num_shards, basename):
        table = pq.read_table(written[name] / shard)
        assert table.num_rows == count
        assert table.schema.equals(schema)  # empty shards carry the schema too
        assert table.schema.metadata == schema.metadata


def test_some_shards_are_empty(written):
    assert sorted(pq.read_metadata(p).num_rows for p in written["one"].iterdir()) == [0, 0, 1]


def test_rows_sorted_within_each_shard(written):
    seen = []
    for path in sorted(written["reversed"].iterdir()):
        ids = pq.read_table(path).column("row_id").to_pylist()
        assert ids == sorted(ids)
        assert all(stable_shard(i, 3) == int(path.name.split("-")[1]) for i in ids)
        seen.extend(ids)
    assert sorted(seen) == [r["row_id"] for r in ROWS]


def test_same_rows_any_order_same_bytes(written):
    names = sorted(p.name for p in written["reversed"].iterdir())
    assert names == sorted(p.name for p in written["shuffled"].iterdir())
    for name in names:
        assert (written["reversed"] / name).read_bytes() == (written["shuffled"] / name).read_bytes()


def test_schema_round_trip_nested(written):
    for path in sorted(written["prompts"].iterdir()):
        schema = pq.read_schema(path)
        # Types and nullability match. Not check_metadata=True: Parquet names list children "element" (the
        # compliant nested type) where pa.list_ says "item", and pyarrow compares those names only in that mode.
        assert schema.equals(PROMPT_V1)
        assert [f.nullable for f in schema] == [f.nullable for f in PROMPT_V1]
        assert schema.metadata == PROMPT_V1.metadata
        assert schema_id(schema) == "prompt_v1"
    assert sorted(read_rows(str(written["prompts"]), PROMPT_V1), key=prompt_key) == PROMPTS


def test_read_table_with_schema_is_exactly_the_schema(written):
    path = sorted(written["prompts"].iterdir())[0]
    assert read_table(str(path), PROMPT_V1).schema.equals(PROMPT_V1, check_metadata=True)


def test_write_rejects_extra_column_naming_the_row(tmp_path):
    rows = [reject_row(i) for i in range(3)] + [{**reject_row(5), "bogus": 1}]
    with pytest.raises(Exception) as info:  # the runner wraps the DoFn's ValueError
        with pipeline() as p:
            _ = p | beam.Create(rows) | WriteSortedParquet(str(tmp_path), REJECT_V1, row_key, 1)
    # r005 sorts last of the four rows in the single shard: index 3
    assert "part-00000-of-00001.parquet row 3: columns do not match schema: extra=['bogus']" in str(info.value)


# --- reading back -----------------------------------------------------------------------------------------------


def test_read_stage_output_reads_all_rows(written):
    with pipeline() as p:
        typed = p | "Typed" >> ReadStageOutput(str(written["reversed"]), REJECT_V1)
        untyped = p | "Untyped" >> ReadStageOutput(str(written["prompts"]))
        assert_that((typed, untyped) | beam.Flatten(), equal_to(ROWS + PROMPTS))


def test_read_stage_output_empty_folder(tmp_path):
    p = pipeline()
    with pytest.raises(FileNotFoundError, match="no \\*.parquet shards"):
        _ = p | ReadStageOutput(str(tmp_path), REJECT_V1)


def test_list_shards_ignores_rejects_and_manifest(written, tmp_path):
    for shard in written["reversed"].iterdir():
        (tmp_path / shard.name).write_bytes(shard.read_bytes())
    (tmp_path / "_rejects").mkdir()
    pq.write_table(rows_to_table([reject_row(99)], REJECT_V1), tmp_path / "_rejects" / "part-00000-of-00001.parquet")
    (tmp_path / "_manifest.json").write_text("{}")
    shards = list_shards(str(tmp_path))
    assert [s.rsplit("/", 1)[-1] for s in shards] == [shard_name("part", i, 3) for i in range(3)]
    assert sorted(r["row_id"] for r in read_rows(str(tmp_path))) == [r["row_id"] for r in ROWS]


def test_list_shards_sorted(written):
    shards = list_shards(str(written["reversed"]))
    assert shards == sorted(shards) and len(shards) == 3


def test_list_shards_empty_folder(tmp_path):
    assert list_shards(str(tmp_path)) == []
    assert read_rows(str(tmp_path)) == []


def test_read_table_casts_to_schema(tmp_path):
    # A file written with extra columns and another order reads back as exactly the schema asked for.
    path = tmp_path / "x.parquet"
    table = pa.table(
        {
            "payload": ["{}"],
            "extra": [1],
            "detail": ["d"],
            "reason": ["bad"],
            "row_id": ["r"],
            "stage": ["s"],
        }
    )
    pq.write_table(table, path)
    read = read_table(str(path), REJECT_V1)
    assert read.schema.names == REJECT_V1.names
    assert read.to_pylist() == [{"stage": "s", "row_id": "r", "reason": "bad", "detail": "d", "payload": "{}"}]


def test_read_table_missing_column_fails(tmp_path):
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"stage": ["s"]}), path)
    with pytest.raises(KeyError):
        read_table(str(path), REJECT_V1)
