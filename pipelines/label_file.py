"""`rewardmill label`: run one labeler over any JSONL or Parquet file of rollouts, outside DVC.

Rows need `completion` plus whatever the labeler reads (e.g. `reference`, `tests`, `constraints`); `rollout_id`,
`prompt_id` and `task` are filled in when absent (content hashes; task from --task). Output rows are LABEL_V1
plus `row` (0-based index of the row among the input's non-blank lines or Parquet rows), written as JSONL or
Parquet by the output's suffix.

A row that cannot be labeled is a reject, not a failed file: a line that is not UTF-8 (`not_utf8`), not JSON
(`not_json`) or not an object (`not_an_object`); a row lacking a column the labeler reads
(`missing_column:<name>[,<name>...]`); a completion, rollout_id, prompt_id or task that is not a string
(`not_a_string:<column>`; the label stage never sees one, its rollouts schema forbids it); a rollout_id an earlier
row has (`duplicate_rollout_id`). Rejects go to `<output stem>.rejects<suffix>` beside the output (REJECT_V1 plus
`row` and `line`, the 1-based JSONL line; written on every run, empty when none), each with one warning naming the
file and line, and are counted in the summary line. Rows of a task the labeler does not handle are counted as not
applicable, as in the label stage. An input with no rows, or whose every row is rejected, exits non-zero: an empty
labeling is never a success.

    rewardmill label --labeler math_answer --input rollouts.jsonl --output labels.parquet
    rewardmill label --labeler code_tests --config '{"timeout_seconds": 5}' --input he.jsonl --output out.jsonl
"""

import argparse
import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq

from rewardmill.schemas import LABEL_V1, REJECT_V1
from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.io.json_file import WriteJson, pop_json
from rewardmill.transforms.io.parquet import PARQUET_OPTIONS, WriteSortedParquet
from rewardmill.transforms.io.parquet import read_rows as read_stage_rows
from rewardmill.transforms.labelers import get_labeler_class
from rewardmill.transforms.labelers.beam import NOT_APPLICABLE, REJECTED, LabelAll, LabelRollouts
from rewardmill.transforms.labelers.contract import declared_tasks
from rewardmill.transforms.labelers.normalize import normalize_output
from rewardmill.transforms.stage.outputs import REJECTS_DIR, reject, write_rejects
from rewardmill.transforms.stage.runner import BeamConfig, running, setup_logging

log = logging.getLogger("rewardmill")
STAGE = "label"
OUTPUT_SCHEMA = pa.schema([*LABEL_V1, pa.field("row", pa.int64(), nullable=False)], metadata=LABEL_V1.metadata)
# REJECT_V1 plus where the row is: `row` as in the labels, `line` the 1-based JSONL line (null for Parquet input)
REJECTS_SCHEMA = pa.schema(
    [*REJECT_V1, pa.field("row", pa.int64(), nullable=False), pa.field("line", pa.int64())],
    metadata=REJECT_V1.metadata,
)
MAX_WARNINGS = 20  # reject warnings printed one per line; the rest are counted (all are in the rejects file)


def rejects_path(output: Path) -> Path:
    """labels.parquet -> labels.rejects.parquet, beside it and in its format."""
    return output.with_name(f"{output.stem}.rejects{output.suffix}")


def where(path: Path, record: dict[str, Any]) -> str:
    """`in.jsonl:3` (JSONL: the line, as editors number it) or `in.parquet row 2` (the 0-based row)."""
    return f"{path}:{record['_line']}" if record.get("_line") is not None else f"{path} row {record['_row']}"


def bad_line(path: Path, row: int, line: int, reason: str, detail: str, text: str) -> dict[str, Any]:
    return {**reject(STAGE, f"{path.name}:{line}", reason, detail, payload=text[:2000]), "row": row, "line": line}


def read_jsonl(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(rows, rejects). Each non-blank line is one row, numbered `_row`, with its `_line`; a line that does not
    decode as UTF-8, parse as JSON or hold an object is a reject instead (the file goes on)."""
    rows, rejects = [], []
    with path.open("rb") as fh:
        index = 0
        for lineno, data in enumerate(fh, start=1):
            if lineno == 1 and data.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark is not content
                data = data[3:]
            if not data.strip():
                continue
            row, index = index, index + 1
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                detail = f"byte 0x{data[exc.start]:02x} at byte {exc.start} of the line is not UTF-8 ({exc.reason})"
                shown = data.decode("utf-8", errors="backslashreplace")
                rejects.append(bad_line(path, row, lineno, "not_utf8", detail, shown))
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                rejects.append(bad_line(path, row, lineno, "not_json", str(exc), text))
                continue
            if not isinstance(value, dict):
                detail = f"expected a JSON object per line, got {type(value).__name__}"
                rejects.append(bad_line(path, row, lineno, "not_an_object", detail, text))
                continue
            rows.append({**value, "_row": row, "_line": lineno})
    return rows, rejects


def read_input(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(rows, rejects) of a JSONL or Parquet file; a missing file or another type is a one-line error."""
    if not path.exists():
        raise SystemExit(f"{path}: input file not found")
    if path.suffix == ".parquet":
        try:
            table = pq.read_table(path)
        except (pa.ArrowException, OSError) as exc:
            raise SystemExit(f"{path}: not a readable Parquet file: {exc}") from exc
        return [{**r, "_row": i, "_line": None} for i, r in enumerate(table.to_pylist())], []
    if path.suffix not in (".jsonl", ".json"):
        raise SystemExit(f"{path}: unsupported input type '{path.suffix}' (use .jsonl or .parquet)")
    return read_jsonl(path)


def with_ids(rows: list[dict[str, Any]], task: str | None) -> list[dict[str, Any]]:
    """Fill rollout_id / prompt_id / task when absent (`_row` and `_line` say where the row came from)."""
    out = []
    for row in rows:
        i = row["_row"]
        own = {k: v for k, v in row.items() if k not in ("_row", "_line")}
        content = json.dumps(own, sort_keys=True, default=str, ensure_ascii=False)
        out.append(
            {
                **row,
                "rollout_id": row.get("rollout_id") or hashlib.sha256(f"{i}\x00{content}".encode()).hexdigest(),
                "prompt_id": row.get("prompt_id")
                or hashlib.sha256(
                    json.dumps(row.get("messages") or row.get("prompt"), sort_keys=True, default=str).encode()
                ).hexdigest(),
                "task": row.get("task") or task,
            }
        )
    return out


def unlabelable(row: dict[str, Any], reads: tuple[str, ...]) -> tuple[str, str] | None:
    """(reason, detail) of a row the labeler cannot read, else None: one value, so the two never disagree."""
    for column in ("rollout_id", "prompt_id", "task"):  # label rows carry them as strings
        if row.get(column) is not None and not isinstance(row[column], str):
            return f"not_a_string:{column}", f"{column} is {type(row[column]).__name__}, not a string"
    missing = [c for c in reads if c not in row]
    if missing:
        return f"missing_column:{','.join(missing)}", f"the labeler reads {list(reads)}; the row has no {missing}"
    completion = row.get("completion", "")
    if "completion" in reads and not isinstance(completion, str):
        kind = "null" if completion is None else type(completion).__name__
        return "not_a_string:completion", f"completion is {kind}, not a string"
    return None


def check_rows(rows: list[dict[str, Any]], labeler) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(rows to label, rejects). Rows of a task the labeler does not handle pass (the labeling counts them as not
    applicable, as the label stage does), whatever columns they have."""
    tasks = declared_tasks(labeler)
    kept, rejects = [], []
    seen: dict[Any, int] = {}  # rollout_id -> the row that has it
    for row in rows:
        routed_away = tasks and row.get("task") is not None and row["task"] not in tasks
        problem = None if routed_away else unlabelable(row, tuple(labeler.reads))
        if problem is None and row["rollout_id"] in seen:
            problem = "duplicate_rollout_id", f"row {seen[row['rollout_id']]} has the same rollout_id"
        if problem is None:
            kept.append(row)
            seen[row["rollout_id"]] = row["_row"]
            continue
        payload = {k: v for k, v in row.items() if not k.startswith("_")}
        row_id = row["rollout_id"] if isinstance(row["rollout_id"], str) else None
        rejects.append({**reject(STAGE, row_id, *problem, payload=payload), "row": row["_row"], "line": row["_line"]})
    return kept, rejects


def write_rows(rows: list[dict[str, Any]], path: Path, schema: pa.Schema) -> None:
    """Write to a temp file beside `path`, then rename: a crash never leaves half an output."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        if path.suffix == ".parquet":
            pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp, **PARQUET_OPTIONS)
        else:
            tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_output(rows: list[dict[str, Any]], path: Path) -> None:
    write_rows(sorted(rows, key=lambda r: (r["row"], r["aspect"])), path, OUTPUT_SCHEMA)


def report_rejects(path: Path, rejects: list[dict[str, Any]]) -> None:
    for r in rejects[:MAX_WARNINGS]:
        at = where(path, {"_row": r["row"], "_line": r["line"]})
        log.warning("%s: rejected (%s): %s", at, r["reason"], r["detail"])
    if len(rejects) > MAX_WARNINGS:
        log.warning("%s: %d more rejected rows (all are in the rejects file)", path, len(rejects) - MAX_WARNINGS)


def label(cls, config, key: str, rows: list[dict[str, Any]], cache: str | None, cfg: BeamConfig):
    """(labels, rejects, not applicable count) of `rows` through the label stage's Beam wrapper."""
    with tempfile.TemporaryDirectory(prefix="rewardmill-label-") as work:
        # Outputs go through files (not driver-side lists) so any runner, multi-process included, works.
        with running(cfg) as p:
            out = (
                p
                | "Rows" >> beam.Create(rows)
                | "Label" >> LabelAll(LabelRollouts(cls, config, key, cache, total=len(rows)))
            )
            _ = out.labels | "Write labels" >> WriteSortedParquet(
                f"{work}/labels", LABEL_V1, sort_key=lambda r: f"{r['rollout_id']}\x00{r['aspect']}"
            )
            write_rejects(out[REJECTED], work)
            _ = (
                out[NOT_APPLICABLE]
                | "Count skipped" >> beam.combiners.Count.Globally()
                | "Write skipped" >> beam.ParDo(WriteJson(f"{work}/skipped.json"))
            )
        normalize_output(f"{work}/labels", cls, config)  # scores over the whole run (reward models)
        labels, rejects = read_stage_rows(f"{work}/labels"), read_stage_rows(f"{work}/{REJECTS_DIR}")
        return labels, rejects, pop_json(f"{work}/skipped.json")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="rewardmill label", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--labeler", required=True, help="registry key, e.g. math_answer")
    parser.add_argument("--config", default="{}", help="the labeler's settings as JSON")
    parser.add_argument("--input", required=True, type=Path)
    parser.add_argument("--output", required=True, type=Path)
    parser.add_argument("--task", default=None, help="task for rows that carry none (routes task-specific labelers)")
    parser.add_argument("--cache", default=None, help="per-record label cache folder")
    parser.add_argument("--runner", default="FnApiRunner")
    parser.add_argument("--workers", type=int, default=1, help="FnApiRunner worker processes")
    args = parser.parse_args(argv)
    setup_logging()
    if args.output.suffix not in (".jsonl", ".parquet"):
        raise SystemExit(f"{args.output}: output must end in .jsonl or .parquet")
    try:
        cls = get_labeler_class(args.labeler)
        config = from_dict(cls.Config, json.loads(args.config), f"--config for {args.labeler}")
    except (KeyError, json.JSONDecodeError, ConfigError) as exc:
        raise SystemExit(f"rewardmill label: {exc}") from exc
    parsed, bad_lines = read_input(args.input)
    total = len(parsed) + len(bad_lines)
    if not total:
        raise SystemExit(f"{args.input}: no rows to label (empty input); wrote nothing")
    rows, unreadable = check_rows(with_ids(parsed, args.task), cls(config))  # `reads` and `tasks` are per instance
    labels, failed, skipped = [], [], 0
    if rows:
        cfg = BeamConfig(runner=args.runner, direct_num_workers=args.workers)
        labels, failed, skipped = label(cls, config, args.labeler, rows, args.cache, cfg)
    position = {r["rollout_id"]: (r["_row"], r["_line"]) for r in rows}
    failed = [{**r, **dict(zip(("row", "line"), position[r["row_id"]], strict=True))} for r in failed]
    rejected = sorted([*bad_lines, *unreadable, *failed], key=lambda r: r["row"])
    report_rejects(args.input, rejected)
    write_output([{**lab, "row": position[lab["rollout_id"]][0]} for lab in labels], args.output)
    write_rows(rejected, rejects_path(args.output), REJECTS_SCHEMA)
    verdicts: dict[str, int] = {}
    for lab in labels:
        verdicts[lab["verdict"]] = verdicts.get(lab["verdict"], 0) + 1
    log.info(
        "label: %d rows -> %d labels %s, %d rejected, %d not applicable (task); wrote %s and %s",
        total,
        len(labels),
        dict(sorted(verdicts.items())),
        len(rejected),
        skipped,
        args.output,
        rejects_path(args.output),
    )
    if len(rejected) == total:
        raise SystemExit(
            f"{args.input}: all {total} rows rejected, none labeled (see {rejects_path(args.output)}; reasons: "
            f"{sorted({r['reason'] for r in rejected})})"
        )
