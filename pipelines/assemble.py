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
few file paths per bucket, not a Python dict per row, and buckets spread over workers on a distributed runner
(the Beam steps: transforms/aggregate/beam.py; PRM rows: transforms/aggregate/prm.py).
"""

import argparse
import dataclasses
import logging
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import apache_beam as beam
import polars as pl
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
    digest_path,
    load_beam_config,
    run_pipeline,
    setup_logging,
    write_manifest,
)
from rewardmill.schemas import PAIR_V2, PRM_V1, REJECT_V1, REWARD_V1, RL_V1, ROLLOUT_V2, SFT_V1
from rewardmill.transforms.aggregate.beam import COUNTS, AssembleBucket, BucketInputs, bucket_inputs, sum_counts
from rewardmill.transforms.aggregate.bucket import ROLLOUT_COLUMNS, CoreConfig
from rewardmill.transforms.aggregate.prm import AssemblePrm
from rewardmill.transforms.aggregate.prompt_flags import FiltersConfig
from rewardmill.transforms.aggregate.reward import AggregateConfig
from rewardmill.transforms.aggregate.rl import RlConfig
from rewardmill.transforms.aggregate.sft import SftConfig
from rewardmill.transforms.filters.contamination import load_benchmarks
from rewardmill.transforms.io import storage
from rewardmill.transforms.io.json_file import WriteJson, pop_json
from rewardmill.transforms.io.parquet import list_shards, read_table
from rewardmill.transforms.io.tables import ReadStageTables, TableSink, WriteTables, retain_freed_memory
from rewardmill.transforms.io.threads import concurrently
from rewardmill.transforms.pairing.balance import balance_pairs_output
from rewardmill.transforms.pairing.strategies import PairsConfig

STAGE = "assemble"
OUTPUTS = {  # folder -> (schema, sort key columns)
    "_rewards": (REWARD_V1, ("rollout_id",)),
    "pairs": (PAIR_V2, ("pair_id",)),
    "rl": (RL_V1, ("prompt_id",)),
    "sft": (SFT_V1, ("rollout_id",)),
}
REJECT_KEY = ("row_id", "reason", "stage")
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


def output_sinks(out_dir: str, num_shards: int) -> dict[str, TableSink]:
    """Each output folder and its `_rejects/`, as the sinks of the buckets' shard parts (`pairs`, `pairs/_rejects`)."""
    sinks = {}
    for name, (schema, key) in OUTPUTS.items():
        folder = storage.join(out_dir, name)
        sinks[name] = TableSink(folder, schema, key, num_shards)
        sinks[f"{name}/_rejects"] = TableSink(storage.join(folder, REJECTS_DIR), REJECT_V1, REJECT_KEY)
    return sinks


def bucket_core(cfg: AssembleConfig) -> CoreConfig:
    """The buckets' config: balance_length runs once over all pairs, after the buckets (balance_pairs_output)."""
    core = cfg.core()
    return dataclasses.replace(core, pairs=dataclasses.replace(core.pairs, balance_length=False))


def build(
    p, cfg: AssembleConfig, rollouts_dir: str, label_dirs: list[str], out_dir: str, steps_dirs: list[str] | None = None
) -> None:
    """The pipeline; big tables cross its shuffles as files under `out_dir/_scratch/` (main() deletes it)."""
    scratch = storage.join(out_dir, SCRATCH)
    inputs = bucket_inputs(rollouts_dir, label_dirs)
    sinks = output_sinks(out_dir, cfg.num_shards)
    assemble = AssembleBucket(bucket_core(cfg), sinks, storage.join(scratch, "outputs"))
    results = (
        p
        | "Input shards" >> beam.Create(inputs)
        | "Bucket inputs" >> beam.ParDo(BucketInputs(cfg.filters, cfg.buckets, scratch))
        | "Group buckets" >> beam.GroupByKey()
        | "Assemble buckets" >> beam.ParDo(assemble).with_outputs(COUNTS, main="parts")
    )
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


OUTPUT_IDS = {"_rewards": "rollout_id", "rl": "prompt_id", "sft": "prompt_id", "pairs": "pair_id"}  # output -> id


def conservation_reads(out: str, rollouts_dir: str) -> dict[str, partial]:
    """The reads check_conservation needs, as named calls (main() runs them beside the manifests' reads).

    Where an output's id is its sort key, its ids are its rows as the files' footers count them: the writer refuses
    a shard whose key repeats (tables.sorted_by_key) and puts every key in the one shard its hash names, so those
    rows are distinct ids (reading a million ids back to count them again cost half a second). sft's rows are
    rollouts, counted by their distinct prompts."""

    def ids(name: str, column: str) -> partial:
        folder = storage.join(out, name)
        if OUTPUTS[name][1] == (column,):
            return partial(count_rows, folder)
        return partial(distinct_ids, folder, [column])

    return {
        "ids/prompts": partial(distinct_ids, rollouts_dir, ["prompt_id"]),
        **{f"ids/{name}": ids(name, column) for name, column in OUTPUT_IDS.items()},
        **{f"ids/{name}/_rejects": partial(reject_rows, storage.join(out, name)) for name in ("rl", "sft")},
    }


def check_conservation(
    out: str,
    counts: dict[str, int],
    found: dict[str, int],
    rollouts_dir: str,
    label_dirs: list[str],
    steps_dirs: list[str],
) -> None:
    """The buckets saw every rollout and label, and every output holds what they made: `_rewards` a row per
    rollout; `rl` and `sft` a row or a reject per prompt; `pairs` the pairs written; `prm` a row or a reject per
    (steps labeler, labeled rollout). `found`: the results of conservation_reads."""
    rollouts = count_rows(rollouts_dir)
    labels = sum(count_rows(d) for d in label_dirs)
    prompts = found["ids/prompts"]
    reconcile(STAGE, inputs=rollouts, outputs=counts.get("rollouts", 0), rejects=0, unit="rollouts in the buckets")
    reconcile(STAGE, inputs=labels, outputs=counts.get("labels", 0), rejects=0, unit="labels in the buckets")
    reconcile(STAGE, inputs=prompts, outputs=counts.get("prompts", 0), rejects=0, unit="prompts in the buckets")
    reconcile(f"{STAGE} _rewards", inputs=rollouts, outputs=found["ids/_rewards"], rejects=0, unit="rollouts")
    for name in ("rl", "sft"):
        reconcile(
            f"{STAGE} {name}",
            inputs=prompts,
            outputs=found[f"ids/{name}"],
            rejects=found[f"ids/{name}/_rejects"],
            unit="prompts",
            allow_empty=True,
        )
    reconcile(
        f"{STAGE} pairs",
        inputs=counts.get("pairs_written", 0),
        outputs=found["ids/pairs"],
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
            counts = balance_pair_lengths(tmp, cfg.num_shards, counts)
        labels = dict(zip(names, label_dirs, strict=True))
        steps = dict(zip(step_names, steps_dirs, strict=True))
        # The outputs' ids, the inputs' digests and the manifests' facts are independent reads (polars, pyarrow and
        # hashlib release the GIL): two at a time, while the scratch (a GiB on a million rollouts) goes.
        found = concurrently(
            {
                **conservation_reads(tmp, args.rollouts),
                **manifest_reads(tmp, args.rollouts, labels, steps),
                "scratch": partial(storage.remove_tree, storage.join(tmp, SCRATCH)),
            }
        )
        check_conservation(tmp, counts, found, args.rollouts, label_dirs, steps_dirs)
        manifests = write_manifests(tmp, cfg, counts, found, labels, steps)
    timer.done(manifests["pairs"])


def balance_pair_lengths(out: str, num_shards: int, counts: dict[str, int]) -> dict[str, int]:
    """params `assemble.pairs.balance_length`, once over all the buckets' pairs: `counts` with the pairs it moved to
    the rejects."""
    sinks = output_sinks(out, num_shards)
    moved = balance_pairs_output(sinks["pairs"], sinks["pairs/_rejects"], STAGE)
    if not moved:
        return counts
    return {
        **counts,
        "pairs_dropped": counts.get("pairs_dropped", 0) + moved,
        "pairs_written": counts.get("pairs_written", 0) - moved,
    }


def manifest_reads(out: str, rollouts_dir: str, labels: dict[str, str], steps: dict[str, str]) -> dict[str, partial]:
    """The reads write_manifests needs, as named calls: each input's digest (every manifest lists the same inputs:
    each is hashed once), the labeler versions behind the rewards and the pairs' types."""
    inputs = {"rollouts": rollouts_dir, **{f"labels/{n}": d for n, d in labels.items()}}
    inputs |= {f"steps/{n}": d for n, d in steps.items()}
    return {
        "labeler_versions": partial(labeler_versions, storage.join(out, "_rewards")),
        "pair_types": partial(value_counts, storage.join(out, "pairs"), "pair_type"),
        **{f"digest/{name}": partial(digest_path, path) for name, path in inputs.items()},
    }


def write_manifests(
    out: str,
    cfg: AssembleConfig,
    counts: dict[str, int],
    found: dict[str, Any],
    labels: dict[str, str],
    steps: dict[str, str],
) -> dict[str, dict]:
    """The manifest of each output folder (and of prm/ when `steps`, steps labeler -> its folder, names one);
    `labels`: labeler -> its folder; `found`: the results of manifest_reads."""
    digests = {name.removeprefix("digest/"): d for name, d in found.items() if name.startswith("digest/")}
    labeled = {name: d for name, d in digests.items() if not name.startswith("steps/")}
    stepped = {name: d for name, d in digests.items() if name == "rollouts" or name.startswith("steps/")}
    common = {
        "labelers": list(labels),
        "gates": list(cfg.aggregate.gates),  # the rule verifiers: the exported card's GRPO reward functions
        "labeler_versions": found["labeler_versions"],
        "counts": counts,
    }
    pair_types = {"pair_types": found["pair_types"]}
    manifests = {
        name: write_manifest(
            storage.join(out, name),
            stage=STAGE,
            schema=schema,
            config=cfg,
            input_digests=labeled,
            extra={**common, **pair_types} if name == "pairs" else common,
        )
        for name, (schema, _) in OUTPUTS.items()
    }
    for name, manifest in manifests.items():
        log.info("%s: %s: %d rows, rejects %s", STAGE, name, manifest["rows"], manifest["rejects"])
    if steps:
        section = read_params().get("steps") or {}
        methods = {n: (section.get(n) or {}).get("config", {}).get("method") for n in steps}
        manifests["prm"] = write_manifest(
            storage.join(out, "prm"),
            stage=STAGE,
            schema=PRM_V1,
            config=cfg,
            input_digests=stepped,
            extra={"step_labelers": list(steps), "step_methods": methods},
        )
        log.info("%s: prm: %d rows, rejects %s", STAGE, manifests["prm"]["rows"], manifests["prm"]["rejects"])
    return manifests


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
