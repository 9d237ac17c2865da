"""Stage `assemble`: aggregate each rollout's labels into one reward, filter, and build the datasets in data/datasets/

_rewards/: one REWARD_V1 row per rollout: reward, correctness, confidence, named score vector and `status` (kept or
  why outputs may not use it). A `_` folder: validate reads it, export does not publish it.
pairs/: PAIR_V2 preference pairs by the strategies in params `assemble.pairs`.
rl/: RL_V1 prompts with their pass rate and difficulty. sft/: SFT_V1 best verified rollouts per prompt.
prm/: TRL stepwise (PRM_V1) rows from the step labels of every steps labeler in params `steps`, one row per
  (steps labeler, rollout); written only when `steps` names at least one labeler.
Each folder has `_rejects/` (every prompt, pair or rollout an output does not use, with a reason) and a manifest.

How it scales: prompt-level filters (duplicates, contamination) run once over all prompt texts, beside the reading of
the shards; everything else runs per bucket of whole prompts on polars frames (transforms/aggregate), so Beam moves a
few file paths per bucket, not a Python dict per row, and buckets spread over workers on a distributed runner.
"""

import argparse
import dataclasses
import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import apache_beam as beam
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from rewardmill.pipelines.config import ConfigError, load_section, read_params
from rewardmill.pipelines.conservation import (
    ConservationError,
    distinct_ids,
    id_frame,
    reconcile,
    reject_rows,
)
from rewardmill.pipelines.stage import (
    REJECTS_DIR,
    StageTimer,
    absolute_args,
    atomic_output,
    count_rows,
    load_beam_config,
    reject,
    run_pipeline,
    setup_logging,
    write_manifest,
    write_rejects,
)
from rewardmill.schemas import (
    LABEL_V1,
    PAIR_V2,
    PRM_V1,
    REJECT_V1,
    REWARD_V1,
    RL_V1,
    ROLLOUT_V2,
    SFT_V1,
    STEP_LABEL_V1,
)
from rewardmill.transforms.aggregate.bucket import (
    PROMPT_COLUMNS,
    ROLLOUT_COLUMNS,
    SAMPLE_COLUMNS,
    CoreConfig,
    assemble_bucket,
)
from rewardmill.transforms.aggregate.prompt_flags import FiltersConfig, prompt_flags, user_text
from rewardmill.transforms.aggregate.reward import LABEL_COLUMNS, AggregateConfig
from rewardmill.transforms.aggregate.rl import RlConfig
from rewardmill.transforms.aggregate.sft import SftConfig
from rewardmill.transforms.filters.contamination import load_benchmarks
from rewardmill.transforms.io import storage
from rewardmill.transforms.io.frames import empty_frame, load_frame, read_frame, spill_frame
from rewardmill.transforms.io.json_file import WriteJson, pop_json
from rewardmill.transforms.io.parquet import ReadStageOutput, WriteSortedParquet, list_shards, read_table
from rewardmill.transforms.io.tables import (
    ReadStageTables,
    TableSink,
    WriteTables,
    retain_freed_memory,
    shard_parts,
    stage_shards,
)
from rewardmill.transforms.io.threads import ThreadedDoFn, concurrently
from rewardmill.transforms.pairing.balance import balance_pairs_output
from rewardmill.transforms.pairing.strategies import PairsConfig
from rewardmill.transforms.steps.prm_rows import build_prm_row

STAGE = "assemble"
REJECTED = "rejected"
COUNTS = "counts"
OUTPUTS = {  # folder -> (schema, sort key columns)
    "_rewards": (REWARD_V1, ("rollout_id",)),
    "pairs": (PAIR_V2, ("pair_id",)),
    "rl": (RL_V1, ("prompt_id",)),
    "sft": (SFT_V1, ("rollout_id",)),
}
REJECT_KEY = ("row_id", "reason", "stage")
FLAGS = "flags"  # the tag of a bucket's prompt flags among its tagged parts
SCRATCH = "_scratch"  # tables crossing shuffles as files (transforms/io/tables.spill_table); deleted when done
COUNTS_FILE = "_counts.json"  # the buckets' summed counts; main() moves them into the manifests

log = logging.getLogger("rewardmill")


@dataclass(frozen=True)
class AssembleConfig:
    """params `assemble`."""

    num_shards: int = 1  # shards per output folder
    # Buckets of whole prompts, each assembled in one piece: the units a cluster runner spreads over workers. The
    # outputs do not depend on it (a prompt's result never depends on its bucket-mates; files are sorted by id).
    buckets: int = 8
    aggregate: AggregateConfig = field(default_factory=AggregateConfig)
    filters: FiltersConfig = field(default_factory=FiltersConfig)
    pairs: PairsConfig = field(default_factory=PairsConfig)
    rl: RlConfig = field(default_factory=RlConfig)
    sft: SftConfig = field(default_factory=SftConfig)
    # PRM rows end at a rollout's first wrong step (Qwen's PRM convention: later steps say nothing once the prefix
    # is wrong); false keeps them, labelled False.
    prm_truncate_after_error: bool = True

    def __post_init__(self):
        if self.num_shards < 1 or self.buckets < 1:
            raise ValueError(f"num_shards and buckets must be >= 1, got {self.num_shards} and {self.buckets}")

    def core(self) -> CoreConfig:
        return CoreConfig(self.aggregate, self.filters.rollouts(), self.pairs, self.rl, self.sft)


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

    def __init__(self, kind: str, buckets: int, spill_dir: str):
        self.kind = kind
        self.buckets = buckets
        self.spill_dir = spill_dir

    def process(self, path: str):
        if self.kind == "labels":
            labels = read_frame(path, LABEL_V1, [*LABEL_COLUMNS, "prompt_id"])
            yield from split_by_bucket(labels, "labels", self.buckets, f"{self.spill_dir}/labels")
            return
        rollouts = read_frame(path, ROLLOUT_V2, ROLLOUT_COLUMNS)
        yield from prompt_parts(rollouts, self.buckets, f"{self.spill_dir}/prompts")
        samples = rollouts.select(SAMPLE_COLUMNS)
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

    def __init__(self, filters: FiltersConfig, buckets: int, spill_dir: str):
        super().__init__(threads=2)
        self.filters = filters
        self.buckets = buckets
        self.spill_dir = spill_dir

    def work(self, element):
        kind, value = element
        if kind == FLAGS:
            return kind, flags_by_bucket(value, self.filters, self.buckets)
        return kind, list(BucketShard(kind, self.buckets, self.spill_dir).process(value))

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
        rollouts = concat(parts["rollouts"], ROLLOUT_V2, SAMPLE_COLUMNS)
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
    total: Counter[str] = Counter()
    for c in counts:
        total.update(c)
    return dict(sorted(total.items()))


class MakePrmRows(beam.DoFn):
    """(rollout_id, {rollouts, steps}) -> one PRM_V1 row per steps labeler that labeled the rollout.

    Input: the rollout (its ROLLOUT_COLUMNS hold the prompt fields build_prm_row reads) and its STEP_LABEL_V1 rows from
    every steps labeler. A (labeler, rollout) whose step labels cannot make a row is rejected with build_prm_row's
    reason; step labels without a rollout are rejected as `orphan_step_label`. Every (labeler, rollout) with step
    labels thus gives exactly one row or one reject, whose row_id is `<rollout_id>/<labeler>` (unique, so the
    rejects file is deterministic when two labelers fail on the same rollout).
    """

    def __init__(self, truncate_after_error: bool):
        self.truncate_after_error = truncate_after_error

    def process(self, element) -> Iterable[Any]:  # Any: rows and TaggedOutput rejects
        rollout_id, grouped = element
        rollouts = list(grouped["rollouts"])
        by_labeler: dict[str, list[dict]] = {}
        for step in grouped["steps"]:
            by_labeler.setdefault(step["labeler"], []).append(step)
        for labeler, steps in sorted(by_labeler.items()):
            row_id = f"{rollout_id}/{labeler}"
            if not rollouts:
                beam.metrics.Metrics.counter(STAGE, "prm_rejected_orphan_step_label").inc()
                detail = f"{len(steps)} step labels from {labeler} have no rollout"
                yield beam.pvalue.TaggedOutput(REJECTED, reject(STAGE, row_id, "orphan_step_label", detail))
                continue
            # A rollout row carries its prompt's fields (prompt_id, messages, task, split): it is the prompt too.
            row, rejected = build_prm_row(rollouts[0], rollouts[0], steps, self.truncate_after_error)
            if rejected is not None:
                beam.metrics.Metrics.counter(STAGE, f"prm_rejected_{rejected.reason}").inc()
                yield beam.pvalue.TaggedOutput(REJECTED, reject(STAGE, row_id, rejected.reason, rejected.detail))
                continue
            beam.metrics.Metrics.counter(STAGE, "prm_rows").inc()
            yield row


def rows_with_step_labels(table: pa.Table, labeled: list[str]) -> Iterable[tuple[str, dict]]:
    """(rollout_id, row) of the rollouts in `table` that have step labels: steps labelers label a sample, so the
    other rollouts never cross the join's shuffle."""
    chosen = table.filter(pc.is_in(table.column("rollout_id"), value_set=pa.array(labeled, pa.string())))
    for row in chosen.to_pylist():
        yield row["rollout_id"], row


class AssemblePrm(beam.PTransform):
    """Rollout tables (ROLLOUT_COLUMNS) + the step labels under `steps_dirs` -> PRM_V1 rows in `prm_dir`, their
    rejects in `prm_dir/_rejects/`."""

    def __init__(self, steps_dirs: list[str], prm_dir: str, truncate_after_error: bool, num_shards: int):
        super().__init__()
        self.steps_dirs = steps_dirs
        self.prm_dir = prm_dir
        self.truncate_after_error = truncate_after_error
        self.num_shards = num_shards

    def expand(self, rollout_tables):
        reads = [
            rollout_tables.pipeline | f"Read step labels {i}" >> ReadStageOutput(d, STEP_LABEL_V1)
            for i, d in enumerate(self.steps_dirs)
        ]
        steps = (
            tuple(reads)
            | "All step labels" >> beam.Flatten()
            | "Key step labels" >> beam.Map(lambda r: (r["rollout_id"], r))
        )
        labeled = steps | "Labeled rollout ids" >> beam.Keys() | "Distinct ids" >> beam.Distinct()
        rollouts = rollout_tables | "Rollouts with step labels" >> beam.FlatMap(
            rows_with_step_labels, beam.pvalue.AsList(labeled)
        )
        prm = (
            {"rollouts": rollouts, "steps": steps}
            | "Join step labels" >> beam.CoGroupByKey()
            | "PRM rows" >> beam.ParDo(MakePrmRows(self.truncate_after_error)).with_outputs(REJECTED, main="rows")
        )
        write_rejects(prm[REJECTED], self.prm_dir)
        return prm.rows | "Write PRM rows" >> WriteSortedParquet(
            self.prm_dir, PRM_V1, sort_key=lambda r: f"{r['labeler']}\x00{r['rollout_id']}", num_shards=self.num_shards
        )


def build(
    p, cfg: AssembleConfig, rollouts_dir: str, label_dirs: list[str], out_dir: str, steps_dirs: list[str] | None = None
) -> None:
    """The pipeline; big tables cross its shuffles as files under `out_dir/_scratch/` (main() deletes it)."""
    scratch = storage.join(out_dir, SCRATCH)
    rollout_shards = stage_shards(rollouts_dir)
    inputs = [(FLAGS, rollout_shards), *(("rollouts", path) for path in rollout_shards)]
    inputs += [("labels", path) for directory in label_dirs for path in stage_shards(directory)]
    parts = (
        p
        | "Input shards" >> beam.Create(inputs)
        | "Bucket inputs" >> beam.ParDo(BucketInputs(cfg.filters, cfg.buckets, scratch))
    )
    buckets = parts | "Group buckets" >> beam.GroupByKey()
    sinks = {}
    for name, (schema, key) in OUTPUTS.items():
        folder = storage.join(out_dir, name)
        sinks[name] = TableSink(folder, schema, key, cfg.num_shards)
        sinks[f"{name}/_rejects"] = TableSink(storage.join(folder, REJECTS_DIR), REJECT_V1, REJECT_KEY)
    core = cfg.core()  # balance_length runs once over all pairs, after the buckets (balance_pairs_output)
    core = dataclasses.replace(core, pairs=dataclasses.replace(core.pairs, balance_length=False))
    assemble = AssembleBucket(core, sinks, storage.join(scratch, "outputs"))
    results = buckets | "Assemble buckets" >> beam.ParDo(assemble).with_outputs(COUNTS, main="parts")
    _ = results.parts | "Write outputs" >> WriteTables(sinks, parts=True)
    _ = (
        results[COUNTS]
        | "Sum counts" >> beam.CombineGlobally(sum_counts)
        | "Write counts" >> beam.ParDo(WriteJson(storage.join(out_dir, COUNTS_FILE)))
    )
    if steps_dirs:
        rollout_tables = p | "Read rollouts" >> ReadStageTables(rollouts_dir, ROLLOUT_V2, list(ROLLOUT_COLUMNS))
        _ = rollout_tables | "PRM" >> AssemblePrm(
            steps_dirs, storage.join(out_dir, "prm"), cfg.prm_truncate_after_error, cfg.num_shards
        )


DISTINCT_IDS = {"_rewards": "rollout_id", "rl": "prompt_id", "sft": "prompt_id", "pairs": "pair_id"}  # output -> id


def check_conservation(
    out: str, counts: dict[str, int], rollouts_dir: str, label_dirs: list[str], steps_dirs: list[str]
) -> None:
    """The buckets saw every rollout and label, and every output holds what they made: `_rewards` a row per
    rollout; `rl` and `sft` a row or a reject per prompt; `pairs` the pairs written; `prm` a row or a reject per
    (steps labeler, labeled rollout)."""
    found = concurrently(  # the id reads are independent: two at a time
        {
            "prompts": partial(distinct_ids, rollouts_dir, ["prompt_id"]),
            **{name: partial(distinct_ids, storage.join(out, name), [key]) for name, key in DISTINCT_IDS.items()},
            **{f"{name}/_rejects": partial(reject_rows, storage.join(out, name)) for name in ("rl", "sft")},
        }
    )
    rollouts = count_rows(rollouts_dir)
    labels = sum(count_rows(d) for d in label_dirs)
    prompts = found["prompts"]
    reconcile(STAGE, inputs=rollouts, outputs=counts.get("rollouts", 0), rejects=0, unit="rollouts in the buckets")
    reconcile(STAGE, inputs=labels, outputs=counts.get("labels", 0), rejects=0, unit="labels in the buckets")
    reconcile(STAGE, inputs=prompts, outputs=counts.get("prompts", 0), rejects=0, unit="prompts in the buckets")
    reconcile(f"{STAGE} _rewards", inputs=rollouts, outputs=found["_rewards"], rejects=0, unit="rollouts")
    for name in ("rl", "sft"):
        reconcile(
            f"{STAGE} {name}",
            inputs=prompts,
            outputs=found[name],
            rejects=found[f"{name}/_rejects"],
            unit="prompts",
            allow_empty=True,
        )
    reconcile(
        f"{STAGE} pairs",
        inputs=counts.get("pairs_written", 0),
        outputs=found["pairs"],
        rejects=0,
        unit="pairs",
        allow_empty=True,
    )
    if steps_dirs:
        frames = [id_frame(d, ["rollout_id", "labeler"]) for d in steps_dirs]
        labeled = sum(f.unique().height for f in frames)
        prm = distinct_ids(storage.join(out, "prm"), ["rollout_id", "labeler"])
        reconcile(
            f"{STAGE} prm",
            inputs=labeled,
            outputs=prm,
            rejects=reject_rows(storage.join(out, "prm")),
            unit="(steps labeler, rollout) pairs",
            allow_empty=True,
        )


def step_labeler_names() -> list[str]:
    """The keys of params `steps` (sorted); [] when the section is absent or empty."""
    section = read_params().get("steps") or {}
    if not isinstance(section, dict):
        raise ConfigError(f"params.yaml: 'steps' must be a mapping of steps labelers, got {type(section).__name__}")
    return sorted(section)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rollouts", default="data/rollouts", help="the rollouts folder")
    parser.add_argument("--labels", default="data/labels", help="folder holding one subfolder per labeler")
    parser.add_argument("--steps", default="data/steps", help="folder holding one subfolder per steps labeler")
    parser.add_argument(
        "--out", default="data/datasets", help="the datasets folder to write (_rewards, pairs, rl, sft, prm)"
    )
    args = absolute_args(parser.parse_args(argv), "rollouts", "labels", "steps", "out")
    setup_logging()
    retain_freed_memory()
    beam_cfg = load_beam_config()
    cfg = load_section(AssembleConfig, STAGE)
    # Only the labelers in params count: DVC does not delete the outputs of a labeler removed from params.
    names = sorted((read_params().get("labelers") or {}).keys())
    if not names:
        raise SystemExit("params.yaml: `labelers` is empty; assemble needs at least one labeler")
    label_dirs = [storage.join(args.labels, n) for n in names]
    # Likewise only the steps labelers in params: no `steps` section (or an empty one) writes no prm/ folder.
    step_names = step_labeler_names()
    steps_dirs = [storage.join(args.steps, n) for n in step_names]
    try:
        cfg.aggregate.check_labelers(names)
    except ValueError as exc:
        raise ConfigError(f"params.yaml: 'assemble.aggregate': {exc}") from exc
    load_benchmarks(cfg.filters.decontaminate.files)  # a missing or malformed benchmark file fails before any work
    for directory, what in [(args.rollouts, "rollouts"), *((d, "labels") for d in label_dirs)]:
        storage.check_readable(directory, what)
    timer = StageTimer(STAGE)
    with atomic_output(args.out) as tmp:
        for name in [*OUTPUTS, *(["prm"] if steps_dirs else [])]:
            storage.make_folder(storage.join(tmp, name))
        run_pipeline(lambda p: build(p, cfg, args.rollouts, label_dirs, tmp, steps_dirs), beam_cfg)
        counts = pop_json(storage.join(tmp, COUNTS_FILE))
        if counts is None:
            raise ConservationError(f"{STAGE}: the runner did not run the buckets' counts; nothing was written")
        if cfg.pairs.balance_length:
            pairs_sink = TableSink(storage.join(tmp, "pairs"), PAIR_V2, OUTPUTS["pairs"][1], cfg.num_shards)
            rejects_sink = TableSink(storage.join(tmp, "pairs", REJECTS_DIR), REJECT_V1, REJECT_KEY)
            moved = balance_pairs_output(pairs_sink, rejects_sink, STAGE)
            if moved:
                counts["pairs_dropped"] = counts.get("pairs_dropped", 0) + moved
                counts["pairs_written"] = counts.get("pairs_written", 0) - moved
        concurrently(  # the scratch (a GiB on a million rollouts) goes while the outputs are counted
            {
                "scratch": partial(storage.remove_tree, storage.join(tmp, SCRATCH)),
                "conservation": partial(check_conservation, tmp, counts, args.rollouts, label_dirs, steps_dirs),
            }
        )
        inputs = {"rollouts": args.rollouts, **{f"labels/{n}": d for n, d in zip(names, label_dirs, strict=True)}}
        common = {
            "labelers": names,
            "gates": list(cfg.aggregate.gates),  # the rule verifiers: the exported card's GRPO reward functions
            "labeler_versions": labeler_versions(storage.join(tmp, "_rewards")),
            "counts": counts,
        }
        pair_types = {"pair_types": value_counts(storage.join(tmp, "pairs"), "pair_type")}
        manifests = concurrently(  # each hashes the inputs (hashlib releases the GIL): two at a time
            {
                name: partial(
                    write_manifest,
                    storage.join(tmp, name),
                    stage=STAGE,
                    schema=schema,
                    config=cfg,
                    inputs=inputs,
                    extra={**common, **pair_types} if name == "pairs" else common,
                )
                for name, (schema, _) in OUTPUTS.items()
            }
        )
        for name, manifest in manifests.items():
            log.info("%s: %s: %d rows, rejects %s", STAGE, name, manifest["rows"], manifest["rejects"])
        if steps_dirs:
            methods = {
                n: ((read_params().get("steps") or {}).get(n) or {}).get("config", {}).get("method")
                for n in step_names
            }
            manifests["prm"] = write_manifest(
                storage.join(tmp, "prm"),
                stage=STAGE,
                schema=PRM_V1,
                config=cfg,
                inputs={
                    "rollouts": args.rollouts,
                    **{f"steps/{n}": d for n, d in zip(step_names, steps_dirs, strict=True)},
                },
                extra={"step_labelers": step_names, "step_methods": methods},
            )
            log.info("%s: prm: %d rows, rejects %s", STAGE, manifests["prm"]["rows"], manifests["prm"]["rejects"])
    timer.done(manifests["pairs"])


def labeler_versions(rewards_dir: str) -> dict[str, list[str]]:
    """labeler -> the versions that scored rollouts (from `label_sources`, "labeler@version")."""
    versions: dict[str, set[str]] = {}
    for path in list_shards(rewards_dir):
        sources = pl.from_arrow(read_table(path, columns=["label_sources"]))["label_sources"]
        sources = sources.explode().drop_nulls().unique()
        for source in sources.to_list():
            labeler, _, version = source.rpartition("@")
            versions.setdefault(labeler, set()).add(version)
    return {k: sorted(v) for k, v in sorted(versions.items())}


def value_counts(directory: str, column: str) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for path in list_shards(directory):
        for item in pc.value_counts(read_table(path, columns=[column]).column(column)).to_pylist():
            counts[item["values"]] += item["counts"]
    return dict(sorted(counts.items()))


if __name__ == "__main__":
    main()
