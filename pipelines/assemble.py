"""Stage `assemble`: join rollouts with all labels, score, and build the datasets under data/datasets/.

pairs/: preference pairs from the labels of every labeler in params `labelers` (always written).
prm/: TRL stepwise (PRM_V1) rows from the step labels of every steps labeler in params `steps`, one row per
(steps labeler, rollout); written only when `steps` names at least one labeler.
"""

import argparse
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apache_beam as beam

from rewardmill.pipelines.config import ConfigError, load_section, read_params
from rewardmill.pipelines.stage import (
    StageTimer,
    atomic_output,
    load_beam_config,
    reject,
    run_pipeline,
    setup_logging,
    write_manifest,
    write_rejects,
)
from rewardmill.schemas import LABEL_V1, PAIR_V1, PRM_V1, ROLLOUT_V2, STEP_LABEL_V1
from rewardmill.transforms.io.parquet import ReadStageOutput, WriteSortedParquet
from rewardmill.transforms.pairing.best_worst import PairingConfig, best_vs_worst
from rewardmill.transforms.pairing.scores import combine
from rewardmill.transforms.steps.prm_rows import build_prm_row

STAGE = "assemble"
REJECTED = "rejected"
PAIR_STRATEGIES = ("best_vs_worst",)

log = logging.getLogger("rewardmill")


@dataclass(frozen=True)
class AssembleConfig:
    """params `assemble`."""

    min_margin: float = 0.0
    pair_strategy: str = "best_vs_worst"
    drop_truncated: bool = False
    num_shards: int = 1
    # PRM rows end at a rollout's first wrong step (Qwen's PRM convention: later steps say nothing once the prefix
    # is wrong); false keeps them, labelled False.
    prm_truncate_after_error: bool = True

    def __post_init__(self):
        if self.pair_strategy not in PAIR_STRATEGIES:
            raise ValueError(f"pair_strategy must be one of {PAIR_STRATEGIES}, got {self.pair_strategy!r}")

    def pairing(self) -> PairingConfig:
        return PairingConfig(min_margin=self.min_margin, drop_truncated=self.drop_truncated)


class ScoreRollout(beam.DoFn):
    """(rollout_id, {rollouts, labels}) -> (prompt_id, (rollout, RolloutScore)); orphan labels are rejected."""

    def process(self, element) -> Iterable[Any]:  # Any: Beam cannot infer KV through TaggedOutput
        rollout_id, grouped = element
        rollouts, labels = list(grouped["rollouts"]), list(grouped["labels"])
        if not rollouts:
            for lab in labels:
                yield beam.pvalue.TaggedOutput(
                    REJECTED, reject(STAGE, rollout_id, "orphan_label", f"label from {lab['labeler']} has no rollout")
                )
            return
        rollout = rollouts[0]
        yield rollout["prompt_id"], (rollout, combine(rollout_id, labels))


class MakePairs(beam.DoFn):
    def __init__(self, cfg: PairingConfig):
        self.cfg = cfg

    def process(self, element):
        prompt_id, items = element
        items = sorted(items, key=lambda item: item[0]["rollout_id"])
        rollouts = [r for r, _ in items]
        scores = {s.rollout_id: s for _, s in items}
        pair, dropped = best_vs_worst(rollouts[0], rollouts, scores, self.cfg)
        for d in dropped:
            beam.metrics.Metrics.counter(STAGE, f"dropped_{d.reason}").inc()
            yield beam.pvalue.TaggedOutput(REJECTED, reject(STAGE, d.row_id, d.reason, d.detail))
        if pair is not None:
            yield pair


class MakePrmRows(beam.DoFn):
    """(rollout_id, {rollouts, steps}) -> one PRM_V1 row per steps labeler that labeled the rollout.

    Input: the rollout (ROLLOUT_V2 carries the prompt fields build_prm_row reads) and its STEP_LABEL_V1 rows from
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


class AssemblePrm(beam.PTransform):
    """Keyed rollouts (rollout_id, ROLLOUT_V2 row) + the step labels under `steps_dirs` -> PRM_V1 rows in `prm_dir`,
    their rejects in `prm_dir/_rejects/`."""

    def __init__(self, steps_dirs: list[str], prm_dir: str, truncate_after_error: bool, num_shards: int):
        super().__init__()
        self.steps_dirs = steps_dirs
        self.prm_dir = prm_dir
        self.truncate_after_error = truncate_after_error
        self.num_shards = num_shards

    def expand(self, rollouts):
        reads = [
            rollouts.pipeline | f"Read step labels {i}" >> ReadStageOutput(d, STEP_LABEL_V1)
            for i, d in enumerate(self.steps_dirs)
        ]
        steps = (
            tuple(reads)
            | "All step labels" >> beam.Flatten()
            | "Key step labels" >> beam.Map(lambda r: (r["rollout_id"], r))
        )
        prm = (
            {"rollouts": rollouts, "steps": steps}
            | "Join step labels" >> beam.CoGroupByKey()
            | "PRM rows" >> beam.ParDo(MakePrmRows(self.truncate_after_error)).with_outputs(REJECTED, main="rows")
        )
        write_rejects(prm[REJECTED], Path(self.prm_dir))
        return prm.rows | "Write PRM rows" >> WriteSortedParquet(
            self.prm_dir, PRM_V1, sort_key=lambda r: f"{r['labeler']}\x00{r['rollout_id']}", num_shards=self.num_shards
        )


def build(
    p, cfg: AssembleConfig, rollouts_dir: str, label_dirs: list[str], out_dir: str, steps_dirs: list[str] | None = None
) -> None:
    rollouts = (
        p
        | "Read rollouts" >> ReadStageOutput(rollouts_dir, ROLLOUT_V2)
        | "Key rollouts" >> beam.Map(lambda r: (r["rollout_id"], r))
    )
    label_reads = [p | f"Read labels {i}" >> ReadStageOutput(d, LABEL_V1) for i, d in enumerate(label_dirs)]
    labels = (
        tuple(label_reads) | "All labels" >> beam.Flatten() | "Key labels" >> beam.Map(lambda r: (r["rollout_id"], r))
    )
    scored = (
        {"rollouts": rollouts, "labels": labels}
        | "Join labels" >> beam.CoGroupByKey()
        | "Score" >> beam.ParDo(ScoreRollout()).with_outputs(REJECTED, main="scored")
    )
    pairs = (
        scored.scored
        | "Group by prompt" >> beam.GroupByKey()
        | "Pair" >> beam.ParDo(MakePairs(cfg.pairing())).with_outputs(REJECTED, main="pairs")
    )
    pairs_dir = Path(out_dir) / "pairs"
    _ = pairs.pairs | "Write pairs" >> WriteSortedParquet(
        str(pairs_dir), PAIR_V1, sort_key=lambda r: r["pair_id"], num_shards=cfg.num_shards
    )
    rejects = (scored[REJECTED], pairs[REJECTED]) | "All rejects" >> beam.Flatten()
    write_rejects(rejects, pairs_dir)
    if steps_dirs:
        _ = rollouts | "PRM" >> AssemblePrm(
            steps_dirs, str(Path(out_dir) / "prm"), cfg.prm_truncate_after_error, cfg.num_shards
        )


def step_labeler_names() -> list[str]:
    """The keys of params `steps` (sorted); [] when the section is absent or empty."""
    section = read_params().get("steps") or {}
    if not isinstance(section, dict):
        raise ConfigError(f"params.yaml: 'steps' must be a mapping of steps labelers, got {type(section).__name__}")
    return sorted(section)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rollouts", default="data/rollouts")
    parser.add_argument("--labels", default="data/labels", help="folder holding one subfolder per labeler")
    parser.add_argument("--steps", default="data/steps", help="folder holding one subfolder per steps labeler")
    parser.add_argument("--out", default="data/datasets")
    args = parser.parse_args(argv)
    setup_logging()
    cfg = load_section(AssembleConfig, STAGE)
    # Only the labelers in params count: DVC does not delete the outputs of a labeler removed from params.
    names = sorted((read_params().get("labelers") or {}).keys())
    if not names:
        raise SystemExit("params.yaml: `labelers` is empty; assemble needs at least one labeler")
    label_dirs = [str(Path(args.labels) / n) for n in names]
    # Likewise only the steps labelers in params: no `steps` section (or an empty one) writes no prm/ folder.
    step_names = step_labeler_names()
    steps_dirs = [str(Path(args.steps) / n) for n in step_names]
    timer = StageTimer(STAGE)
    with atomic_output(args.out) as tmp:
        (tmp / "pairs").mkdir()
        if steps_dirs:
            (tmp / "prm").mkdir()
        run_pipeline(lambda p: build(p, cfg, args.rollouts, label_dirs, str(tmp), steps_dirs), load_beam_config())
        if steps_dirs:
            prm_manifest = write_manifest(
                tmp / "prm",
                stage=STAGE,
                schema=PRM_V1,
                config=cfg,
                inputs={
                    "rollouts": args.rollouts,
                    **{f"steps/{n}": d for n, d in zip(step_names, steps_dirs, strict=True)},
                },
                extra={"step_labelers": step_names},
            )
            log.info("%s: prm: %d rows, rejects %s", STAGE, prm_manifest["rows"], prm_manifest["rejects"])
        manifest = write_manifest(
            tmp / "pairs",
            stage=STAGE,
            schema=PAIR_V1,
            config=cfg,
            inputs={"rollouts": args.rollouts, **{f"labels/{n}": d for n, d in zip(names, label_dirs, strict=True)}},
            extra={"labelers": names},
        )
    timer.done(manifest)


if __name__ == "__main__":
    main()
