"""Stage `assemble`: aggregate each rollout's labels into one reward, filter, and build the datasets in data/datasets/

_rewards/: one REWARD_V1 row per rollout: reward, correctness, confidence, named score vector and `status` (kept or
  why outputs may not use it). A `_` folder: validate reads it, export does not publish it.
pairs/: PAIR_V2 preference pairs by the strategies in params `assemble.pairs`.
rl/: RL_V1 prompts with their pass rate and difficulty. sft/: SFT_V1 best verified rollouts per prompt.
prm/: TRL stepwise (PRM_V1) rows from the step labels of every steps labeler in params `steps`, one row per
  (steps labeler, rollout), and with `prm_turns` one row per trajectory (labeler `turns`: its assistant turns as
  steps, transforms/steps/turn_prm.py); written only when there is either.
Each folder has `_rejects/` (every prompt, pair or rollout an output does not use, with a reason) and a manifest.

How it scales: prompt-level filters (duplicates, contamination) run once over all prompt texts, beside the reading of
the shards; everything else runs per bucket of whole prompts on polars frames (transforms/aggregate), so Beam moves a
few file paths per bucket, not a Python dict per row, and buckets spread over workers on a distributed runner
(the Beam steps: transforms/aggregate/beam.py; PRM rows: transforms/aggregate/prm.py).
"""

import argparse
import dataclasses
import logging
from dataclasses import dataclass, field
from functools import partial

import apache_beam as beam
import polars as pl

from rewardmill.pipelines.assemble_outputs import (
    OUTPUTS,
    STAGE,
    check_conservation,
    conservation_reads,
    manifest_reads,
    outputs,
    write_manifests,
)
from rewardmill.schemas import LABEL_V1, REJECT_V1
from rewardmill.transforms.aggregate.beam import COUNTS, AssembleBucket, BucketInputs, bucket_inputs, sum_counts
from rewardmill.transforms.aggregate.bucket import CoreConfig, rollout_read
from rewardmill.transforms.aggregate.measured_weights import WeightUsed, deciding_gate, resolve_weights, weight_record
from rewardmill.transforms.aggregate.prm import AssemblePrm
from rewardmill.transforms.aggregate.prompt_flags import FiltersConfig
from rewardmill.transforms.aggregate.reward import LABEL_COLUMNS, MEASURED, AggregateConfig, objectives
from rewardmill.transforms.aggregate.rl import RlConfig
from rewardmill.transforms.aggregate.rubric_validation import RubricValidationConfig, validate_labeler
from rewardmill.transforms.aggregate.sft import SftConfig
from rewardmill.transforms.config import ConfigError, load_section, read_params
from rewardmill.transforms.filters.contamination import load_benchmarks
from rewardmill.transforms.io import storage
from rewardmill.transforms.io.frames import empty_frame, read_frame
from rewardmill.transforms.io.json_file import WriteJson, pop_json
from rewardmill.transforms.io.parquet import list_shards
from rewardmill.transforms.io.tables import ReadStageTables, TableSink, WriteTables, retain_freed_memory
from rewardmill.transforms.io.threads import concurrently
from rewardmill.transforms.judges import probes
from rewardmill.transforms.pairing.balance import balance_pairs_output
from rewardmill.transforms.pairing.by_aspect import AspectPairsConfig
from rewardmill.transforms.pairing.strategies import PairsConfig
from rewardmill.transforms.planning.spent import per_row
from rewardmill.transforms.stage.conservation import ConservationError
from rewardmill.transforms.stage.outputs import (
    MANIFEST,
    REJECTS_DIR,
    atomic_output,
    manifest_or_none,
    read_manifest,
    trajectory_count,
    write_json_atomic,
)
from rewardmill.transforms.stage.runner import StageTimer, absolute_args, load_beam_config, run_pipeline, setup_logging
from rewardmill.transforms.steps.turn_prm import LABELER as TURNS_LABELER

REJECT_KEY = ("row_id", "reason", "stage")
VALIDATION_COLUMNS = ("rollout_id", "prompt_id", "labeler", "aspect", "score", "confidence", "verdict")
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
    # generated rubrics measured against the trusted labelers' preferences (the gates by default); below min_accuracy
    # flagged (and dropped with drop)
    rubric_validation: RubricValidationConfig = field(default_factory=RubricValidationConfig)
    # per-aspect pairs (data/datasets/pairs_by_aspect): each named score's best rollout against its worst
    pairs_by_aspect: AspectPairsConfig = field(default_factory=AspectPairsConfig)
    # PRM rows end at a rollout's first wrong step (Qwen's PRM convention: later steps say nothing once the prefix
    # is wrong); false keeps them, labelled False.
    prm_truncate_after_error: bool = True
    # Rollouts from an environment: one turn-level PRM row per trajectory (its assistant turns as steps, labeled per
    # turn from the environment's records; never truncated: a later turn may recover).
    prm_turns: bool = True

    def __post_init__(self):
        if self.num_shards < 1 or self.buckets < 1:
            raise ValueError(f"num_shards and buckets must be >= 1, got {self.num_shards} and {self.buckets}")

    def core(self) -> CoreConfig:
        return CoreConfig(
            self.aggregate, self.filters.rollouts(), self.pairs, self.rl, self.sft, by_aspect=self.pairs_by_aspect
        )


def output_sinks(out_dir: str, num_shards: int, trajectories: bool = False) -> dict[str, TableSink]:
    """Each output folder and its `_rejects/`, as the sinks of the buckets' shard parts (`pairs`, `pairs/_rejects`)."""
    sinks = {}
    for name, (schema, key) in outputs(trajectories).items():
        folder = storage.join(out_dir, name)
        sinks[name] = TableSink(folder, schema, key, num_shards)
        sinks[f"{name}/_rejects"] = TableSink(storage.join(folder, REJECTS_DIR), REJECT_V1, REJECT_KEY)
    return sinks


def bucket_core(cfg: AssembleConfig, trajectories: bool = False) -> CoreConfig:
    """The buckets' config: balance_length runs once over all pairs, after the buckets (balance_pairs_output)."""
    core = cfg.core()
    pairs = dataclasses.replace(core.pairs, balance_length=False)
    return dataclasses.replace(core, pairs=pairs, trajectories=trajectories)


def build(
    p,
    cfg: AssembleConfig,
    rollouts_dir: str,
    label_dirs: list[str],
    out_dir: str,
    steps_dirs: list[str] | None = None,
    turns: bool = False,
    trajectories: bool = False,
    dropped_rubrics: tuple[tuple[str, str], ...] = (),
) -> None:
    """The pipeline; big tables cross its shuffles as files under `out_dir/_scratch/` (main() deletes it).
    `trajectories`: the rollouts are an environment's episodes (multi-turn outputs); `turns`: write their turn-level
    PRM rows."""
    scratch = storage.join(out_dir, SCRATCH)
    inputs = bucket_inputs(rollouts_dir, label_dirs)
    sinks = output_sinks(out_dir, cfg.num_shards, trajectories)
    core = dataclasses.replace(bucket_core(cfg, trajectories), dropped_rubrics=dropped_rubrics)
    assemble = AssembleBucket(core, sinks, storage.join(scratch, "outputs"))
    results = (
        p
        | "Input shards" >> beam.Create(inputs)
        | "Bucket inputs" >> beam.ParDo(BucketInputs(cfg.filters, cfg.buckets, scratch, core.trajectories))
        | "Group buckets" >> beam.GroupByKey()
        | "Assemble buckets" >> beam.ParDo(assemble).with_outputs(COUNTS, main="parts")
    )
    _ = results.parts | "Write outputs" >> WriteTables(sinks, parts=True)
    _ = (
        results[COUNTS]
        | "Sum counts" >> beam.CombineGlobally(sum_counts)
        | "Write counts" >> beam.ParDo(WriteJson(storage.join(out_dir, COUNTS_FILE)))
    )
    if steps_dirs or turns:
        rollout_tables = p | "Read rollouts" >> ReadStageTables(rollouts_dir, *rollout_read(turns))
        _ = rollout_tables | "PRM" >> AssemblePrm(
            steps_dirs or [], storage.join(out_dir, "prm"), cfg.prm_truncate_after_error, cfg.num_shards, turns
        )


def step_labeler_names() -> list[str]:
    """The keys of params `steps` (sorted); [] when the section is absent or empty."""
    section = read_params().get("steps") or {}
    if not isinstance(section, dict):
        raise ConfigError(f"params.yaml: 'steps' must be a mapping of steps labelers, got {type(section).__name__}")
    return sorted(section)


def check_judge_roles(label_dirs: dict[str, str], gates, overrides) -> None:
    """Refuse, before any work, a judge whose label stage measured an attack-probe false-positive rate above its
    max_probe_fpr (the label manifest's `probes`) as a gate or an override: it would decide correctness."""
    aggregate = {"gates": list(gates), "overrides": dict(overrides)}
    for name, directory in label_dirs.items():
        if name in aggregate["gates"] or name in aggregate["overrides"]:
            try:
                report = read_manifest(directory).get("probes")
            except FileNotFoundError:  # a folder written outside the label stage: no probe report to hold it to
                continue
            if report:
                probes.check_roles(name, report, aggregate)


def reward_weights(aggregate: AggregateConfig, label_dirs: dict[str, str]) -> dict[str, WeightUsed]:
    """The weight each labeler in `assemble.aggregate.weights` gets in this run: its number, or for `measured`, its
    agreement with the deciding gate on this run's labels (read here, in the driver, once: the buckets then score
    with fixed numbers, so no bucket's weights depend on which prompts it holds)."""
    measured = {name for name, w in aggregate.weights.items() if w == MEASURED}
    read = measured | set(aggregate.gates) if measured else set()  # nothing to read when every weight is a number
    wanted = [d for name, d in sorted(label_dirs.items()) if name in read]
    frames = [read_frame(path, LABEL_V1, LABEL_COLUMNS) for d in wanted for path in list_shards(d)]
    labels = pl.concat(frames) if frames else empty_frame(LABEL_V1, LABEL_COLUMNS)
    used = resolve_weights(labels, aggregate)
    for name, w in used.items():
        log.info("%s: weight of %s: %s (%s: %s)", STAGE, name, w.weight, w.source, w.reason)
    return used


def rubric_validation(cfg: AssembleConfig, label_dirs: dict[str, str]) -> tuple[dict, tuple[tuple[str, str], ...]]:
    """Each labeler graded by a generated rubric set, measured against the trusted labelers' preferences (the gates
    unless rubric_validation.trusted names others; read here, in the driver, once, like the measured weights): its
    record, and the (labeler, prompt) rubrics to drop."""
    graded = {}
    for name, directory in label_dirs.items():  # the label stage records the rubric set it graded against
        try:
            chosen = read_manifest(directory).get("rubric_set")
        except FileNotFoundError:  # labels written outside the label stage: no rubric set to validate
            continue
        if chosen is not None:
            graded[name] = chosen
    trusted = cfg.rubric_validation.trusted_labelers(cfg.aggregate.gates)
    try:  # a typo in trusted fails even where no labeler grades against a rubric set yet
        cfg.rubric_validation.check_labelers(list(label_dirs), list(graded), cfg.aggregate.gates)
    except ValueError as exc:
        raise ConfigError(f"params.yaml: 'assemble.rubric_validation': {exc}") from exc
    if not graded:
        return {}, ()
    read = set(graded) | set(trusted)
    frames = [
        read_frame(p, LABEL_V1, VALIDATION_COLUMNS)
        for n, d in sorted(label_dirs.items())
        if n in read
        for p in list_shards(d)
    ]
    labels = pl.concat(frames) if frames else empty_frame(LABEL_V1, VALIDATION_COLUMNS)
    correct = deciding_gate(labels, trusted, cfg.aggregate.min_gate_confidence)
    record, dropped = {}, []
    for name, chosen in sorted(graded.items()):
        record[name], drop = validate_labeler(labels, name, chosen, correct, cfg.rubric_validation, trusted)
        dropped += [(name, prompt) for prompt in drop]
        r = record[name]
        log.info(
            "%s: rubric validation of %s (rubric set %s): accuracy %s on %d trusted pairs of %d rubrics; %d flagged, "
            "%d dropped",
            STAGE, name, chosen, r["accuracy"], r["pairs"], r["rubrics_validated"], r["flagged"], r["dropped"],
        )  # fmt: skip
    return record, tuple(dropped)


def record_driver_facts(
    out: str, manifests: dict[str, dict], used: dict[str, WeightUsed], rubrics: dict, goals: dict
) -> None:
    """Add `reward_weights` (measured_weights.weight_record) and `rubric_validation` to each output's manifest (what
    validate's metrics and the card show), and `objectives` (reward.objectives: the card's GRPO reward functions,
    their weights and TRL's aggregation)."""
    record = {"reward_weights": weight_record(used), "objectives": goals}
    record |= {"rubric_validation": rubrics} if rubrics else {}
    for name in OUTPUTS:
        manifests[name] = {**manifests[name], **record}
        write_json_atomic(storage.join(out, name, MANIFEST), manifests[name])


def record_spend(out: str, manifests: dict[str, dict], rollouts: str, labels: dict, steps: dict) -> None:
    """Add `spend` to each dataset config's manifest (transforms/planning/spent.py per_row): what its rows rest on,
    per accepted row. pairs, rl and sft rest on the sampling, every label stage and the rubric sets those grade
    against (each set once, however many label stages read it: their manifests carry its spend); prm on the sampling
    and the steps stages."""

    def spend_of(directory: str) -> dict | None:  # None: a folder written outside its stage records none
        return (manifest_or_none(directory) or {}).get("spend")

    sampled = {"rollouts": spend_of(rollouts)}
    label_manifests = {n: manifest_or_none(d) or {} for n, d in labels.items()}
    labeled = sampled | {f"label@{n}": m.get("spend") for n, m in label_manifests.items()}
    for label in label_manifests.values():
        if label.get("rubric_set"):
            labeled[f"rubrics@{label['rubric_set']}"] = label.get("rubric_set_spend")
    stepped = sampled | {f"steps@{n}": spend_of(d) for n, d in steps.items()}
    for name, manifest in manifests.items():
        if name == "_rewards":
            continue
        spend = per_row(stepped if name == "prm" else labeled, manifest["rows"])
        manifests[name] = {**manifest, "spend": spend}
        write_json_atomic(storage.join(out, name, MANIFEST), manifests[name])


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
    episodes = trajectory_count(args.rollouts)  # multi-turn outputs when > 0
    turn_rows = episodes if cfg.prm_turns else 0  # the turn-level PRM rows to make
    if turn_rows and TURNS_LABELER in step_names:
        raise ConfigError(
            f"params.yaml: steps.{TURNS_LABELER}: the turn-level PRM rows of trajectories are labeler "
            f"'{TURNS_LABELER}'; rename the steps entry, or set assemble.prm_turns: false"
        )
    if episodes and cfg.pairs_by_aspect.aspects:
        raise ConfigError(
            "params.yaml: assemble.pairs_by_aspect: per-aspect pairs of multi-turn trajectories are not built yet; "
            "set aspects: [] for rollouts an environment ran"
        )
    try:
        cfg.aggregate.check_labelers(names)
    except ValueError as exc:
        raise ConfigError(f"params.yaml: 'assemble.aggregate': {exc}") from exc
    load_benchmarks(cfg.filters.decontaminate.files)  # a missing or malformed benchmark file fails before any work
    for directory, what in [(args.rollouts, "rollouts"), *((d, "labels") for d in label_dirs)]:
        storage.check_readable(directory, what)
    check_judge_roles(dict(zip(names, label_dirs, strict=True)), cfg.aggregate.gates, cfg.aggregate.overrides)
    timer = StageTimer(STAGE)
    used = reward_weights(cfg.aggregate, dict(zip(names, label_dirs, strict=True)))
    numbers = {name: w.weight for name, w in used.items()}
    validated, dropped = rubric_validation(cfg, dict(zip(names, label_dirs, strict=True)))
    run_cfg = dataclasses.replace(cfg, aggregate=cfg.aggregate.with_weights(numbers))  # manifests record `cfg`
    with atomic_output(args.out) as tmp:
        for name in [*OUTPUTS, *(["prm"] if steps_dirs or turn_rows else [])]:
            storage.make_folder(storage.join(tmp, name))
        run_pipeline(
            lambda p: build(
                p, run_cfg, args.rollouts, label_dirs, tmp, steps_dirs, bool(turn_rows), episodes > 0, dropped
            ),
            beam_cfg,
        )
        counts = pop_json(storage.join(tmp, COUNTS_FILE))
        if counts is None:
            raise ConservationError(f"{STAGE}: the runner did not run the buckets' counts; nothing was written")
        if cfg.pairs.balance_length:
            counts = balance_pair_lengths(tmp, cfg.num_shards, counts, episodes > 0)
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
        check_conservation(tmp, counts, found, args.rollouts, label_dirs, steps_dirs, turn_rows)
        manifests = write_manifests(tmp, cfg, counts, found, labels, steps, turn_rows, episodes > 0)
        if validated:  # the labels the dropped rubrics took out of the reward, counted by the buckets
            validated = {"labelers": validated, "labels_dropped": counts.get("labels_dropped_rubric", 0)}
        record_driver_facts(tmp, manifests, used, validated, objectives(run_cfg.aggregate))
        record_spend(tmp, manifests, args.rollouts, labels, steps)
    timer.done(manifests["pairs"])


def balance_pair_lengths(out: str, num_shards: int, counts: dict[str, int], trajectories: bool) -> dict[str, int]:
    """params `assemble.pairs.balance_length`, once over all the buckets' pairs: `counts` with the pairs it moved to
    the rejects."""
    sinks = output_sinks(out, num_shards, trajectories)
    moved = balance_pairs_output(sinks["pairs"], sinks["pairs/_rejects"], STAGE)
    if not moved:
        return counts
    return {
        **counts,
        "pairs_dropped": counts.get("pairs_dropped", 0) + moved,
        "pairs_written": counts.get("pairs_written", 0) - moved,
    }


if __name__ == "__main__":
    main()
