"""Run a function in the main thread of a helper process, with a hard wall-clock bound.

math-verify bounds its own time with `signal.alarm`, which works only in a main thread; Beam calls DoFns from
worker threads. A one-process pool runs each call in its child's main thread, and a call that still hangs past
the hard bound (C code ignoring the alarm) gets the child killed and replaced.
"""

import multiprocessing
import threading
from collections.abc import Callable
from typing import Any


class HardTimeout(Exception):
    pass


class MainThreadRunner:
    def __init__(self):
        self._pool = None

    def __getstate__(self):  # pools don't pickle; a copy starts its own when first used
        return {"_pool": None}

    def call(self, fn: Callable, args: tuple, hard_timeout: float) -> Any:
        if threading.current_thread() is threading.main_thread():
            return fn(*args)
        if self._pool is None:
            self._pool = multiprocessing.get_context("spawn").Pool(1)
        result = self._pool.apply_async(fn, args)
        try:
            return result.get(timeout=hard_timeout)
        except multiprocessing.TimeoutError as exc:
            self.close()
            raise HardTimeout(f"no result after {hard_timeout:.0f}s") from exc

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None
