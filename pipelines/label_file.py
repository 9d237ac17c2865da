"""`rewardmill label`: run one labeler over any JSONL or Parquet file of rollouts, outside DVC.

Rows need `completion` plus whatever the labeler reads (e.g. `reference`, `tests`, `constraints`); `rollout_id`,
`prompt_id` and `task` are filled in when absent (content hashes; task from --task). Output rows are LABEL_V1
plus `row` (0-based index into the input), written as JSONL or Parquet by the output's suffix.

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

from rewardmill.pipelines.config import ConfigError, from_dict
from rewardmill.pipelines.stage import (
    REJECTS_DIR,
    BeamConfig,
    pipeline_options,
    setup_logging,
    write_rejects,
)
from rewardmill.schemas import LABEL_V1
from rewardmill.transforms.io.json_file import WriteJson, pop_json
from rewardmill.transforms.io.parquet import PARQUET_OPTIONS, WriteSortedParquet
from rewardmill.transforms.io.parquet import read_rows as read_stage_rows
from rewardmill.transforms.labelers import get_labeler_class
from rewardmill.transforms.labelers.beam import NOT_APPLICABLE, REJECTED, LabelAll, LabelRollouts
from rewardmill.transforms.labelers.normalize import normalize_output

log = logging.getLogger("rewardmill")
OUTPUT_SCHEMA = pa.schema([*LABEL_V1, pa.field("row", pa.int64(), nullable=False)], metadata=LABEL_V1.metadata)


def read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        raise SystemExit(f"{path}: input file not found")
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()
    if path.suffix not in (".jsonl", ".json"):
        raise SystemExit(f"{path}: unsupported input type '{path.suffix}' (use .jsonl or .parquet)")
    rows = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SystemExit(f"{path}:{lineno}: not valid JSON: {exc}") from exc
            if not isinstance(row, dict):
                raise SystemExit(f"{path}:{lineno}: expected a JSON object per line")
            rows.append(row)
    return rows


def with_ids(rows: list[dict[str, Any]], task: str | None) -> list[dict[str, Any]]:
    """Fill rollout_id / prompt_id / task when absent; `row` remembers the input position."""
    out = []
    for i, row in enumerate(rows):
        content = json.dumps(row, sort_keys=True, default=str, ensure_ascii=False)
        out.append(
            {
                **row,
                "rollout_id": row.get("rollout_id") or hashlib.sha256(f"{i}\x00{content}".encode()).hexdigest(),
                "prompt_id": row.get("prompt_id")
                or hashlib.sha256(
                    json.dumps(row.get("messages") or row.get("prompt"), sort_keys=True, default=str).encode()
                ).hexdigest(),
                "task": row.get("task") or task,
                "_row": i,
            }
        )
    return out


def write_output(rows: list[dict[str, Any]], path: Path) -> None:
    """Write to a temp file beside `path`, then rename: a crash never leaves half an output."""
    rows = sorted(rows, key=lambda r: (r["row"], r["aspect"]))
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        if path.suffix == ".parquet":
            pq.write_table(pa.Table.from_pylist(rows, schema=OUTPUT_SCHEMA), tmp, **PARQUET_OPTIONS)
        else:
            tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


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
    rows = with_ids(read_rows(args.input), args.task)
    index = {r["rollout_id"]: r["_row"] for r in rows}
    cfg = BeamConfig(runner=args.runner, direct_num_workers=args.workers)
    with tempfile.TemporaryDirectory(prefix="rewardmill-label-") as work:
        # Outputs go through files (not driver-side lists) so any runner, multi-process included, works.
        with beam.Pipeline(options=pipeline_options(cfg)) as p:
            out = (
                p
                | "Rows" >> beam.Create(rows)
                | "Label" >> LabelAll(LabelRollouts(cls, config, args.labeler, args.cache, total=len(rows)))
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
        labels = read_stage_rows(f"{work}/labels")
        rejected = read_stage_rows(f"{work}/{REJECTS_DIR}")
        skipped = pop_json(f"{work}/skipped.json")
    for r in rejected:
        log.warning("row %s: %s (%s)", index.get(r["row_id"]), r["reason"], r["detail"])
    write_output([{**lab, "row": index[lab["rollout_id"]]} for lab in labels], args.output)
    verdicts: dict[str, int] = {}
    for lab in labels:
        verdicts[lab["verdict"]] = verdicts.get(lab["verdict"], 0) + 1
    log.info(
        "label: %d rows -> %d labels %s, %d rejected, %d not applicable (task); wrote %s",
        len(rows),
        len(labels),
        dict(sorted(verdicts.items())),
        len(rejected),
        skipped,
        args.output,
    )
