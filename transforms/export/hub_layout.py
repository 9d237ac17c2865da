"""Lay out one dataset config as Hugging Face Hub Parquet shards: `data/<config>/<split>-0000i-of-0000N.parquet`.

In: the rows of one config (PAIR_V2 for `pairs`, PRM_V1 for `prm`, RL_V1 for `rl`, SFT_V1 for `sft`) as dicts or a
pyarrow Table, plus `num_shards` from params.
Out: one set of files per split found in the `split` column, and a `ConfigExport` summary for the dataset card
(splits, files, label sources and the summary statistics of the rows written).

Same rows in => same bytes out, whatever order or input sharding they arrive in. Shard assignment: rows of a split
are sorted by the config's id column(s) (unique: `pair_id`, `prompt_id` for `rl`, `rollout_id` for `sft`,
`(labeler, rollout_id)` for `prm`) and cut into
`num_shards` contiguous, near-equal chunks. That keeps shards balanced and the whole split globally sorted when read
in file order. A split with fewer rows than `num_shards` gets one row per file instead, because `datasets` cannot
read an empty Parquet shard; a split with no rows gets no files at all.
"""

import io
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from rewardmill.schemas import PAIR_ASPECT_V1, PAIR_V2, PAIR_V3, PRM_V1, RL_V1, RL_V2, SFT_V1, SFT_V2
from rewardmill.schemas.common import schema_id
from rewardmill.transforms.export.columns import (
    PAIR_ASPECT_COLUMN_DOCS,
    PAIR_COLUMN_DOCS,
    PAIR_V3_COLUMN_DOCS,
    PRM_COLUMN_DOCS,
    RL_COLUMN_DOCS,
    RL_V2_COLUMN_DOCS,
    SFT_COLUMN_DOCS,
    SFT_V2_COLUMN_DOCS,
)
from rewardmill.transforms.export.summary import Summary, summarize
from rewardmill.transforms.io.parquet import PARQUET_OPTIONS, rows_to_table, shard_name

DATA_DIR = "data"
SPLIT_COLUMN = "split"
# The conventional order on the Hub; any other split names follow alphabetically.
SPLIT_ORDER = ("train", "validation", "test")
# Bounded row groups keep the Hub's dataset viewer and streaming readers from loading huge groups at once.
ROW_GROUP_ROWS = 10_000
# `datasets` split names; no "-" so the card's `<split>-*.parquet` glob can never match another split's files.
_SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")
_CONFIG_NAME = re.compile(r"^\w+([.-]\w+)*$")


# TRL's dataset types: what a config loads into (the card's "Training with TRL" section is chosen by it).
KINDS = ("preference", "stepwise", "prompt_only", "prompt_completion")


@dataclass(frozen=True)
class ConfigSpec:
    """How to export one kind of dataset: its schema, its id column(s), its TRL dataset type, a card line."""

    schema: pa.Schema
    id_column: str | tuple[str, ...]  # unique per row (together when several); rows are sorted by it
    description: str
    kind: str  # one of KINDS

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind {self.kind!r} must be one of {KINDS}")


def with_descriptions(schema: pa.Schema, docs: dict[str, str]) -> pa.Schema:
    """`schema` with a `description` in the metadata of each field named in `docs` (the dataset card shows it)."""
    fields = [
        f.with_metadata({**(f.metadata or {}), b"description": docs[f.name].encode()}) if f.name in docs else f
        for f in schema
    ]
    return pa.schema(fields, metadata=schema.metadata)


# Keyed by the schema id an upstream manifest records (`pair_v2`), so a config folder declares what it holds.
EXPORTABLE: dict[str, ConfigSpec] = {
    schema_id(PAIR_V2): ConfigSpec(
        with_descriptions(PAIR_V2, PAIR_COLUMN_DOCS),
        "pair_id",
        "Preference pairs in TRL's conversational format: `prompt` (user turns), `chosen` and `rejected` "
        "(assistant turns) from the policy's own samples of one prompt, with the reward gap in `margin` and each "
        "side's verified correctness and named scores.",
        "preference",
    ),
    schema_id(PAIR_ASPECT_V1): ConfigSpec(
        with_descriptions(PAIR_ASPECT_V1, PAIR_ASPECT_COLUMN_DOCS),
        "pair_id",
        "Per-aspect preference pairs for multi-objective training (Directional Preference Alignment, "
        "Multi-Objective DPO, ArmoRM): for each named aspect, a prompt's sample that scores highest on it against "
        "the one that scores lowest. `aspect` names the objective; `score_chosen`, `score_rejected` and `margin` "
        "are its scores, not the reward; filter on `aspect` for one objective's pairs.",
        "preference",
    ),
    # One row per (steps labeler, rollout): a rollout labelled by two steps labelers gives two rows.
    schema_id(PRM_V1): ConfigSpec(
        with_descriptions(PRM_V1, PRM_COLUMN_DOCS),
        ("labeler", "rollout_id"),
        "Process-reward rows in TRL's stepwise-supervision format: `prompt` (the last user message), `completions` "
        "(the steps of one of the policy's own samples) and `labels` (True up to its first wrong step), with the "
        "step labeler's soft labels in `soft_labels`.",
        "stepwise",
    ),
    schema_id(RL_V1): ConfigSpec(
        with_descriptions(RL_V1, RL_COLUMN_DOCS),
        "prompt_id",
        "Prompts for online RL (GRPO, RLOO) in TRL's conversational prompt-only format: `prompt` plus what reward "
        "functions check against (`reference`, `tests`, `constraints`), with the policy's pass rate over its own "
        "samples and a difficulty bucket.",
        "prompt_only",
    ),
    schema_id(SFT_V1): ConfigSpec(
        with_descriptions(SFT_V1, SFT_COLUMN_DOCS),
        "rollout_id",
        "The best verified samples of each prompt for rejection-sampling fine-tuning, in TRL's conversational "
        "prompt-completion format: `prompt` (user turns) and `completion` (the assistant turn).",
        "prompt_completion",
    ),
    # Built from trajectories (an environment ran the rollouts): the same configs, multi-turn.
    schema_id(PAIR_V3): ConfigSpec(
        with_descriptions(PAIR_V3, PAIR_V3_COLUMN_DOCS),
        "pair_id",
        "Multi-turn preference pairs in TRL's conversational format with tool calls: `prompt`, then `chosen` and "
        "`rejected` as two whole trajectories of the policy on that prompt (its turns, tool calls, tool results and "
        "feedback), with the tools in `tools`, the reward gap in `margin` and each side's verified outcome.",
        "preference",
    ),
    schema_id(RL_V2): ConfigSpec(
        with_descriptions(RL_V2, RL_V2_COLUMN_DOCS),
        "prompt_id",
        "Prompts for online multi-turn RL in TRL's conversational prompt-only format: `prompt`, what reward functions "
        "check against, the environment (name, version, config) and tools its episodes ran with, and the policy's "
        "pass rate over its own episodes.",
        "prompt_only",
    ),
    schema_id(SFT_V2): ConfigSpec(
        with_descriptions(SFT_V2, SFT_V2_COLUMN_DOCS),
        "rollout_id",
        "The best verified trajectories of each prompt for rejection-sampling fine-tuning with tools, in TRL's "
        "conversational prompt-completion format: `prompt`, `completion` (every message after it, tool calls and "
        "results included) and `tools`, which SFTTrainer passes to the chat template.",
        "prompt_completion",
    ),
}


@dataclass(frozen=True)
class ShardFile:
    path: str  # relative to the export root, "/"-separated, e.g. data/pairs/train-00000-of-00001.parquet
    num_rows: int
    num_bytes: int  # size of the Parquet file


@dataclass(frozen=True)
class SplitExport:
    name: str
    num_rows: int
    num_bytes: int  # in-memory Arrow size of the split, what `datasets` reports as a split's num_bytes
    files: tuple[ShardFile, ...]

    def pattern(self, config: str) -> str:
        """The `data_files` glob the dataset card lists for this split."""
        return f"{DATA_DIR}/{config}/{self.name}-*.parquet"

    @property
    def download_size(self) -> int:
        return sum(f.num_bytes for f in self.files)


@dataclass(frozen=True)
class ConfigExport:
    """What was written for one config: splits in card order, how often each label source scored a row, and the
    summary statistics of the rows."""

    name: str
    schema: pa.Schema
    description: str
    kind: str  # ConfigSpec.kind
    splits: tuple[SplitExport, ...]
    label_sources: tuple[tuple[str, int], ...]  # (labeler@version, rows), sorted by name; empty without the column
    summary: Summary = Summary()

    @property
    def num_rows(self) -> int:
        return sum(s.num_rows for s in self.splits)


def spec_for(schema_name: str) -> ConfigSpec:
    if schema_name not in EXPORTABLE:
        raise ValueError(f"schema '{schema_name}' has no export spec; exportable: {sorted(EXPORTABLE)}")
    return EXPORTABLE[schema_name]


def check_config_name(config: str) -> str:
    if not _CONFIG_NAME.match(config):
        raise ValueError(f"config name {config!r} must be letters, digits, '_', '.', '-' (it names a folder)")
    return config


def to_table(rows: list[dict[str, Any]] | pa.Table, schema: pa.Schema) -> pa.Table:
    """Rows (dicts or a table) -> a table with exactly `schema`'s columns, types and metadata, in one chunk."""
    if isinstance(rows, pa.Table):
        missing = sorted(set(schema.names) - set(rows.column_names))
        if missing:
            raise ValueError(f"table lacks columns {missing} of schema {schema_id(schema)}")
        table = rows.select(schema.names).cast(schema)
    else:
        table = rows_to_table(rows, schema, where=schema_id(schema))
    return table.replace_schema_metadata(schema.metadata).combine_chunks()


def order_splits(names: list[str] | set[str]) -> list[str]:
    """train, validation, test first (the Hub's order), then any other split alphabetically."""
    known = [s for s in SPLIT_ORDER if s in names]
    return known + sorted(set(names) - set(SPLIT_ORDER))


def plan_shards(
    table: pa.Table, config: str, id_column: str | tuple[str, ...], num_shards: int
) -> list[tuple[str, str, pa.Table]]:
    """-> [(split, relative path, rows of that file)], each file's rows sorted by `id_column` (one column or a
    tuple of columns, unique together). Pure."""
    if num_shards < 1:
        raise ValueError("num_shards must be >= 1")
    check_config_name(config)
    columns = (id_column,) if isinstance(id_column, str) else tuple(id_column)
    if len(columns) == 1:
        ids = table.column(columns[0]).to_pylist()
    else:
        ids = list(zip(*(table.column(c).to_pylist() for c in columns), strict=True))
    if len(set(ids)) != len(ids):
        dupes = sorted(k for k, n in Counter(ids).items() if n > 1)
        shown = columns[0] if len(columns) == 1 else columns
        raise ValueError(f"{config}: {shown} must be unique; duplicated: {dupes[:5]}")
    table = table.sort_by([(c, "ascending") for c in columns])
    plan = []
    for split in order_splits(set(pc.unique(table.column(SPLIT_COLUMN)).to_pylist())):
        if not _SPLIT_NAME.match(split):
            raise ValueError(f"{config}: split name {split!r} must match {_SPLIT_NAME.pattern}")
        rows = table.filter(pc.equal(table.column(SPLIT_COLUMN), split))
        n = min(num_shards, rows.num_rows)
        for i in range(n):
            start, stop = i * rows.num_rows // n, (i + 1) * rows.num_rows // n
            path = f"{DATA_DIR}/{config}/{shard_name(split, i, n)}"
            plan.append((split, path, rows.slice(start, stop - start).combine_chunks()))
    return plan


def encode(table: pa.Table) -> bytes:
    """Parquet bytes with the project's options; the same table always gives the same bytes."""
    buffer = io.BytesIO()
    pq.write_table(table, buffer, row_group_size=ROW_GROUP_ROWS, **PARQUET_OPTIONS)
    return buffer.getvalue()


def count_label_sources(table: pa.Table) -> tuple[tuple[str, int], ...]:
    """(label source, rows) from `label_sources` (pairs, sft), else from the single `labeler` column (prm); rl has
    neither (its labelers are named in the upstream manifest)."""
    if "label_sources" in table.column_names:
        counts = Counter(s for sources in table.column("label_sources").to_pylist() for s in set(sources or ()))
    elif "labeler" in table.column_names:
        counts = Counter(table.column("labeler").to_pylist())
    else:
        return ()
    return tuple(sorted(counts.items()))


def write_config(
    rows: list[dict[str, Any]] | pa.Table, config: str, spec: ConfigSpec, out_dir: str, num_shards: int
) -> ConfigExport:
    """Write every split of one config under `out_dir/data/<config>/` and return what was written."""
    table = to_table(rows, spec.schema)
    by_split: dict[str, list[tuple[ShardFile, int]]] = {}
    for split, path, shard in plan_shards(table, config, spec.id_column, num_shards):
        data = encode(shard)
        with FileSystems.create(FileSystems.join(out_dir, *path.split("/"))) as fh:
            fh.write(data)
        # Measure the Arrow size on the bytes as written, so it never depends on how the input was chunked.
        arrow_bytes = pq.read_table(pa.BufferReader(data)).nbytes
        by_split.setdefault(split, []).append((ShardFile(path, shard.num_rows, len(data)), arrow_bytes))
    splits = tuple(
        SplitExport(
            name=split,
            num_rows=sum(f.num_rows for f, _ in files),
            num_bytes=sum(b for _, b in files),
            files=tuple(f for f, _ in files),
        )
        for split, files in by_split.items()
    )
    return ConfigExport(
        config,
        spec.schema,
        spec.description,
        spec.kind,
        splits,
        count_label_sources(table),
        summarize(spec.kind, table),
    )
