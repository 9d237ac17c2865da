"""Thin Beam wrappers around the bucket core (bucket.assemble_bucket): shards in, bucket parts out.

The steps of `assemble` that move data: BucketInputs reads every rollouts and labels shard and splits it by bucket of
whole prompts (and finds the prompt flags beside them); AssembleBucket runs the core over one bucket and yields its
output tables as shard parts for tables.WriteTables. Big tables never are Beam elements: they are spilled Arrow files
(transforms/io/frames.spill_frame) and only `(bucket, (tag, path))` tuples cross the bucket shuffle.
"""

from collections import Counter
from collections.abc import Iterable
from typing import Any

import apache_beam as beam
import polars as pl
import pyarrow as pa

from rewardmill.schemas import LABEL_V1, ROLLOUT_V2, ROLLOUT_V3
from rewardmill.transforms.aggregate.bucket import (
    PROMPT_COLUMNS,
    STAGE,
    CoreConfig,
    assemble_bucket,
    rollout_read,
    sample_columns,
)
from rewardmill.transforms.aggregate.prompt_flags import FiltersConfig, prompt_flags, user_text
from rewardmill.transforms.aggregate.reward import LABEL_COLUMNS
from rewardmill.transforms.io.frames import empty_frame, load_frame, read_frame, spill_frame
from rewardmill.transforms.io.tables import TableSink, shard_parts, stage_shards
from rewardmill.transforms.io.threads import ThreadedDoFn

COUNTS = "counts"  # the tag of AssembleBucket's counts
FLAGS = "flags"  # the tag of a bucket's prompt flags among its tagged parts


def bucket_inputs(rollouts_dir: str, label_dirs: list[str]) -> list[tuple[str, Any]]:
    """The elements of BucketInputs: the prompt flags' job (every rollouts shard), then each rollouts and labels
    shard. Listing the shards fails on a folder without any, when the pipeline is built."""
    rollout_shards = stage_shards(rollouts_dir)
    inputs = [(FLAGS, rollout_shards), *(("rollouts", path) for path in rollout_shards)]
    inputs += [("labels", path) for directory in label_dirs for path in stage_shards(directory)]
    return inputs


def prompt_parts(rollouts: pl.DataFrame, buckets: int, spill_dir: str) -> Iterable[tuple[int, tuple[str, str]]]:
    """Rollouts -> (bucket, ("prompts", path of the PROMPT_COLUMNS of its prompts in that bucket, once each)): the
    prompt columns cross the shuffle once per prompt, not once per sample."""
    first = rollouts.select(PROMPT_COLUMNS).filter(pl.col("prompt_id").is_first_distinct())  # gathers kept rows only
    yield from split_by_bucket(first, "prompts", buckets, spill_dir)


class BucketShard(beam.DoFn):
    """Path of a rollouts (`kind` "rollouts") or labels shard -> (bucket, (tag, path of its rows in that bucket)).

    A rollouts shard gives tag "rollouts" (SAMPLE_COLUMNS) and tag "prompts" (PROMPT_COLUMNS once per prompt); a
    labels shard tag "labels". Read and split in one step, so no table is ever an element: where a runner does not
    fuse two steps, it pickles the elements between them (a million-row table took seconds).
    """

    def __init__(self, kind: str, buckets: int, spill_dir: str, trajectories: bool = False):
        self.kind = kind
        self.buckets = buckets
        self.spill_dir = spill_dir
        self.trajectories = trajectories

    def process(self, path: str):
        if self.kind == "labels":
            labels = read_frame(path, LABEL_V1, [*LABEL_COLUMNS, "prompt_id"])
            yield from split_by_bucket(labels, "labels", self.buckets, f"{self.spill_dir}/labels")
            return
        rollouts = read_frame(path, *rollout_read(self.trajectories))
        yield from prompt_parts(rollouts, self.buckets, f"{self.spill_dir}/prompts")
        samples = rollouts.select(sample_columns(self.trajectories))
        yield from split_by_bucket(samples, "rollouts", self.buckets, f"{self.spill_dir}/rollouts")


def flags_by_bucket(rollout_shards: list[str], cfg: FiltersConfig, buckets: int) -> dict[int, dict[str, tuple]]:
    """The prompt-level filters over the prompts of every rollouts shard -> bucket -> {prompt_id: (reason, detail)}
    for its flagged prompts. Near-duplicates need every prompt's text, so the flags are found in one place, from
    the shards' prompt columns only; each bucket then gets its own prompts' flags through the bucket shuffle (a
    keyed join), not all of them as a side input."""
    prompts = pl.concat([read_frame(path, ROLLOUT_V2, ["prompt_id", "messages"]) for path in rollout_shards])
    texts = prompts.filter(pl.col("prompt_id").is_first_distinct()).select(
        "prompt_id", text=user_text(pl.col("messages"))
    )
    flags = prompt_flags(zip(texts["prompt_id"].to_list(), texts["text"].to_list(), strict=True), cfg)
    if not flags:
        return {}
    ids = with_bucket(pl.DataFrame({"prompt_id": list(flags)}, schema={"prompt_id": pl.String}), buckets)
    return {
        int(bucket): {prompt_id: flags[prompt_id] for prompt_id in part["prompt_id"].to_list()}
        for (bucket,), part in ids.partition_by("_bucket", as_dict=True).items()
    }


class BucketInputs(ThreadedDoFn):
    """(kind, value) -> the tagged parts of every bucket, two inputs at a time (pyarrow and polars release the GIL):

    - ("rollouts" or "labels", path of a shard): BucketShard's parts of it;
    - (FLAGS, paths of every rollouts shard): (bucket, (FLAGS, its prompts' flags)) for each bucket holding a flagged
      prompt (flags_by_bucket). Reading the prompt columns itself, it runs beside the shards, not after them.
    """

    def __init__(self, filters: FiltersConfig, buckets: int, spill_dir: str, trajectories: bool = False):
        super().__init__(threads=2)
        self.filters = filters
        self.buckets = buckets
        self.spill_dir = spill_dir
        self.trajectories = trajectories

    def work(self, element):
        kind, value = element
        if kind == FLAGS:
            return kind, flags_by_bucket(value, self.filters, self.buckets)
        return kind, list(BucketShard(kind, self.buckets, self.spill_dir, self.trajectories).process(value))

    def emit(self, result):
        kind, value = result
        if kind != FLAGS:
            yield from value
            return
        reasons = Counter(reason for flags in value.values() for reason, _ in flags.values())
        for reason, n in sorted(reasons.items()):
            beam.metrics.Metrics.counter(STAGE, f"prompts_{reason}").inc(n)
        for bucket, flags in sorted(value.items()):
            yield bucket, (FLAGS, flags)


def with_bucket(frame: pl.DataFrame, buckets: int) -> pl.DataFrame:
    """`frame` with `_bucket`: the bucket of its row's prompt (a prompt's rows, labels and flags share one)."""
    return frame.with_columns(_bucket=(pl.col("prompt_id").hash(seed=0) % buckets).cast(pl.Int64))


def split_by_bucket(
    frame: pl.DataFrame, tag: str, buckets: int, spill_dir: str
) -> Iterable[tuple[int, tuple[str, str]]]:
    """A frame -> (bucket, (tag, path of the rows of that bucket, spilled under `spill_dir`)); a prompt's rows
    always share a bucket. Only paths cross the bucket shuffle (see transforms/io/frames.spill_frame)."""
    if frame.height == 0:
        return
    for (bucket,), part in with_bucket(frame, buckets).partition_by("_bucket", as_dict=True).items():
        yield int(bucket), (tag, spill_frame(part.drop("_bucket"), spill_dir))


class AssembleBucket(ThreadedDoFn):
    """(bucket, [(tag, path of a spilled table) or (FLAGS, its prompts' flags)]) -> the shard parts
    (tables.shard_parts) of its output tables, sinks named by folder (`pairs`, `pairs/_rejects`, ...), and the
    bucket's counts tagged COUNTS.
    Two buckets run at once (polars releases the GIL; a bucket's Python parts then overlap the other's)."""

    def __init__(self, cfg: CoreConfig, sinks: dict[str, TableSink], spill_dir: str):
        super().__init__(threads=2)
        self.cfg = cfg
        self.sinks = sinks
        self.spill_dir = spill_dir

    def work(self, element):
        _, tagged = element
        parts: dict[str, list[pl.DataFrame]] = {"rollouts": [], "prompts": [], "labels": []}
        flags: dict[str, tuple[str, str]] = {}
        for tag, value in tagged:  # in any order: the core's results do not depend on the order of rows
            if tag == FLAGS:
                flags.update(value)
            else:
                parts[tag].append(load_frame(value))
        schema = ROLLOUT_V3 if self.cfg.trajectories else ROLLOUT_V2
        rollouts = concat(parts["rollouts"], schema, sample_columns(self.cfg.trajectories))
        prompts = concat(parts["prompts"], ROLLOUT_V2, PROMPT_COLUMNS)
        labels = concat(parts["labels"], LABEL_V1, LABEL_COLUMNS)
        result = assemble_bucket(rollouts, labels, flags, self.cfg, prompts)
        outputs = [*result.tables.items(), *((f"{name}/_rejects", t) for name, t in result.rejects.items())]
        spilled = [part for name, table in outputs for part in shard_parts(name, table, self.sinks, self.spill_dir)]
        return spilled, result.counts

    def emit(self, result):
        spilled, counts = result
        yield from spilled
        for key, value in counts.items():
            beam.metrics.Metrics.counter(STAGE, key).inc(value)
        yield beam.pvalue.TaggedOutput(COUNTS, counts)


def concat(frames: list[pl.DataFrame], schema: pa.Schema, columns: tuple[str, ...]) -> pl.DataFrame:
    """One frame of the parts, in one chunk (a join on a frame of several chunks took twice as long)."""
    return pl.concat([f.select(columns) for f in frames], rechunk=True) if frames else empty_frame(schema, columns)


def sum_counts(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    """The buckets' counts, summed (Beam CombineGlobally)."""
    total: Counter[str] = Counter()
    for c in counts:
        total.update(c)
    return dict(sorted(total.items()))
