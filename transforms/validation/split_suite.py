"""Cross-config split check: no prompt is in train in one dataset and in test in another (or in the same one).

Every folder under data/datasets with prompt_id and split columns (pairs, rl, sft, prm, _rewards) contributes its
(prompt_id, split) pairs; the check table has one row per prompt: the splits it appears in and the datasets that
hold it. A prompt with two splits would leak test prompts into training; the report names the prompts.

Helper column (see expectations.py):
    _single_split   the prompt appears in exactly one split across all datasets
"""

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from rewardmill.schemas.common import list_of, versioned
from rewardmill.transforms.validation.expectations import column, make_suite, schema_expectations
from rewardmill.transforms.validation.folders import column_names, dataset_folders, read_columns

if TYPE_CHECKING:
    import great_expectations as gx

# Built here, not in schemas/: it never crosses a stage boundary, it only names the check's table and suite.
SPLIT_CHECK_V1 = versioned(
    "split_check",
    1,
    [
        pa.field("prompt_id", pa.string(), nullable=False),
        pa.field("splits", list_of(pa.string()), nullable=False),  # sorted, distinct
        pa.field("datasets", list_of(pa.string()), nullable=False),  # folder names, sorted, distinct
    ],
)
SINGLE_SPLIT = "_single_split"


def split_table(datasets: str | Path) -> pa.Table:
    """data/datasets -> SPLIT_CHECK_V1 table, one row per prompt_id (sorted). Folders without prompt_id and split
    columns are skipped (the per-config suites report missing columns)."""
    splits: dict[str, set[str]] = defaultdict(set)
    holders: dict[str, set[str]] = defaultdict(set)
    for folder in dataset_folders(datasets):
        if not {"prompt_id", "split"} <= set(column_names(folder)):
            continue
        table = read_columns(folder, ["prompt_id", "split"])
        for prompt_id, split in zip(*(table.column(c).to_pylist() for c in ("prompt_id", "split")), strict=True):
            if prompt_id is None or split is None:
                continue  # a null is the config suite's not-null failure, not a leak
            splits[prompt_id].add(split)
            holders[prompt_id].add(folder.name)
    rows = [{"prompt_id": p, "splits": sorted(splits[p]), "datasets": sorted(holders[p])} for p in sorted(splits)]
    return pa.Table.from_pylist(rows, schema=SPLIT_CHECK_V1)


def leaked_prompts(table: pa.Table) -> list[str]:
    """The prompt ids of a SPLIT_CHECK_V1 table that appear in more than one split, sorted."""
    return [p for p, s in zip(column(table, "prompt_id"), column(table, "splits"), strict=True) if len(s or []) > 1]


def split_helper_columns(table: pa.Table) -> dict[str, list[bool]]:
    return {SINGLE_SPLIT: [s is not None and len(s) == 1 for s in column(table, "splits")]}


def build_split_suite(min_rows: int = 0) -> "gx.ExpectationSuite":
    """Suite for SPLIT_CHECK_V1 frames with the `_single_split` helper; `min_rows` is unused (no datasets, no
    prompts: nothing can leak)."""
    import great_expectations as gx

    e = gx.expectations
    semantic = [e.ExpectColumnValuesToBeUnique(column="prompt_id")]
    return make_suite("split_check_v1", [*schema_expectations(SPLIT_CHECK_V1, (SINGLE_SPLIT,)), *semantic])
