"""Which stage output folders validation reads, and reading a few columns of one (folders in, pyarrow out)."""

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from rewardmill.transforms.io.parquet import read_table

REWARDS = "_rewards"  # assemble's per-rollout rewards beside the configs: validated and measured, never exported


def subfolders(directory: str | Path) -> list[Path]:
    """Stage output folders under `directory` (sorted); `_`/`.`-prefixed names and the temp/old folders a
    killed stage may leave (`NAME.tmp-PID`, `NAME.old-PID`) are not outputs."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory}: missing; the upstream stages did not run (run `dvc repro`)")
    return sorted(
        p
        for p in directory.iterdir()
        if p.is_dir() and not p.name.startswith(("_", ".")) and not re.search(r"\.(tmp|old)-\d+$", p.name)
    )


def dataset_folders(datasets: str | Path) -> list[Path]:
    """The configs under `datasets` (subfolders) plus `_rewards` when assemble wrote it, sorted by name."""
    rewards = Path(datasets) / REWARDS
    return sorted([*subfolders(datasets), *([rewards] if rewards.is_dir() else [])])


def read_columns(directory: str | Path, columns: list[str]) -> pa.Table:
    """The given columns of every data shard in a stage folder (`_rejects/` is a subfolder, so never matched)."""
    shards = sorted(Path(directory).glob("*.parquet"))
    if not shards:
        raise FileNotFoundError(f"{directory}: no *.parquet shards")
    # read_table skips reading empty shards (pyarrow aborts at exit after reading an empty nested column)
    return pa.concat_tables([read_table(str(path), columns=columns) for path in shards])


def column_names(directory: str | Path) -> list[str]:
    """The columns of a stage folder's first data shard (its schema), without reading any rows."""
    shards = sorted(Path(directory).glob("*.parquet"))
    return pq.read_schema(shards[0]).names if shards else []
