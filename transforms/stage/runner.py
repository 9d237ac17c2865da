"""How a stage runs: the Beam runner from params `beam` (its options, a wheel for remote workers), logging that keeps a
user's mistake to one line, running one pipeline and reading its counters, and the paths a cluster's workers can reach.
"""

import importlib.util
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from rewardmill.transforms.config import in_workspace, load_section
from rewardmill.transforms.errors import is_user_error
from rewardmill.transforms.io import timings
from rewardmill.transforms.stage.worker_threads import shared_cores

log = logging.getLogger("rewardmill")


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
# transforms/stage/dask_runner.py, which is also what its full path selects).
RUNNERS = {
    "DaskRunner": "rewardmill.transforms.stage.dask_runner.DaskRunner",
    "apache_beam.runners.dask.dask_runner.DaskRunner": "rewardmill.transforms.stage.dask_runner.DaskRunner",
}


def check_runner(name: str) -> None:
    """A runner Beam (or RUNNERS) knows by name, or an importable module's class; else a clear error before any
    work (Beam itself would fail only when the first pipeline is built)."""
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


def cache_arg(path: str | None) -> str | None:
    """A stage's `--cache` folder, absolute; a relative one names the workspace's folder when the stage runs in a DVC
    experiment's copy of the repo (`in_workspace`: experiments share the workspace's caches)."""
    return None if path is None else absolute(in_workspace(path))


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


# Beam's own runners of this machine: `direct_num_workers` says how many worker processes they start.
DIRECT_RUNNERS = ("FnApiRunner", "DirectRunner")
# Runners whose workers import the installed rewardmill (RUNNERS' Dask runner too): no wheel to stage.
LOCAL_RUNNERS = (*DIRECT_RUNNERS, *RUNNERS.values())


def pipeline_options(cfg: BeamConfig, stage_wheel: bool = True) -> PipelineOptions:
    """The runner's flags from params `beam`; `stage_wheel=False` skips building the workers' wheel (the driver's
    FileSystems need only the storage options)."""
    runner = RUNNERS.get(cfg.runner, cfg.runner)
    flags = [f"--runner={runner}", *cfg.options]
    if cfg.package and stage_wheel and runner not in LOCAL_RUNNERS:
        from rewardmill.transforms.stage.package import worker_wheel

        flags.append(f"--extra_package={worker_wheel()}")
    if cfg.dask_client_address:
        flags.append(f"--dask_client_address={cfg.dask_client_address}")
    if cfg.dask_scheduler_file:
        flags.append(f"--dask_scheduler_file={cfg.dask_scheduler_file}")
    if cfg.runner in DIRECT_RUNNERS:
        flags.append(f"--direct_num_workers={cfg.direct_num_workers}")
        if local_worker_processes(cfg) > 1:
            flags.append("--direct_running_mode=multi_processing")
    return PipelineOptions(flags)


def local_worker_processes(cfg: BeamConfig) -> int:
    """How many worker processes this machine starts for a pipeline (1: the DoFns run here, or elsewhere)."""
    return cfg.direct_num_workers if cfg.runner in DIRECT_RUNNERS else 1


@contextmanager
def running(cfg: BeamConfig) -> Iterator[beam.Pipeline]:
    """A Beam pipeline on params `beam`'s runner, run when the block ends; local worker processes share the cores out
    (transforms/stage/worker_threads.py)."""
    with shared_cores(local_worker_processes(cfg)), beam.Pipeline(options=pipeline_options(cfg)) as p:
        yield p


class _NoTracebackForUserErrors(logging.Filter):
    """Beam logs an exception a DoFn raises, traceback and all, before it re-raises it to the driver. A user's mistake
    (a missing file, a params value) then ends as the CLI's one line, so Beam's copy is dropped; any other exception
    (a bug) keeps its logged traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.msg if isinstance(record.msg, BaseException) else (record.exc_info or (None, None))[1]
        if exc is None:
            return True
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
    with timings.timed("pipeline"), running(cfg) as p:
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
