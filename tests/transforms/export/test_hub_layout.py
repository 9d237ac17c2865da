"""hub_layout: shard plan, file names, schema on disk, byte-identical rewrites, and malformed input."""

import hashlib
import random
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rewardmill.schemas import PAIR_V2, PRM_V1, RL_V1, SFT_V1
from rewardmill.schemas.common import schema_id
from rewardmill.transforms.export.hub_layout import (
    EXPORTABLE,
    KINDS,
    ConfigSpec,
    order_splits,
    plan_shards,
    spec_for,
    to_table,
    write_config,
)
from tests.transforms.export.rows import pair, rl, sft

SPEC = EXPORTABLE["pair_v2"]
SHARD_NAME = re.compile(r"^data/pairs/(train|test)-\d{5}-of-\d{5}\.parquet$")


def rows(n_train: int, n_test: int) -> list[dict]:
    return [pair(i) for i in range(n_train)] + [pair(1000 + i, "test") for i in range(n_test)]


def sha256s(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(
    "n_rows, num_shards, expected",
    [
        (1, 1, [1]),  # smallest split, one file
        (5, 1, [5]),  # default: one file per split
        (7, 3, [2, 2, 3]),  # contiguous near-equal chunks
        (6, 3, [2, 2, 2]),  # even split
        (2, 4, [1, 1]),  # fewer rows than shards: one row per file, never an empty file
        (0, 2, []),  # no rows: no files
    ],
)
def test_plan_sizes(n_rows, num_shards, expected):
    table = to_table([pair(i) for i in range(n_rows)], PAIR_V2)
    plan = plan_shards(table, "pairs", "pair_id", num_shards)
    assert [t.num_rows for _, _, t in plan] == expected
    n = len(expected)
    assert [path for _, path, _ in plan] == [f"data/pairs/train-{i:05d}-of-{n:05d}.parquet" for i in range(n)]


def test_plan_orders_splits_and_sorts_rows_globally():
    plan = plan_shards(to_table(rows(7, 3)[::-1], PAIR_V2), "pairs", "pair_id", 3)
    assert [split for split, _, _ in plan] == ["train"] * 3 + ["test"] * 3
    for split in ("train", "test"):
        ids = [i for s, _, t in plan if s == split for i in t.column("pair_id").to_pylist()]
        assert ids == sorted(ids)  # file order then row order is id order
    assert all(SHARD_NAME.match(path) for _, path, _ in plan)


@pytest.mark.parametrize(
    "names, expected",
    [
        ({"test", "train"}, ["train", "test"]),  # the Hub's order, not alphabetical
        ({"validation", "test", "train"}, ["train", "validation", "test"]),
        ({"zeta", "train", "alpha"}, ["train", "alpha", "zeta"]),  # unknown splits follow, sorted
    ],
)
def test_order_splits(names, expected):
    assert order_splits(names) == expected


def test_write_config_files_schema_and_summary(tmp_path):
    data = rows(5, 2)
    data[0] = pair(0, sources=("math_answer@1", "judge@2"))
    exported = write_config(data, "pairs", SPEC, str(tmp_path), 2)
    files = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.parquet"))
    assert files == [
        "data/pairs/test-00000-of-00002.parquet",
        "data/pairs/test-00001-of-00002.parquet",
        "data/pairs/train-00000-of-00002.parquet",
        "data/pairs/train-00001-of-00002.parquet",
    ]
    for f in files:
        on_disk = pq.read_schema(tmp_path / f)  # list children read back as "element" (Parquet's compliant naming)
        assert on_disk.names == PAIR_V2.names and on_disk.metadata == PAIR_V2.metadata
        assert [fld.nullable for fld in on_disk] == [fld.nullable for fld in PAIR_V2]
        assert pq.read_table(tmp_path / f).cast(PAIR_V2).schema.equals(PAIR_V2)
    assert [(s.name, s.num_rows, len(s.files)) for s in exported.splits] == [("train", 5, 2), ("test", 2, 2)]
    assert exported.label_sources == (("judge@2", 1), ("math_answer@1", 7))
    assert dict(exported.summary.metrics)["pairs"] == "7" and exported.kind == "preference"
    assert exported.splits[0].pattern("pairs") == "data/pairs/train-*.parquet"
    assert all(f.num_bytes == (tmp_path / f.path).stat().st_size for s in exported.splits for f in s.files)


def test_same_rows_give_identical_bytes_whatever_the_input_order_or_chunking(tmp_path):
    data = rows(9, 4)
    write_config(data, "pairs", SPEC, str(tmp_path / "a"), 2)
    shuffled = data[:]
    random.Random(0).shuffle(shuffled)
    chunked = pa.concat_tables([to_table(shuffled[:3], PAIR_V2), to_table(shuffled[3:], PAIR_V2)])
    exported = write_config(chunked, "pairs", SPEC, str(tmp_path / "b"), 2)
    assert sha256s(tmp_path / "a") == sha256s(tmp_path / "b")
    assert exported.num_rows == 13


def test_table_input_casts_extra_columns_away(tmp_path):
    table = to_table(rows(2, 0), PAIR_V2).append_column("extra", pa.array([1, 2]))
    write_config(table, "pairs", SPEC, str(tmp_path), 1)
    assert pq.read_schema(tmp_path / "data/pairs/train-00000-of-00001.parquet").names == PAIR_V2.names


@pytest.mark.parametrize(
    "data, config, match",
    [
        ([pair(1), pair(1)], "pairs", "must be unique"),  # duplicated pair_id
        ([pair(1, split="train-extra")], "pairs", "split name"),  # '-' would break the card's shard globs
        ([{**pair(1), "unknown": 1}], "pairs", "columns do not match"),  # dict rows must match the schema
        ([{k: v for k, v in pair(1).items() if k != "margin"}], "pairs", "columns do not match"),
        ([pair(1)], "../pairs", "config name"),  # config names become folders
    ],
)
def test_malformed_input_is_rejected(tmp_path, data, config, match):
    with pytest.raises(ValueError, match=match):
        write_config(data, config, SPEC, str(tmp_path), 1)
    assert not list(tmp_path.rglob("*.parquet"))


def test_table_missing_a_column_is_rejected():
    with pytest.raises(ValueError, match="lacks columns"):
        to_table(to_table(rows(1, 0), PAIR_V2).drop_columns(["margin"]), PAIR_V2)


def test_num_shards_must_be_positive():
    with pytest.raises(ValueError, match="num_shards"):
        plan_shards(to_table(rows(1, 0), PAIR_V2), "pairs", "pair_id", 0)


def test_unknown_schema_has_no_spec():
    with pytest.raises(ValueError, match="no export spec"):
        spec_for("prompt_v1")
    with pytest.raises(ValueError, match="no export spec"):
        spec_for("pair_v1")  # PAIR_V1 is gone: an old assemble output must be rebuilt, not exported half-typed


@pytest.mark.parametrize(
    "schema, id_column, kind",
    [
        (PAIR_V2, "pair_id", "preference"),
        (PRM_V1, ("labeler", "rollout_id"), "stepwise"),
        (RL_V1, "prompt_id", "prompt_only"),  # one row per prompt
        (SFT_V1, "rollout_id", "prompt_completion"),  # several rows per prompt when per_prompt > 1
    ],
)
def test_every_config_kind_has_a_spec(schema, id_column, kind):
    spec = spec_for(schema_id(schema))
    assert (spec.id_column, spec.kind) == (id_column, kind)
    assert spec.schema.equals(schema) and spec.schema.metadata == schema.metadata
    undocumented = [f.name for f in spec.schema if not (f.metadata or {}).get(b"description")]
    assert undocumented == []  # every exported column has a card description


def test_spec_kind_is_checked():
    assert set(KINDS) == {s.kind for s in EXPORTABLE.values()}
    with pytest.raises(ValueError, match="kind"):
        ConfigSpec(PAIR_V2, "pair_id", "pairs", "pairs")


@pytest.mark.parametrize(
    "make, config, schema, id_column",
    [(rl, "rl", RL_V1, "prompt_id"), (sft, "sft", SFT_V1, "rollout_id")],
)
def test_rl_and_sft_export_sorted_with_summary(tmp_path, make, config, schema, id_column):
    data = [make(i, "test" if i % 3 == 0 else "train") for i in range(7)]
    exported = write_config(data[::-1], config, spec_for(schema_id(schema)), str(tmp_path), 2)
    assert [(s.name, s.num_rows, len(s.files)) for s in exported.splits] == [("train", 4, 2), ("test", 3, 2)]
    for split in exported.splits:
        ids = [i for f in split.files for i in pq.read_table(tmp_path / f.path).column(id_column).to_pylist()]
        assert ids == sorted(ids)
    assert exported.kind == EXPORTABLE[schema_id(schema)].kind and exported.summary.metrics
    assert pq.read_table(tmp_path / exported.splits[0].files[0].path).cast(schema).schema.equals(schema)
