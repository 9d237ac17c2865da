"""Wall time a stage process spends inside named kinds of work, for bench/overhead.py.

Off unless the environment variable REWARDMILL_TIMINGS names a file: then every `timed(kind)` block adds its wall
time to its kind, and the process appends one JSON line to that file when it exits:
{"stage", "wall", "kinds": {kind: seconds}, "split": {part: seconds}}. Concurrent or nested blocks count once: a
kind's time is the wall time during which at least one of its blocks was open, and the kind `inside` is the wall time
during which any model or verifier block was open (MODEL_KINDS), so threads labeling in parallel are not counted
twice. `split` divides the process's wall time into inside / parquet / validation / pipeline / startup / other
(PRIORITY), each moment once, so its parts add up to `wall`.

Model and verifier work: `generate` (sampling), `labeler` (a labeler's label/label_many/label_group: rule verifiers
and judges, with the judge model calls inside), `steps` (a step labeler's chunk: continuations or judge calls),
`model_load` (loading or materializing weights), `train` and `score` (the evaluate stage's reward model).
Framework work timed so the bench can name it: `parquet` (reading and writing stage files), `validation` (Great
Expectations suites and Data Docs in the validate stage), `pipeline` (the Beam pipeline run), and `startup` (from
process start to the pipeline's construction: imports, params, planning).
"""

import atexit
import json
import os
import threading
import time
from collections import defaultdict
from contextlib import contextmanager

ENV = "REWARDMILL_TIMINGS"
MODEL_KINDS = frozenset({"generate", "labeler", "steps", "model_load", "train", "score"})


# Where a moment of wall time goes when several kinds are open: model and verifier work first, then Parquet, then Great
# Expectations, then the rest of the Beam pipeline, then start-up; a moment with none open is `other` (manifests,
# renames, exit).
PRIORITY = ("inside", "parquet", "validation", "pipeline", "startup")


class Clock:
    """Per-kind wall time covered by at least one open block, and the process's wall time split by PRIORITY
    (`partition`: each moment counted once, under the first open kind). Thread-safe."""

    def __init__(self, origin: float | None = None):
        self.lock = threading.Lock()
        self.open: dict[str, int] = defaultdict(int)
        self.since: dict[str, float] = {}
        self.total: dict[str, float] = defaultdict(float)
        self.split: dict[str, float] = defaultdict(float)
        self.last = origin

    def _advance(self, now: float) -> None:
        if self.last is not None:
            top = next((kind for kind in PRIORITY if self.open[kind] > 0), "other")
            self.split[top] += now - self.last
        self.last = now

    def enter(self, kinds: tuple[str, ...], now: float) -> None:
        with self.lock:
            self._advance(now)
            for kind in kinds:
                if self.open[kind] == 0:
                    self.since[kind] = now
                self.open[kind] += 1

    def leave(self, kinds: tuple[str, ...], now: float) -> None:
        with self.lock:
            self._advance(now)
            for kind in kinds:
                self.open[kind] -= 1
                if self.open[kind] == 0:
                    self.total[kind] += now - self.since.pop(kind)

    def totals(self) -> dict[str, float]:
        with self.lock:
            return dict(self.total)

    def partition(self, now: float) -> dict[str, float]:
        with self.lock:
            self._advance(now)
            return dict(self.split)


STAGE: dict[str, str] = {}


def enabled() -> bool:
    return bool(os.environ.get(ENV))


@contextmanager
def timed(kind: str):
    """Count the block's wall time under `kind` (and under `inside` for model and verifier kinds)."""
    if not enabled():
        yield
        return
    kinds = (kind, "inside") if kind in MODEL_KINDS else (kind,)
    CLOCK.enter(kinds, time.perf_counter())
    try:
        yield
    finally:
        CLOCK.leave(kinds, time.perf_counter())


def _process_age() -> float:
    """Seconds since this process started, from Linux /proc (10 ms ticks); 0 elsewhere."""
    try:
        ticks = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19])
        uptime = float(open("/proc/uptime").read().split()[0])
        return max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


_STARTED = time.perf_counter() - _process_age()  # one anchor, so every figure of a process is on the same clock
CLOCK = Clock(origin=_STARTED)


def process_seconds() -> float:
    """Wall seconds since this process started."""
    return time.perf_counter() - _STARTED


def start(stage: str) -> None:
    """Name this process's record and write it at exit; `startup` runs until `pipeline_started()`."""
    if not enabled() or STAGE:
        return
    STAGE["name"] = stage
    CLOCK.enter(("startup",), _STARTED)
    atexit.register(write)


def pipeline_started() -> None:
    if enabled() and STAGE and CLOCK.open.get("startup"):
        CLOCK.leave(("startup",), time.perf_counter())


def write() -> None:
    pipeline_started()
    now = time.perf_counter()
    record = {
        "stage": STAGE.get("name"),
        "pid": os.getpid(),
        "wall": now - _STARTED,
        "kinds": CLOCK.totals(),
        "split": CLOCK.partition(now),
    }
    with open(os.environ[ENV], "a", encoding="utf-8") as fh:  # one short line per process: appends do not interleave
        fh.write(json.dumps(record, sort_keys=True) + "\n")
