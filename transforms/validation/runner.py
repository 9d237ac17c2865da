"""Run a schema's suite on one stage output folder and summarize the result as deterministic plain JSON.

The report keeps, per expectation: its type, column, other arguments, success, observed value, element and
unexpected counts, a few unexpected values and failing row ids, and the exception message if it raised. Run ids,
timestamps, batch ids and load times are left out, so the same data gives the same report bytes.

Beside the report, `validate_target` returns the Great Expectations suite and validation result as JSON for the Data
Docs site (data_docs.py). Their run identifier is fixed (RUN_NAME at RUN_TIME, not the wall clock): the site is a
DVC output and must not change when the data does not.
"""

import datetime
import json
import logging
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from rewardmill.transforms.io import timings
from rewardmill.transforms.io.parquet import list_shards, read_table
from rewardmill.transforms.validation.suites import PARTIAL_UNEXPECTED, SUITES

if TYPE_CHECKING:
    import great_expectations as gx

RUN_NAME = "validate"
RUN_TIME = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)  # a fixed stamp: Data Docs bytes follow the data only
DATASOURCE = "rewardmill"
_DROPPED_KWARGS = ("batch_id", "column", "result_format")


def load_table(directory: str) -> pa.Table:
    """Every data shard of a stage output folder, as stored (no cast: type drift is what the suite checks)."""
    shards = list_shards(directory)
    if not shards:
        raise FileNotFoundError(f"{directory}: no *.parquet shards")
    return pa.concat_tables([read_table(path) for path in shards], promote_options="permissive")


def to_frame(table: pa.Table, helpers: dict[str, list[bool]]) -> pd.DataFrame:
    """Arrow table -> pandas frame with nested columns as plain Python lists/dicts, plus the helper columns."""
    frame = table.to_pandas()
    for field in table.schema:
        if pa.types.is_nested(field.type):
            frame[field.name] = pd.Series(table.column(field.name).to_pylist(), index=frame.index, dtype=object)
    for name, values in helpers.items():
        if name in frame.columns:
            raise ValueError(f"helper column {name!r} collides with a data column")
        frame[name] = pd.Series(values, index=frame.index, dtype=bool)
    return frame


def run_suite(
    frame: pd.DataFrame, suite: "gx.ExpectationSuite", id_column: str | None = None, partial: int = PARTIAL_UNEXPECTED
) -> "gx.core.ExpectationSuiteValidationResult":
    """Validate `frame` against `suite` in a fresh ephemeral context (nothing is written to disk), under the fixed
    run identifier. The suite's name is the data asset's name (Data Docs lists validations by both).

    `id_column` (e.g. pair_id) names up to `partial` failing rows in each result's partial_unexpected_index_list.
    """
    import great_expectations as gx
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.data_context.types.base import ProgressBarsConfig

    # GX pins this logger to INFO and logs a temp docs folder for every ephemeral context; runs on workers too.
    logging.getLogger("great_expectations.data_context.types.base").setLevel(logging.WARNING)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch_definition = (
        context.data_sources.add_pandas(DATASOURCE)
        .add_dataframe_asset(suite.name)
        .add_batch_definition_whole_dataframe("all rows")
    )
    suite = context.suites.add(suite)
    definition = context.validation_definitions.add(
        gx.ValidationDefinition(name=suite.name, data=batch_definition, suite=suite)
    )
    result_format: dict[str, Any] = {"result_format": "SUMMARY", "partial_unexpected_count": partial}
    if id_column in frame.columns:  # name failing rows by id, not by their position in the frame
        result_format["unexpected_index_column_names"] = [id_column]
    run_id = RunIdentifier(run_name=RUN_NAME, run_time=RUN_TIME)
    return definition.run(batch_parameters={"dataframe": frame}, result_format=result_format, run_id=run_id)


def validate_folder(directory: str, schema: str | None, *, dataset: str, min_rows: int = 1) -> dict[str, Any]:
    """The report of `validate_target` alone."""
    return validate_target(directory, schema, dataset=dataset, min_rows=min_rows)[0]


@timings.timed("validation")  # Great Expectations' own time, named apart by bench/overhead.py
def validate_target(
    directory: str, schema: str | None, *, dataset: str, min_rows: int = 1
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Validate one stage output folder against the suite for `schema` (its manifest's schema id).

    Returns (report, docs). The report dict: dataset, schema, rows, success, statistics, expectations[], error
    (read failure or no suite for the schema; then success is False and expectations is empty). docs: {"suite",
    "result"} as Great Expectations JSON (suite named `dataset`), for data_docs.build_site; None on an error.
    """
    report: dict[str, Any] = {
        "dataset": dataset,
        "schema": schema,
        "rows": None,
        "success": False,
        "error": None,
        "statistics": None,
        "expectations": [],
    }
    spec = SUITES.get(schema or "")
    if spec is None:
        return {**report, "error": f"no validation suite for schema {schema!r}; known: {sorted(SUITES)}"}, None
    try:
        table = (spec.load or load_table)(directory)
        frame = to_frame(table, spec.helpers(table))
    except (OSError, ValueError, pa.ArrowException) as exc:
        return {**report, "error": f"cannot read {directory}: {exc}"}, None
    suite = spec.build(min_rows)
    suite.name = dataset
    result = run_suite(frame, suite, spec.id_column, spec.partial)
    expectations = sorted((summarize(r, spec.id_column, spec.partial) for r in result.results), key=_order)
    failed = sum(not e["success"] for e in expectations)
    report = {
        **report,
        "rows": table.num_rows,
        "success": bool(result.success),
        "statistics": {"evaluated": len(expectations), "unsuccessful": failed},
        "expectations": expectations,
    }
    return report, {"suite": plain(suite.to_json_dict()), "result": plain(result.to_json_dict())}


def summarize(result: Any, id_column: str | None = None, partial: int = PARTIAL_UNEXPECTED) -> dict[str, Any]:
    """One ExpectationValidationResult -> plain JSON-able dict without run-specific fields."""
    config = result.expectation_config
    raw = result.result or {}
    entry: dict[str, Any] = {
        "expectation": config.type,
        "column": config.kwargs.get("column"),
        "kwargs": {k: v for k, v in sorted(config.kwargs.items()) if k not in _DROPPED_KWARGS and v is not None},
        "success": bool(result.success),
    }
    for key in ("observed_value", "element_count", "unexpected_count", "missing_count"):
        if key in raw:
            entry[key] = raw[key]
    if "partial_unexpected_list" in raw:
        entry["partial_unexpected"] = raw["partial_unexpected_list"][:PARTIAL_UNEXPECTED]  # values: a few suffice
    indexed = raw.get("partial_unexpected_index_list") or []
    if id_column and indexed and isinstance(indexed[0], dict):
        entry["unexpected_ids"] = [row.get(id_column) for row in indexed[:partial]]
    messages = exception_messages(result.exception_info or {})
    if messages:
        entry["exception"] = "; ".join(messages)
    return plain(entry)


def exception_messages(info: dict[str, Any]) -> list[str]:
    """Messages from an exception_info: flat for the expectation itself, keyed by metric id for failed metrics."""
    if "raised_exception" in info:
        return [str(info.get("exception_message"))] if info["raised_exception"] else []
    nested = (v for v in info.values() if isinstance(v, dict) and v.get("raised_exception"))
    return sorted({str(v.get("exception_message")) for v in nested})


def describe_failures(report: dict[str, Any]) -> list[str]:
    """Short lines naming each failed expectation, for logs and the stage's exit message."""
    if report.get("error"):
        return [report["error"]]
    lines = []
    for e in report["expectations"]:
        if e["success"]:
            continue
        what = f"{e['expectation']}({e['column']})" if e["column"] else e["expectation"]
        detail = e.get("exception") or (
            f"{e['unexpected_count']} unexpected of {e.get('element_count')}, e.g. {e.get('partial_unexpected')}"
            + (f" at {shown(e['unexpected_ids'])}" if e.get("unexpected_ids") else "")
            if e.get("unexpected_count") is not None
            else f"observed {e.get('observed_value')!r}"
        )
        lines.append(f"{what}: {detail}")
    return lines


def shown(ids: list[Any]) -> str:
    """The first few failing ids for a message (a report may keep more)."""
    more = len(ids) - PARTIAL_UNEXPECTED
    return f"{ids[:PARTIAL_UNEXPECTED]}" + (f" and {more} more in the report" if more > 0 else "")


def plain(value: Any) -> Any:
    """numpy scalars/arrays, NaN and other oddities -> JSON values (NaN becomes null, unknown objects str)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _order(entry: dict[str, Any]) -> tuple[str, str, str]:
    return entry["column"] or "", entry["expectation"], json.dumps(entry["kwargs"], sort_keys=True)
