"""Stage `assemble`: join rollouts with all labels, score, and build preference pairs (data/datasets/pairs/)."""

import argparse
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apache_beam as beam

from rewardmill.pipelines.config import load_section, read_params
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
from rewardmill.schemas import LABEL_V1, PAIR_V1, ROLLOUT_V2
from rewardmill.transforms.io.parquet import ReadStageOutput, WriteSortedParquet
from rewardmill.transforms.pairing.best_worst import PairingConfig, best_vs_worst
from rewardmill.transforms.pairing.scores import combine

STAGE = "assemble"
REJECTED = "rejected"
PAIR_STRATEGIES = ("best_vs_worst",)


@dataclass(frozen=True)
class AssembleConfig:
    """params `assemble`."""

    min_margin: float = 0.0
    pair_strategy: str = "best_vs_worst"
    drop_truncated: bool = False
    num_shards: int = 1

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


def build(p, cfg: AssembleConfig, rollouts_dir: str, label_dirs: list[str], out_dir: str) -> None:
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rollouts", default="data/rollouts")
    parser.add_argument("--labels", default="data/labels", help="folder holding one subfolder per labeler")
    parser.add_argument("--out", default="data/datasets")
    args = parser.parse_args(argv)
    setup_logging()
    cfg = load_section(AssembleConfig, STAGE)
    # Only the labelers in params count: DVC does not delete the outputs of a labeler removed from params.
    names = sorted((read_params().get("labelers") or {}).keys())
    if not names:
        raise SystemExit("params.yaml: `labelers` is empty; assemble needs at least one labeler")
    label_dirs = [str(Path(args.labels) / n) for n in names]
    timer = StageTimer(STAGE)
    with atomic_output(args.out) as tmp:
        (tmp / "pairs").mkdir()
        run_pipeline(lambda p: build(p, cfg, args.rollouts, label_dirs, str(tmp)), load_beam_config())
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
