"""What every stage driver shares: runner options, an atomic output folder, rejects, and the manifest.

A stage writes into `<out>.tmp-<pid>/`, writes `_manifest.json` last, then renames the folder into place, so a
crash never leaves a half dataset that DVC would cache. Manifests hold no timestamps: reruns give equal bytes.
"""

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apache_beam as beam
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from rewardmill.pipelines.config import canonical_json, load_section, params_hash
from rewardmill.schemas import REJECT_V1
from rewardmill.schemas.common import schema_id
from rewardmill.transforms.io import storage, timings
from rewardmill.transforms.io.parquet import WriteSortedParquet, list_shards, read_table

log = logging.getLogger("rewardmill")

REJECTS_DIR = "_rejects"
MANIFEST = "_manifest.json"


@dataclass(frozen=True)
class BeamConfig:
    """params `beam`: which Beam runner executes every stage."""

    runner: str = "FnApiRunner"  # in-process; DirectRunner would first try to download Prism
    direct_num_workers: int = 1  # FnApiRunner parallelism; >1 uses multi-process workers
    options: tuple[str, ...] = ()  # extra pipeline flags for other runners, e.g. ["--dask_gateway=..."]
    dask_client_address: str | None = None  # DaskRunner: the scheduler, e.g. tcp://10.0.0.5:8786
    dask_scheduler_file: str | None = None  # DaskRunner: or the scheduler file `dask scheduler` wrote
    # Remote runners (Flink, Spark, Dataflow): build a wheel of this checkout and stage it for the workers
    # (--extra_package); their image provides the dependencies. Dask workers need rewardmill installed instead.
    package: bool = False

    def __post_init__(self):
        check_runner(self.runner)
        if self.direct_num_workers < 1:
            raise ValueError(f"direct_num_workers must be >= 1, got {self.direct_num_workers}")


# Runner names Beam does not know by itself -> the class that runs them (Beam's own Dask runner loses rows: see
# pipelines/dask_runner.py, which is also what its full path selects).
RUNNERS = {
    "DaskRunner": "rewardmill.pipelines.dask_runner.DaskRunner",
    "apache_beam.runners.dask.dask_runner.DaskRunner": "rewardmill.pipelines.dask_runner.DaskRunner",
}


def check_runner(name: str) -> None:
    """A runner Beam (or RUNNERS) knows by name, or an importable module's class; else a clear error before any
    work (Beam itself would fail only when the first pipeline is built)."""
    import importlib.util

    from apache_beam.runners.runner import _RUNNER_MAP

    name = RUNNERS.get(name, name)
    if name.lower() in _RUNNER_MAP or f"{name.lower()}runner" in _RUNNER_MAP:
        return
    module = name.rpartition(".")[0]
    try:
        found = bool(module) and importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        short = {path.rpartition(".")[2] for path in _RUNNER_MAP.values() if "Test" not in path} | {"DaskRunner"}
        raise ValueError(
            f"runner {name!r} is not a Beam runner: use one of {sorted(short)} or the full path of a PipelineRunner "
            "class"
        )


def absolute(path: str) -> str:
    """A local path made absolute (workers of a cluster runner run in other working directories); a URL
    (s3://, gs://, ...) as given."""
    return path if "://" in path else str(Path(path).resolve())


def recorded(path: str) -> str:
    """A path as outputs record it: relative to the working directory (the DVC project) when inside it, so a
    manifest does not depend on where the project lives."""
    if "://" in path:
        return path
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path


def absolute_args(args, *names: str):
    """`args` (argparse) with the paths `names` made absolute (see `absolute`); None stays None."""
    for name in names:
        value = getattr(args, name)
        if value is not None:
            setattr(args, name, absolute(value))
    return args


def load_beam_config() -> BeamConfig:
    """params `beam`; its options also go to Beam FileSystems in this process, so the driver's own reads and writes
    (manifests, counts, the output's publishing) reach s3:// or gs:// the way the workers do. Load it before the
    first file operation."""
    cfg = load_section(BeamConfig, "beam")
    FileSystems.set_options(pipeline_options(cfg, stage_wheel=False))
    return cfg


# Runners whose workers import the installed rewardmill (RUNNERS' Dask runner too): no wheel to stage.
LOCAL_RUNNERS = ("FnApiRunner", "DirectRunner", *RUNNERS.values())


def pipeline_options(cfg: BeamConfig, stage_wheel: bool = True) -> PipelineOptions:
    """The runner's flags from params `beam`; `stage_wheel=False` skips building the workers' wheel (the driver's
    FileSystems need only the storage options)."""
    runner = RUNNERS.get(cfg.runner, cfg.runner)
    flags = [f"--runner={runner}", *cfg.options]
    if cfg.package and stage_wheel and runner not in LOCAL_RUNNERS:
        from rewardmill.pipelines.package import worker_wheel

        flags.append(f"--extra_package={worker_wheel()}")
    if cfg.dask_client_address:
        flags.append(f"--dask_client_address={cfg.dask_client_address}")
    if cfg.dask_scheduler_file:
        flags.append(f"--dask_scheduler_file={cfg.dask_scheduler_file}")
    if cfg.runner in ("FnApiRunner", "DirectRunner"):
        flags.append(f"--direct_num_workers={cfg.direct_num_workers}")
        if cfg.direct_num_workers > 1:
            flags.append("--direct_running_mode=multi_processing")
    return PipelineOptions(flags)


class _NoTracebackForUserErrors(logging.Filter):
    """Beam logs an exception a DoFn raises, traceback and all, before it re-raises it to the driver. A user's mistake
    (a missing file, a params value) then ends as the CLI's one line, so Beam's copy is dropped; any other exception
    (a bug) keeps its logged traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.msg if isinstance(record.msg, BaseException) else (record.exc_info or (None, None))[1]
        if exc is None:
            return True
        from rewardmill.pipelines.cli import is_user_error

        return not is_user_error(exc)


NO_TRACEBACK_FOR_USER_ERRORS = _NoTracebackForUserErrors()  # one instance: adding it again is a no-op
BEAM_ERROR_LOGGER = "apache_beam.runners.common"  # where Beam logs a failed DoFn's exception


def setup_logging() -> None:
    logging.getLogger(BEAM_ERROR_LOGGER).addFilter(NO_TRACEBACK_FOR_USER_ERRORS)
    # Imports (Beam, absl) may have configured the root logger already; give ours its own handler.
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    # Beam's runner logs each bundle at INFO; keep the stage's own progress readable.
    for noisy in ("apache_beam", "absl", "httpx", "datasets", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


@contextlib.contextmanager
def atomic_output(out: str | Path) -> Iterator[str]:
    """Yield a temp folder beside `out` (absolute: workers of a cluster runner run in other working directories); on
    success it replaces `out` whole, on failure it is removed. On an object store (s3://, gs://) the temp folder is
    a sibling prefix, its writability is checked first, and it is published manifests last (`publish_folder`)."""
    if storage.is_url(out):
        tmp = f"{str(out).rstrip('/')}.tmp-{os.getpid()}"
        storage.check_writable(tmp)
        storage.remove_tree(tmp)
        try:
            yield tmp
        except BaseException:
            storage.remove_tree(tmp)
            raise
        storage.publish_folder(tmp, str(out), last=MANIFEST)
        return
    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        yield str(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = out.with_name(f"{out.name}.old-{os.getpid()}")
    if out.exists():
        out.rename(old)
    tmp.rename(out)
    shutil.rmtree(old, ignore_errors=True)


def write_rejects(rejects, directory: str) -> None:
    """Write a PCollection of REJECT_V1 rows to `directory/_rejects/` (always, even when empty)."""
    _ = rejects | "Write rejects" >> WriteSortedParquet(
        storage.join(directory, REJECTS_DIR),
        REJECT_V1,
        sort_key=lambda r: f"{r['row_id']}\x00{r['reason']}\x00{r['stage']}",
    )


def reject(stage: str, row_id: str | None, reason: str, detail: str = "", payload: Any = None) -> dict[str, Any]:
    return {
        "stage": stage,
        "row_id": row_id,
        "reason": reason,
        "detail": detail,
        "payload": None if payload is None else json.dumps(payload, sort_keys=True, default=str, ensure_ascii=False),
    }


def count_rows(directory: str | Path) -> int:
    """Rows in the data shards of a stage output folder (local or a FileSystems URL), from the files' footers."""
    total = 0
    for path in list_shards(str(directory)):
        with FileSystems.open(path) as fh:
            total += pq.ParquetFile(fh).metadata.num_rows
    return total


def count_rejects(directory: str | Path) -> dict[str, int]:
    reasons: Counter[str] = Counter()
    for path in list_shards(storage.join(directory, REJECTS_DIR)):
        reasons.update(read_table(path, columns=["reason"]).column("reason").to_pylist())
    return dict(sorted(reasons.items()))


def digest_path(path: str | Path) -> str:
    """sha256 over a file or every file in a folder (relative names + bytes), in sorted order; local or a store."""
    path = str(path)
    h = hashlib.sha256()
    single = storage.is_file(path)
    for f in [path] if single else storage.files_under(path):
        h.update((f.rsplit("/", 1)[-1] if single else storage.relative(f, path)).encode() + b"\0")
        with FileSystems.open(f) as fh:
            for chunk in iter(lambda fh=fh: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def write_manifest(
    directory: str | Path,
    *,
    stage: str,
    schema,
    config: Any,
    inputs: dict[str, str | Path] | None = None,
    extra: dict[str, Any] | None = None,
    input_digests: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Row counts, rejects by reason, schema version, params hash and input digests; deterministic JSON.

    `inputs`: name -> path, hashed here; `input_digests`: name -> digest_path() already taken (a stage writing
    several manifests over the same inputs hashes them once)."""
    digests = {name: digest_path(p) for name, p in (inputs or {}).items()} | (input_digests or {})
    manifest = {
        "stage": stage,
        "schema": schema_id(schema) if schema is not None else None,
        "rows": count_rows(directory),
        "rejects": count_rejects(directory),
        "params_hash": params_hash(config),
        "params": json.loads(canonical_json(config)),
        "inputs": dict(sorted(digests.items())),
        **(extra or {}),
    }
    storage.write_text(storage.join(directory, MANIFEST), json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Write JSON whole or not at all (`storage.write_text`: temp file then rename; readers never see half a file)."""
    storage.write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def read_manifest(directory: str | Path) -> dict[str, Any]:
    path = storage.join(directory, MANIFEST)
    if not storage.exists(path):
        raise FileNotFoundError(f"{path}: missing; the upstream stage did not finish (run `dvc repro`)")
    return json.loads(storage.read_text(path))


class StageTimer:
    """Logs the stage's start and a one-line summary at the end (timings go to logs, never to outputs)."""

    def __init__(self, stage: str):
        self.stage = stage
        self.start = time.monotonic()
        log.info("%s: starting", stage)

    def done(self, manifest: dict[str, Any]) -> None:
        took = time.monotonic() - self.start
        rejects = sum(manifest.get("rejects", {}).values())
        log.info(
            "%s: done in %.1fs: %d rows, %d rejects %s",
            self.stage,
            took,
            manifest["rows"],
            rejects,
            manifest.get("rejects") or "",
        )


def run_pipeline(build, cfg: BeamConfig):
    """Build and run one Beam pipeline; `build(p)` attaches the transforms. Returns the PipelineResult (for its
    metrics; some runners give none)."""
    timings.pipeline_started()
    with timings.timed("pipeline"), beam.Pipeline(options=pipeline_options(cfg)) as p:
        build(p)
    return getattr(p, "result", None)


def counter_totals(result, namespace: str) -> dict[str, int]:
    """{counter name: committed total} of a finished pipeline's counters in `namespace` ({} when the runner
    reports no metrics). Counters are summed over steps and workers."""
    from apache_beam.metrics.metric import MetricsFilter

    if result is None:
        return {}
    try:
        counters = result.metrics().query(MetricsFilter().with_namespace(namespace))["counters"]
    except (NotImplementedError, AttributeError):  # runners without a metrics API
        return {}
    totals: dict[str, int] = {}
    for counter in counters:
        value = counter.committed if counter.committed is not None else counter.attempted
        totals[counter.key.metric.name] = totals.get(counter.key.metric.name, 0) + int(value or 0)
    return dict(sorted(totals.items()))
