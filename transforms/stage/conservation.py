"""Conservation: every stage accounts for each of its inputs before its output is renamed into place.

inputs = outputs + rejects + not applicable, counted by id from the files the stage wrote (not from runner metrics,
which some runners do not report). A runner that loses or duplicates rows then fails the stage, naming it and the
count, instead of leaving a short dataset that DVC would cache; and an empty output from non-empty inputs is never a
success.
"""

import polars as pl

from rewardmill.transforms.io.parquet import list_shards, read_table
from rewardmill.transforms.stage.outputs import REJECTS_DIR


class ConservationError(SystemExit):
    """A stage's ids do not reconcile: nothing was renamed into place."""


def id_frame(directory: str, columns: list[str]) -> pl.DataFrame:
    """`columns` of every data shard under `directory` (local or a FileSystems URL), one frame."""
    frames = [pl.from_arrow(read_table(path, columns=columns)) for path in list_shards(directory)]
    return pl.concat(frames) if frames else pl.DataFrame(schema={c: pl.String for c in columns})


def distinct_ids(directory: str, columns: list[str]) -> int:
    """Distinct values (tuples, for several columns) of `columns` in the shards under `directory`."""
    return id_frame(directory, columns).unique().height


def reject_rows(directory: str) -> int:
    return id_frame(f"{directory}/{REJECTS_DIR}", ["row_id"]).height


def labeled_or_rejected(directory: str, id_column: str = "rollout_id") -> tuple[int, int]:
    """(distinct ids in the output, distinct ids only in its rejects): an input counts once, as output first."""
    labeled = id_frame(directory, [id_column])[id_column]
    rejected = id_frame(f"{directory}/{REJECTS_DIR}", ["row_id"])["row_id"]
    return labeled.n_unique(), rejected.filter(~rejected.is_in(labeled.implode())).n_unique()


def reconcile(
    stage: str,
    *,
    inputs: int,
    outputs: int,
    rejects: int,
    not_applicable: int = 0,
    unit: str = "rows",
    allow_empty: bool = False,
) -> None:
    """Fail unless inputs == outputs + rejects + not_applicable, and (unless `allow_empty`) when no input reached the
    output although some applied (inputs that all belong elsewhere, such as a code labeler's on math rollouts, are
    a valid empty output). Called inside `atomic_output`, so a failure renames nothing into place."""
    accounted = outputs + rejects + not_applicable
    parts = f"{outputs} in the output, {rejects} rejected" + (
        f", {not_applicable} not applicable" if not_applicable else ""
    )
    if accounted != inputs:
        what = f"{inputs - accounted} missing" if accounted < inputs else f"{accounted - inputs} more than came in"
        raise ConservationError(
            f"{stage}: {inputs} input {unit} but {parts}: {what}. Nothing was written. The runner lost or duplicated "
            "rows (or a transform dropped them without a reject); rerun on beam.runner FnApiRunner to compare, and "
            "report it with the runner's name"
        )
    if inputs - not_applicable > 0 and outputs == 0 and not allow_empty:
        raise ConservationError(
            f"{stage}: none of {inputs} input {unit} reached the output ({parts}). Nothing was written: an empty "
            "output from non-empty inputs is never a success; see the reasons in the rejects or the params that "
            "route rows away"
        )
