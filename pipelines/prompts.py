"""Stage `prompts`: ingest the sources in params, normalize, dedup by prompt_id, split by hash (data/prompts/).

A missing source file fails before Beam runs; a row that cannot be a prompt (not UTF-8, not JSON, no reference, ...)
is a reject with its reason; a source that yields no prompt fails the stage naming it and why; a split the hash left
empty is a warning, and the manifest records the split and per-source counts.
"""

import argparse
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import apache_beam as beam

from rewardmill.schemas import PROMPT_V1
from rewardmill.transforms.config import ConfigError, load_section, params_path
from rewardmill.transforms.io import storage
from rewardmill.transforms.io.json_file import WriteJson, pop_json
from rewardmill.transforms.io.parquet import WriteSortedParquet
from rewardmill.transforms.sources.normalize import RecordError, normalize
from rewardmill.transforms.sources.outcomes import READ, SourceOutcomes, check_nonempty, split_warning
from rewardmill.transforms.sources.registry import check_sources, default_task, parse_source
from rewardmill.transforms.stage.conservation import ConservationError, distinct_ids, id_frame, reconcile, reject_rows
from rewardmill.transforms.stage.outputs import reject, write_rejects
from rewardmill.transforms.stage.runner import absolute_args, load_beam_config, setup_logging
from rewardmill.transforms.stage.skeleton import ManifestSpec, StageRun, run_stage

log = logging.getLogger("rewardmill")

STAGE = "prompts"
REJECTED = "rejected"
OUTCOME = "outcome"  # (source, (reject reason, row_id, detail)) of every reject, for the per-source counts
SOURCES_FILE = "_sources.json"  # records and rejects per source (main() reconciles, checks and deletes it)


@dataclass(frozen=True)
class PromptsConfig:
    """params `prompts`."""

    sources: tuple[dict, ...]  # each {name, kind: arithmetic|file|hf, ...kind options}
    test_fraction: float = 0.1  # share of prompt hashes that go to the test split
    num_shards: int = 1
    # Keep math prompts that have no reference (rejected as missing_reference otherwise): a self_consistency labeler
    # then labels them against the majority answer of their rollouts (a pseudo-reference).
    keep_unreferenced_math: bool = False

    def __post_init__(self):
        if not self.sources:
            raise ValueError("at least one source is needed")
        if not 0.0 <= self.test_fraction < 1.0:
            raise ValueError("test_fraction must be in [0, 1)")

    def parsed_sources(self):
        parsed = [parse_source(raw, f"prompts.sources[{i}]") for i, raw in enumerate(self.sources)]
        names = [s.name for s in parsed]
        if len(set(names)) != len(names):
            raise ConfigError(f"params.yaml: prompts.sources names must be unique, got {names}")
        return parsed


class ReadSource(beam.DoFn):
    """source config -> (source, row_id, record | RecordError)."""

    def process(self, source):
        for row_id, record in source.records():
            yield source.name, default_task(source), row_id, record


class Normalize(beam.DoFn):
    """Main output: PROMPT_V1 rows; tagged `rejected`: REJECT_V1 rows with the reason."""

    def __init__(self, test_fraction: float, keep_unreferenced_math: bool = False):
        self.test_fraction = test_fraction
        self.keep_unreferenced_math = keep_unreferenced_math

    def process(self, element) -> Iterable[Any]:  # Any: Beam cannot infer KV through TaggedOutput
        source, task, row_id, record = element
        if isinstance(record, RecordError):
            yield from _rejected(source, row_id, record)
            return
        try:
            row = normalize(record, source, task, self.test_fraction, self.keep_unreferenced_math)
        except RecordError as exc:
            yield from _rejected(source, row_id, exc, record)
            return
        yield row["prompt_id"], (row_id, row)


def _rejected(source: str, row_id: str, error: RecordError, record: Any = None):
    beam.metrics.Metrics.counter(STAGE, f"rejected_{error.reason}").inc()
    yield beam.pvalue.TaggedOutput(REJECTED, reject(STAGE, row_id, error.reason, error.detail, record))
    yield beam.pvalue.TaggedOutput(OUTCOME, (source, (error.reason, row_id, error.detail)))


class Dedup(beam.DoFn):
    """Keep the first occurrence (by row id) of each prompt_id; the others are rejected as duplicates."""

    def process(self, element):
        pid, items = element
        items = sorted(items, key=lambda item: item[0])
        yield items[0][1]
        for row_id, row in items[1:]:
            detail = f"same prompt_id as {items[0][0]}"
            yield beam.pvalue.TaggedOutput(REJECTED, reject(STAGE, row_id, "duplicate_prompt", detail, row))
            yield beam.pvalue.TaggedOutput(OUTCOME, (row["source"], ("duplicate_prompt", row_id, detail)))


def build(p, cfg: PromptsConfig, out_dir: str) -> None:
    records = p | "Sources" >> beam.Create(cfg.parsed_sources()) | "Read sources" >> beam.ParDo(ReadSource())
    normalized = records | "Normalize" >> beam.ParDo(
        Normalize(cfg.test_fraction, cfg.keep_unreferenced_math)
    ).with_outputs(REJECTED, OUTCOME, main="rows")
    deduped = (
        normalized.rows
        | "Group by prompt_id" >> beam.GroupByKey()
        | "Dedup" >> beam.ParDo(Dedup()).with_outputs(REJECTED, OUTCOME, main="rows")
    )
    read = records | "Each record read" >> beam.Map(lambda element: (element[0], (READ, element[2], "")))
    _ = (
        (read, normalized[OUTCOME], deduped[OUTCOME])
        | "All outcomes" >> beam.Flatten()
        | "Outcomes per source" >> beam.CombineGlobally(SourceOutcomes())
        | "Write outcomes" >> beam.ParDo(WriteJson(storage.join(out_dir, SOURCES_FILE)))
    )
    _ = deduped.rows | "Write prompts" >> WriteSortedParquet(
        out_dir, PROMPT_V1, sort_key=_prompt_key, num_shards=cfg.num_shards
    )
    rejects = (normalized[REJECTED], deduped[REJECTED]) | "All rejects" >> beam.Flatten()
    write_rejects(rejects, out_dir)


def _prompt_key(row: dict[str, Any]) -> str:
    return row["prompt_id"]


def check_output(tmp: str, sources: list) -> dict[str, Any]:
    """The finished prompts checked (conservation, then a prompt from every source); returns the manifest's split and
    per-source counts."""
    outcomes = pop_json(storage.join(tmp, SOURCES_FILE))
    if outcomes is None:
        raise ConservationError(f"{STAGE}: the runner did not run the record count; nothing was written")
    # every source record is a prompt or a reject (invalid, duplicate, ...); no prompt at all is the check below's
    reconcile(
        STAGE,
        inputs=sum(entry["records"] for entry in outcomes.values()),
        outputs=distinct_ids(tmp, ["prompt_id"]),
        rejects=reject_rows(tmp),
        unit="source records",
        allow_empty=True,
    )
    written = id_frame(tmp, ["source", "split"])
    per_source = dict(written["source"].value_counts().iter_rows())
    check_nonempty(outcomes, per_source, sources, str(params_path()))
    splits = {split: written.filter(written["split"] == split).height for split in ("train", "test")}
    counts = {
        source.name: {
            "prompts": per_source.get(source.name, 0),
            "records": outcomes.get(source.name, {}).get("records", 0),
            "rejects": dict(sorted(outcomes.get(source.name, {}).get("rejects", {}).items())),
        }
        for source in sources
    }
    return {"splits": splits, "sources": counts}


def warn_of_empty_splits(run: StageRun, test_fraction: float) -> None:
    warning = split_warning(run.manifest["splits"], test_fraction)
    if warning:
        log.warning(warning)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--out", default="data/prompts", help="the prompts folder to write (Parquet shards, _rejects/, manifest)"
    )
    args = absolute_args(parser.parse_args(argv), "out")
    setup_logging()
    beam_cfg = load_beam_config()
    cfg = load_section(PromptsConfig, "prompts")
    sources = cfg.parsed_sources()  # fail on a bad source before any work
    check_sources(sources, str(params_path()))  # and on a missing file, before Beam runs
    run_stage(
        STAGE,
        args.out,
        beam_cfg,
        lambda p, tmp: build(p, cfg, tmp),
        ManifestSpec(PROMPT_V1, cfg, extra=lambda done: done.checked),
        check=lambda tmp, result: check_output(tmp, sources),
        log_run=lambda run: warn_of_empty_splits(run, cfg.test_fraction),
    )


if __name__ == "__main__":
    main()
