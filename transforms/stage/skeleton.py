"""The stage skeleton, written once: into an atomic output folder, the pipeline, the stage's checks (conservation and
its own), the manifest and the metrics; then the output in place, the closing line and the budget report.

A stage module admits its budget first (transforms/stage/budget.py: its graph leaves out the prompts over budget), then
hands `run_stage` its graph (`build(p, tmp)`), its checks and what its manifest and metrics hold; the order is the
skeleton's. The checks run before the manifest is written, so a failed check leaves no manifest and renames nothing
into place (the temp folder is removed), and a manifest always describes a checked output.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import apache_beam as beam
import pyarrow as pa

from rewardmill.transforms.stage.outputs import atomic_output, write_json_atomic, write_manifest
from rewardmill.transforms.stage.runner import BeamConfig, StageTimer, run_pipeline

T = TypeVar("T")


@dataclass(frozen=True)
class Finished(Generic[T]):
    """A stage's finished, checked pipeline, as the manifest's extra and the metrics are built from it."""

    tmp: str  # the temp folder, still in place (the output is renamed into place after the metrics are built)
    result: Any  # the PipelineResult, for its counters (None on runners without one)
    checked: T  # what the stage's check returned: facts it read, such as a side file it removed


@dataclass(frozen=True)
class ManifestSpec:
    """What `write_manifest` records besides the output's own counts."""

    schema: pa.Schema | None
    config: Any  # the stage's params section: params_hash and params
    inputs: dict[str, str] = field(default_factory=dict)  # name -> path, digested
    # The stage's own keys: fixed, or built from the finished folder and what the check read.
    extra: dict[str, Any] | Callable[[Finished], dict[str, Any]] = field(default_factory=dict)


class BudgetHooks(Protocol):
    """A stage's budget as the skeleton uses it (transforms/stage/budget.py `StageBudget`)."""

    def record(self) -> dict[str, Any]:
        """The metrics' `budget`."""
        ...

    def report(self, stage: str, manifest: dict[str, Any]) -> None:
        """The stage's last line: within budget, or how far it got."""
        ...


@dataclass(frozen=True)
class StageRun(Generic[T]):
    """What a finished stage returns: its manifest, its pipeline's result and what its check read."""

    manifest: dict[str, Any]
    result: Any
    checked: T


def _no_check(tmp: str, result: Any) -> None:
    return None


def run_stage(
    stage: str,
    out: str,
    beam_cfg: BeamConfig,
    build: Callable[[beam.Pipeline, str], object],
    manifest: ManifestSpec,
    *,
    check: Callable[[str, Any], T] = _no_check,
    metrics: str | None = None,
    metrics_record: Callable[[Finished[T], dict[str, Any]], dict[str, Any]] | None = None,
    budget: BudgetHooks | None = None,
    log_run: Callable[[StageRun[T]], None] | None = None,
) -> StageRun[T]:
    """Run one stage into `out`, whole or not at all:

    1. `build(p, tmp)` attaches the stage's graph, writing into the temp folder `tmp` (`atomic_output`);
    2. `check(tmp, result)` reads and checks the finished folder: conservation and the stage's own checks, with any
       whole-run fix before them; it raises to fail the stage, and what it returns is `Finished.checked`;
    3. the manifest (`manifest`; a callable extra gets the `Finished`) is written, after every check;
    4. with a `metrics` path, `metrics_record(finished, manifest)` is built from the folder (plus the budget's record)
       and written once the output is in place;
    5. `log_run(run)` logs what this run did (never part of an output), then the closing line and the budget report.
    """
    if metrics and metrics_record is None:
        raise TypeError(f"{stage}: a metrics path needs a metrics_record")
    timer = StageTimer(stage)
    with atomic_output(out) as tmp:
        result = run_pipeline(lambda p: build(p, tmp), beam_cfg)
        finished = Finished(tmp, result, check(tmp, result))
        extra = manifest.extra(finished) if callable(manifest.extra) else manifest.extra
        written = write_manifest(
            tmp, stage=stage, schema=manifest.schema, config=manifest.config, inputs=manifest.inputs, extra=extra
        )
        record = metrics_record(finished, written) if metrics and metrics_record else None
    if metrics and record is not None:  # after the output is in place: a failed stage leaves the last metrics
        write_json_atomic(metrics, record | ({"budget": budget.record()} if budget else {}))
    run = StageRun(written, result, finished.checked)
    if log_run:
        log_run(run)
    timer.done(written)
    if budget:
        budget.report(stage, written)
    return run
