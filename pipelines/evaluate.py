"""Stage `evaluate`: measure the dataset by what it trains (metrics/evaluate.json).

1. A reward model: trained here with TRL's RewardTrainer on the `train` split of a pair dataset (from the policy, or
   `train.base`), or taken as is (`reward_model`). Its accuracy on the `test` split's pairs (chosen scored above
   rejected) is the dataset's held-out pair accuracy, with a bootstrap confidence interval, over all pairs and over
   the rule-verified ones. `validate.min_rm_accuracy` can fail the build on it.
2. Each labeler's accuracy on the verified pairs of every split: does it score the verified-correct side above the
   verified-incorrect one? The gates decided those pairs, so theirs is 1 by construction (flagged `gate`).

RewardBench's idea applied to our own output. One process, no Beam pipeline: the work is one training run and one
scoring pass of a small model, which a cluster runner would not spread. The trained model is scratch: it is removed
when the stage ends. With `enabled: false` the stage only records that it is off.
"""

import argparse
import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from rewardmill.schemas import PAIR_V2, PAIR_V3
from rewardmill.schemas.common import schema_id
from rewardmill.transforms.config import load_section, to_plain
from rewardmill.transforms.evaluation.labeler_accuracy import labeler_accuracy, verified_sides
from rewardmill.transforms.evaluation.pair_accuracy import pair_accuracy
from rewardmill.transforms.evaluation.reward_model_training import RewardModelTraining, train_reward_model
from rewardmill.transforms.io import timings
from rewardmill.transforms.io.parquet import read_rows
from rewardmill.transforms.labelers.reward_model import RewardModelConfig, RewardModelScorer
from rewardmill.transforms.stage.outputs import read_manifest, write_json_atomic
from rewardmill.transforms.stage.runner import StageTimer, setup_logging
from rewardmill.transforms.validation.folders import read_columns, subfolders

STAGE = "evaluate"
PAIR_SCHEMA = schema_id(PAIR_V2)

log = logging.getLogger("rewardmill")


@dataclass(frozen=True)
class Interval:
    """params `evaluate.bootstrap`."""

    confidence: float = 0.95  # two-sided confidence level of the percentile interval
    resamples: int = 1000
    seed: int = 0

    def __post_init__(self):
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence}")
        if self.resamples < 1:
            raise ValueError(f"resamples must be >= 1, got {self.resamples}")


@dataclass(frozen=True)
class EvaluateConfig:
    """params `evaluate`."""

    enabled: bool = True
    dataset: str = "pairs"  # the pair dataset under --datasets: its train split trains, its test split measures
    # An existing sequence-classification reward model (HF folder; hub id with network) to measure instead of
    # training one; null = train one (`train`)
    reward_model: str | None = None
    head: int = 0  # the reward model's head that scores
    train: RewardModelTraining = field(default_factory=RewardModelTraining)
    score_batch_size: int = 8  # sequences per forward pass when scoring the test pairs
    bootstrap: Interval = field(default_factory=Interval)

    def __post_init__(self):
        if self.head < 0:
            raise ValueError(f"head must be >= 0, got {self.head}")
        if self.score_batch_size < 1:
            raise ValueError(f"score_batch_size must be >= 1, got {self.score_batch_size}")


def read_pairs(datasets: str, name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The pair dataset's rows and manifest; a missing or non-pair folder fails naming what to do."""
    folder = Path(datasets) / name
    manifest = read_manifest(folder)
    if manifest.get("schema") == schema_id(PAIR_V3):
        raise SystemExit(
            f"{STAGE}: {folder} holds multi-turn pairs (pair_v3, from an environment's trajectories); evaluate trains "
            "its reward model on single-turn pairs only: set evaluate.enabled to false for this run"
        )
    if manifest.get("schema") != PAIR_SCHEMA:
        raise SystemExit(
            f"{STAGE}: {folder} is not a pair dataset (schema {manifest.get('schema')}); "
            "set evaluate.dataset to one assemble writes (pairs)"
        )
    return read_rows(str(folder)), manifest


def read_labels(labels: str) -> pl.DataFrame:
    """Every labeler's (labeler, aspect, rollout_id, score) under --labels."""
    columns = ["labeler", "aspect", "rollout_id", "score"]
    frames = [pl.from_arrow(read_columns(d, columns)) for d in subfolders(labels) if any(d.glob("*.parquet"))]
    return (
        pl.concat(frames)
        if frames
        else pl.DataFrame(
            schema={"labeler": pl.String, "aspect": pl.String, "rollout_id": pl.String, "score": pl.Float64}
        )
    )


def measure_reward_model(cfg: EvaluateConfig, pairs: list[dict], policy: str, scratch: Path) -> dict[str, Any]:
    """Train (or take) the reward model, then its accuracy on the test split's pairs."""
    train = [p for p in pairs if p["split"] == "train"]
    test = [p for p in pairs if p["split"] == "test"]
    result: dict[str, Any] = {"train_pairs": len(train), "test_pairs": len(test)}
    if cfg.reward_model is not None:
        model, result["source"] = cfg.reward_model, "given"
    elif not train:
        result.update(source="trained", error="no train pairs: nothing to train a reward model on")
        log.warning("%s: %s", STAGE, result["error"])
        return result
    else:
        model, result["source"] = str(scratch / "reward_model"), "trained"
        result["base"] = cfg.train.base or "policy"
        with timings.timed("train"):
            result["train"] = train_reward_model(train, cfg.train.base or policy, model, cfg.train)
    scorer = RewardModelScorer(
        RewardModelConfig(
            model=model,
            normalize="sigmoid",
            batch_size=cfg.score_batch_size,
            max_length=cfg.train.max_length,
            threads=cfg.train.threads,
        )
    )
    with timings.timed("score"):
        result["test"] = pair_accuracy(scorer, test, cfg.head, **to_plain(cfg.bootstrap))
    return result


def evaluate(cfg: EvaluateConfig, datasets: str, labels: str, policy: str) -> dict[str, Any]:
    """The stage's metrics (see the module docstring)."""
    pairs, manifest = read_pairs(datasets, cfg.dataset)
    gates = tuple(manifest.get("gates") or ())
    verified = verified_sides(pairs)
    with tempfile.TemporaryDirectory(prefix="rewardmill-evaluate-") as scratch:
        reward_model = measure_reward_model(cfg, pairs, policy, Path(scratch))
    return {
        "enabled": True,
        "dataset": cfg.dataset,
        "pairs": len(pairs),
        "verified_pairs": verified.height,
        "reward_model": reward_model,
        "labelers": labeler_accuracy(verified, read_labels(labels), gates, **to_plain(cfg.bootstrap)),
        "bootstrap": to_plain(cfg.bootstrap),
    }


def summary(metrics: dict[str, Any], confidence: float, path: str) -> str:
    """Pure: the stage's closing line. Off, or with no held-out accuracy, it says so and what turns it on, never an
    accuracy of None."""
    if not metrics.get("enabled"):
        return (
            f"{STAGE}: off (params evaluate.enabled is false): no reward model trained or measured; turn it on with "
            f"`dvc exp run -S evaluate.enabled=true`; metrics in {path}"
        )
    measured, verified = len(metrics.get("labelers", {})), metrics.get("verified_pairs")
    labelers = f"{measured} labelers measured on {verified} verified pairs"
    rm = metrics.get("reward_model") or {}
    held_out = (rm.get("test") or {}).get("all") or {}
    if held_out.get("accuracy") is not None:
        return (
            f"{STAGE}: reward model accuracy on {held_out['n']} held-out pairs: {held_out['accuracy']:.3f} "
            f"({confidence:g} interval {held_out['ci_low']:.3f}..{held_out['ci_high']:.3f}); {labelers}; "
            f"metrics in {path}"
        )
    if rm.get("error"):
        why = rm["error"]
    elif not rm.get("test_pairs"):
        why = (
            f"no held-out pairs: the {metrics.get('dataset')} dataset's test split is empty (params "
            "prompts.test_fraction sets its share of prompts)"
        )
    else:
        why = f"all {rm['test_pairs']} held-out pairs are longer than evaluate.train.max_length"
    return f"{STAGE}: reward model not measured: {why}; {labelers}; metrics in {path}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="data/datasets", help="folder holding one subfolder per dataset")
    parser.add_argument("--labels", default="data/labels", help="folder holding one subfolder per labeler")
    parser.add_argument("--model", default="models/policy", help="the policy: the reward model's default base")
    parser.add_argument("--metrics", default="metrics/evaluate.json", help="the metrics JSON to write")
    args = parser.parse_args(argv)
    setup_logging()
    cfg = load_section(EvaluateConfig, STAGE)
    timer = StageTimer(STAGE)
    metrics = evaluate(cfg, args.datasets, args.labels, args.model) if cfg.enabled else {"enabled": False}
    write_json_atomic(args.metrics, metrics)
    log.info("%s", summary(metrics, cfg.bootstrap.confidence, args.metrics))
    timer.done({"rows": metrics.get("pairs", 0)})


if __name__ == "__main__":
    main()
