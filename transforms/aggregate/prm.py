"""Thin Beam wrappers around steps.prm_rows.build_prm_row and steps.turn_prm.build_turn_prm_row: rollouts + step
labels, and trajectories -> the prm/ output of `assemble`.

Only the rollouts that have step labels cross the join's shuffle; a (steps labeler, rollout) gives one PRM_V1 row or
one REJECT_V1 reject (tagged REJECTED). With `turns`, every trajectory (a rollout an environment ran) gives one row of
labeler `turns` (its assistant turns as steps) or one reject.
"""

from collections.abc import Iterable
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc

from rewardmill.schemas import PRM_V1, STEP_LABEL_V1
from rewardmill.transforms.aggregate.bucket import STAGE
from rewardmill.transforms.io.parquet import ReadStageOutput, WriteSortedParquet
from rewardmill.transforms.stage.outputs import reject, write_rejects
from rewardmill.transforms.steps.prm_rows import build_prm_row
from rewardmill.transforms.steps.turn_prm import LABELER as TURNS_LABELER
from rewardmill.transforms.steps.turn_prm import build_turn_prm_row

REJECTED = "rejected"


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


class MakeTurnPrmRows(beam.DoFn):
    """A trajectory (ROLLOUT_COLUMNS + turns) -> its turn-level PRM_V1 row, or a reject whose row_id is
    `<rollout_id>/turns`."""

    def process(self, rollout: dict) -> Iterable[Any]:
        row, rejected = build_turn_prm_row(rollout)
        if rejected is not None:
            beam.metrics.Metrics.counter(STAGE, f"prm_rejected_{rejected.reason}").inc()
            row_id = f"{rollout['rollout_id']}/{TURNS_LABELER}"
            yield beam.pvalue.TaggedOutput(REJECTED, reject(STAGE, row_id, rejected.reason, rejected.detail))
            return
        beam.metrics.Metrics.counter(STAGE, "prm_turn_rows").inc()
        yield row


def trajectories(table: pa.Table) -> Iterable[dict]:
    """The rows of `table` an environment ran (`environment` not null): single-turn rows have no turns to label."""
    yield from table.filter(pc.is_valid(table.column("environment"))).to_pylist()


def rows_with_step_labels(table: pa.Table, labeled: list[str]) -> Iterable[tuple[str, dict]]:
    """(rollout_id, row) of the rollouts in `table` that have step labels: steps labelers label a sample, so the
    other rollouts never cross the join's shuffle."""
    chosen = table.filter(pc.is_in(table.column("rollout_id"), value_set=pa.array(labeled, pa.string())))
    for row in chosen.to_pylist():
        yield row["rollout_id"], row


class AssemblePrm(beam.PTransform):
    """Rollout tables (ROLLOUT_COLUMNS, + TRAJECTORY_COLUMNS with `turns`) + the step labels under `steps_dirs` ->
    PRM_V1 rows in `prm_dir`, their rejects in `prm_dir/_rejects/`."""

    def __init__(
        self, steps_dirs: list[str], prm_dir: str, truncate_after_error: bool, num_shards: int, turns: bool = False
    ):
        super().__init__()
        self.steps_dirs = steps_dirs
        self.prm_dir = prm_dir
        self.truncate_after_error = truncate_after_error
        self.num_shards = num_shards
        self.turns = turns

    def expand(self, rollout_tables):
        made = []
        if self.steps_dirs:
            made.append(self._from_step_labels(rollout_tables))
        if self.turns:
            made.append(
                rollout_tables
                | "Trajectories" >> beam.FlatMap(trajectories)
                | "Turn PRM rows" >> beam.ParDo(MakeTurnPrmRows()).with_outputs(REJECTED, main="rows")
            )
        rejects = tuple(m[REJECTED] for m in made) | "All PRM rejects" >> beam.Flatten()
        write_rejects(rejects, self.prm_dir)
        rows = tuple(m.rows for m in made) | "All PRM rows" >> beam.Flatten()
        return rows | "Write PRM rows" >> WriteSortedParquet(
            self.prm_dir, PRM_V1, sort_key=lambda r: f"{r['labeler']}\x00{r['rollout_id']}", num_shards=self.num_shards
        )

    def _from_step_labels(self, rollout_tables):
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
        return (
            {"rollouts": rollouts, "steps": steps}
            | "Join step labels" >> beam.CoGroupByKey()
            | "PRM rows" >> beam.ParDo(MakePrmRows(self.truncate_after_error)).with_outputs(REJECTED, main="rows")
        )
