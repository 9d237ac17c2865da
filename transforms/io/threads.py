"""A DoFn whose work per element runs on a few threads, for cores that release the GIL (polars, pyarrow).

FnApiRunner hands a stage its elements one at a time in one thread; a bucket or a shard is seconds of work that is
partly single-threaded Python, so two of them at once keep both cores busy. Results are emitted in the bundle's own
thread (Beam's output and metrics are not thread-safe), in the order elements arrived.
"""

from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue


class ThreadedDoFn(beam.DoFn):
    """Subclasses define `work(element, *side_inputs)` (runs on a pool thread: no Beam calls there) and
    `emit(result)` (runs in the bundle thread: yields outputs, counts metrics). `threads` elements are worked on at
    once and as many more wait in the pool's queue, so a thread that finishes a short element starts the next one
    while a long one still runs (waiting for the oldest before queueing more left a thread idle: assemble's prompt
    filters beside its shards). Results are emitted oldest first; finish_bundle waits for all, so a bundle ends only
    once its work is done. Global window only."""

    def __init__(self, threads: int = 2):
        self.threads = threads

    def work(self, element, *args) -> Any:
        raise NotImplementedError

    def emit(self, result) -> Iterable[Any]:
        yield result

    def setup(self):
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix=type(self).__name__)

    def start_bundle(self):
        self._pending: deque[Future] = deque()

    def process(self, element, *args):
        self._pending.append(self._pool.submit(self.work, element, *args))
        while len(self._pending) > 2 * self.threads:
            yield from self.emit(self._pending.popleft().result())  # result() re-raises the work's error

    def finish_bundle(self):
        while self._pending:
            for output in self.emit(self._pending.popleft().result()):
                if isinstance(output, beam.pvalue.TaggedOutput):
                    yield beam.pvalue.TaggedOutput(output.tag, _windowed(output.value))
                else:
                    yield _windowed(output)

    def teardown(self):
        self._pool.shutdown(wait=True)


def _windowed(value) -> WindowedValue:
    return WindowedValue(value, MIN_TIMESTAMP, [GlobalWindow()])


def concurrently(calls: dict[str, Callable[[], Any]], threads: int = 2) -> dict[str, Any]:
    """{name: call()} for independent calls that release the GIL (file reads, polars), `threads` at a time; the
    first error is raised."""
    with ThreadPoolExecutor(threads) as pool:
        futures = {name: pool.submit(call) for name, call in calls.items()}
        return {name: future.result() for name, future in futures.items()}
