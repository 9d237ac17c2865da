"""Stage `validate`: Great Expectations suites on rollouts and every dataset; JSON reports and DVC metrics.

One Beam element per stage output folder (data/rollouts and each data/datasets/<name>/, pairs and, when assemble
wrote it, prm): the DoFn runs the suite for the folder's manifest schema and writes reports/<name>.json. The driver
then writes metrics/validate.json (with the step labels' statistics and agreement when --steps holds any) and exits
non-zero, naming the dataset and the failed expectations, when any suite failed.
"""

import argparse
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from rewardmill.pipelines.config import load_section
from rewardmill.pipelines.stage import (
    atomic_output,
    load_beam_config,
    read_manifest,
    run_pipeline,
    setup_logging,
    write_json_atomic,
)
from rewardmill.schemas import PAIR_V1, PRM_V1
from rewardmill.schemas.common import schema_id
from rewardmill.transforms.validation.metrics import compute_metrics, subfolders

STAGE = "validate"
PAIR_SCHEMA = schema_id(PAIR_V1)
# An empty PRM dataset passes: tiny or strict steps settings can reject every rollout (assemble counts why, and
# metrics prm.<name>.rows shows it); the pair dataset's floor is params `validate.min_pairs`, every other folder's 1.
PRM_MIN_ROWS = 0

log = logging.getLogger("rewardmill")


@dataclass(frozen=True)
class ValidateConfig:
    """params `validate`."""

    min_pairs: int = 1  # fewer pairs than this in a pair dataset fails the stage (0 = an empty dataset passes)

    def __post_init__(self):
        if self.min_pairs < 0:
            raise ValueError("min_pairs must be >= 0")


@dataclass(frozen=True)
class Target:
    """One folder to validate: report name, path, and the schema id its manifest records."""

    name: str
    directory: str
    schema: str | None


class ValidateDataset(beam.DoFn):
    """Target -> report dict (dataset, schema, rows, success, statistics, expectations; see validation.runner)."""

    def __init__(self, min_pairs: int):
        self.min_pairs = min_pairs

    def process(self, target: Target):
        from rewardmill.transforms.validation.runner import validate_folder  # imports Great Expectations lazily

        min_rows = {PAIR_SCHEMA: self.min_pairs, schema_id(PRM_V1): PRM_MIN_ROWS}.get(target.schema or "", 1)
        report = validate_folder(target.directory, target.schema, dataset=target.name, min_rows=min_rows)
        beam.metrics.Metrics.counter(STAGE, "passed" if report["success"] else "failed").inc()
        yield report


class WriteReport(beam.DoFn):
    """report -> <reports>/<dataset>.json (sorted keys, no run ids or timestamps: same data, same bytes)."""

    def __init__(self, directory: str):
        self.directory = directory

    def process(self, report: dict[str, Any]):
        path = FileSystems.join(self.directory, f"{report['dataset']}.json")
        with FileSystems.create(path) as fh:
            fh.write(report_json(report).encode())
        yield path


def report_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def targets(rollouts: str, datasets: str) -> list[Target]:
    """Rollouts plus every dataset folder; a folder without a manifest fails here, before any work."""
    found = [Target("rollouts", rollouts, read_manifest(rollouts).get("schema"))]
    found += [Target(d.name, str(d), read_manifest(d).get("schema")) for d in subfolders(datasets)]
    names = [t.name for t in found]
    if len(set(names)) != len(names):
        raise SystemExit(f"{STAGE}: report names collide: {names} (a dataset named 'rollouts'?)")
    if not any(t.schema == PAIR_SCHEMA for t in found):
        raise SystemExit(f"{STAGE}: no {PAIR_SCHEMA} dataset under {datasets}; run the assemble stage first")
    return found


def build(p, cfg: ValidateConfig, found: list[Target], reports_dir: str) -> None:
    _ = (
        p
        | "Folders" >> beam.Create(found)
        | "Validate" >> beam.ParDo(ValidateDataset(cfg.min_pairs))
        | "Write reports" >> beam.ParDo(WriteReport(reports_dir))
    )


def failure_message(reports: list[dict[str, Any]], reports_dir: str) -> str | None:
    """None when every report passed; else one block per failed dataset naming its failed expectations."""
    from rewardmill.transforms.validation.runner import describe_failures

    blocks = []
    for r in reports:
        if r["success"]:
            continue
        lines = describe_failures(r)
        what = "could not be validated" if r.get("error") else f"failed {len(lines)} expectation(s)"
        where = Path(reports_dir) / f"{r['dataset']}.json"
        blocks.append(f"dataset '{r['dataset']}' {what} (see {where}):\n  " + "\n  ".join(lines))
    return f"{STAGE}: validation failed\n" + "\n".join(blocks) if blocks else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompts", default="data/prompts")
    parser.add_argument("--rollouts", default="data/rollouts")
    parser.add_argument("--labels", default="data/labels", help="folder holding one subfolder per labeler")
    parser.add_argument("--steps", default="data/steps", help="one subfolder per steps labeler; may be missing")
    parser.add_argument("--datasets", default="data/datasets", help="folder holding one subfolder per dataset")
    parser.add_argument("--reports", default="reports")
    parser.add_argument("--metrics", default="metrics/validate.json")
    args = parser.parse_args(argv)
    setup_logging()
    cfg = load_section(ValidateConfig, STAGE)
    start = time.monotonic()
    log.info("%s: starting", STAGE)
    found = targets(args.rollouts, args.datasets)
    # also checks every input
    metrics = compute_metrics(args.prompts, args.rollouts, args.labels, args.datasets, steps=args.steps)

    with atomic_output(args.reports) as tmp:
        run_pipeline(lambda p: build(p, cfg, found, str(tmp)), load_beam_config())
        reports = [json.loads((tmp / f"{t.name}.json").read_text()) for t in found]
    for r in reports:
        stats = r.get("statistics") or {}
        log.info(
            "%s: %s (%s, %s rows): %s, %s of %s expectations failed",
            STAGE,
            r["dataset"],
            r["schema"],
            r["rows"],
            "passed" if r["success"] else "FAILED",
            stats.get("unsuccessful"),
            stats.get("evaluated"),
        )

    metrics["validation"] = {
        r["dataset"]: {"success": r["success"], "failed_expectations": (r.get("statistics") or {}).get("unsuccessful")}
        for r in reports
    }
    write_json_atomic(args.metrics, metrics)
    log.info(
        "%s: done in %.1fs: reports in %s, metrics in %s", STAGE, time.monotonic() - start, args.reports, args.metrics
    )
    message = failure_message(reports, args.reports)
    if message:
        raise SystemExit(message)  # printed once on stderr; exit status 1


if __name__ == "__main__":
    main()
