"""hub_layout: shard plan, file names, schema on disk, byte-identical rewrites, and malformed input."""

import hashlib
import random
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rewardmill.schemas import PAIR_V1
from rewardmill.transforms.export.hub_layout import (
    EXPORTABLE,
    order_splits,
    plan_shards,
    spec_for,
    to_table,
    write_config,
)

SPEC = EXPORTABLE["pair_v1"]
SHARD_NAME = re.compile(r"^data/pairs/(train|test)-\d{5}-of-\d{5}\.parquet$")


def pair(i: int, split: str = "train", sources: tuple[str, ...] = ("math_answer@1",)) -> dict:
    """A valid PAIR_V1 row; pair_id is a hash so id order differs from creation order."""
    return {
        "pair_id": hashlib.sha256(str(i).encode()).hexdigest(),
        "prompt_id": f"q{i // 2:03d}",
        "prompt": [{"role": "user", "content": f"What is {i} + {i}?"}],
        "chosen": [{"role": "assistant", "content": f"{2 * i}"}],
        "rejected": [{"role": "assistant", "content": f"{2 * i + 1}"}],
        "score_chosen": 1.0,
        "score_rejected": 0.0,
        "margin": 1.0,
        "confidence": 0.9,
        "agreement": 1.0,
        "pair_type": "best_vs_worst",
        "chosen_rollout_id": f"c{i}",
        "rejected_rollout_id": f"r{i}",
        "chosen_n_tokens": 3,
        "rejected_n_tokens": 4,
        "label_sources": list(sources),
        "task": "math",
        "split": split,
    }


def rows(n_train: int, n_test: int) -> list[dict]:
    return [pair(i) for i in range(n_train)] + [pair(1000 + i, "test") for i in range(n_test)]


def sha256s(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


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
    table = to_table([pair(i) for i in range(n_rows)], PAIR_V1)
    plan = plan_shards(table, "pairs", "pair_id", num_shards)
    assert [t.num_rows for _, _, t in plan] == expected
    n = len(expected)
    assert [path for _, path, _ in plan] == [f"data/pairs/train-{i:05d}-of-{n:05d}.parquet" for i in range(n)]


def test_plan_orders_splits_and_sorts_rows_globally():
    plan = plan_shards(to_table(rows(7, 3)[::-1], PAIR_V1), "pairs", "pair_id", 3)
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
        assert on_disk.names == PAIR_V1.names and on_disk.metadata == PAIR_V1.metadata
        assert [fld.nullable for fld in on_disk] == [fld.nullable for fld in PAIR_V1]
        assert pq.read_table(tmp_path / f).cast(PAIR_V1).schema.equals(PAIR_V1)
    assert [(s.name, s.num_rows, len(s.files)) for s in exported.splits] == [("train", 5, 2), ("test", 2, 2)]
    assert exported.label_sources == (("judge@2", 1), ("math_answer@1", 7))
    assert exported.splits[0].pattern("pairs") == "data/pairs/train-*.parquet"
    assert all(f.num_bytes == (tmp_path / f.path).stat().st_size for s in exported.splits for f in s.files)


def test_same_rows_give_identical_bytes_whatever_the_input_order_or_chunking(tmp_path):
    data = rows(9, 4)
    write_config(data, "pairs", SPEC, str(tmp_path / "a"), 2)
    shuffled = data[:]
    random.Random(0).shuffle(shuffled)
    chunked = pa.concat_tables([to_table(shuffled[:3], PAIR_V1), to_table(shuffled[3:], PAIR_V1)])
    exported = write_config(chunked, "pairs", SPEC, str(tmp_path / "b"), 2)
    assert sha256s(tmp_path / "a") == sha256s(tmp_path / "b")
    assert exported.num_rows == 13


def test_table_input_casts_extra_columns_away(tmp_path):
    table = to_table(rows(2, 0), PAIR_V1).append_column("extra", pa.array([1, 2]))
    write_config(table, "pairs", SPEC, str(tmp_path), 1)
    assert pq.read_schema(tmp_path / "data/pairs/train-00000-of-00001.parquet").names == PAIR_V1.names


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
        to_table(to_table(rows(1, 0), PAIR_V1).drop_columns(["margin"]), PAIR_V1)


def test_num_shards_must_be_positive():
    with pytest.raises(ValueError, match="num_shards"):
        plan_shards(to_table(rows(1, 0), PAIR_V1), "pairs", "pair_id", 0)


def test_unknown_schema_has_no_spec():
    with pytest.raises(ValueError, match="no export spec"):
        spec_for("prompt_v1")
