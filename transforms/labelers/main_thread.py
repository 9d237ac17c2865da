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
    def __init__(self, processes: int = 1):
        self.processes = processes
        self._pool = None

    def __getstate__(self):  # pools don't pickle; a copy starts its own when first used
        return {**self.__dict__, "_pool": None}

    def _ensure_pool(self):
        if self._pool is None:
            self._pool = multiprocessing.get_context("spawn").Pool(self.processes)
        return self._pool

    def call(self, fn: Callable, args: tuple, hard_timeout: float) -> Any:
        if threading.current_thread() is threading.main_thread():
            return fn(*args)
        result = self._ensure_pool().apply_async(fn, args)
        try:
            return result.get(timeout=hard_timeout)
        except multiprocessing.TimeoutError as exc:
            self.close()
            raise HardTimeout(f"no result after {hard_timeout:.0f}s") from exc

    def map(self, fn: Callable, arglist: list[tuple], hard_timeout: float) -> list[Any]:
        """fn(*args) for each args on the helper processes (in parallel, in order), each bounded by hard_timeout."""
        pool = self._ensure_pool()
        # One task per process (a chunk of calls each): far less IPC than one task per call.
        size = -(-len(arglist) // self.processes) if arglist else 1
        chunks = [arglist[i : i + size] for i in range(0, len(arglist), size)]
        pending = [(pool.apply_async(_call_each, (fn, chunk)), len(chunk)) for chunk in chunks]
        try:
            return [out for result, n in pending for out in result.get(timeout=hard_timeout * n)]
        except multiprocessing.TimeoutError as exc:
            self.close()
            raise HardTimeout(f"a call gave no result after {hard_timeout:.0f}s") from exc

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None


def _call_each(fn: Callable, arglist: list[tuple]) -> list[Any]:
    return [fn(*args) for args in arglist]
