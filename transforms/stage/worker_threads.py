"""The threads each multi-process FnApiRunner worker gives torch and other OpenMP libraries.

With `beam.direct_num_workers: N > 1` the stage's DoFns run in N worker processes, and each would size its torch
thread pool to every core of the machine. Two such workers running a model at once spin for cores the other holds:
on 2 cores they took 2.4x as long as with one thread each (bench/worker_threads.py, ratio 0.42). So the cores are
shared out: cores // N threads each, at least 1. The workers inherit the driver's environment when Beam starts them,
so OMP_NUM_THREADS is set for the pipeline's run and restored after; a value the user set is kept as it is.

Dask workers need nothing here: a Dask nanny starts each worker with OMP_NUM_THREADS=1 (distributed's
`distributed.nanny.pre-spawn-environ`).
"""

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger("rewardmill")
VARIABLE = "OMP_NUM_THREADS"


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container or taskset may narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def threads_per_worker(workers: int, cores: int) -> int:
    """The cores shared out over `workers` processes, at least one each."""
    return max(1, cores // max(1, workers))


@contextmanager
def shared_cores(workers: int) -> Iterator[int | None]:
    """While open, worker processes started from here get OMP_NUM_THREADS = their share of the cores; yields that
    share, or None when there is one worker or the user set OMP_NUM_THREADS (then nothing changes)."""
    if workers <= 1 or VARIABLE in os.environ:
        yield None
        return
    threads = threads_per_worker(workers, usable_cores())
    os.environ[VARIABLE] = str(threads)
    log.info("beam: %d worker processes, %d torch thread(s) each (%s)", workers, threads, VARIABLE)
    try:
        yield threads
    finally:
        os.environ.pop(VARIABLE, None)
