"""An append-only key -> JSON-dict store kept in JSONL segment files, for caches that must survive a killed stage.

Each flush writes the pending entries as one new segment: a local file under a temp name renamed into place, or one
object PUT on a store such as s3://. A reader (or a rerun after `kill -9`) sees whole segments or nothing: what was
flushed survives, what was not is recomputed. Segments are never rewritten, so several workers can append to one
folder without locks, and the folder can be shared storage that all workers of a cluster reach (Beam FileSystems: a
mount, s3://, gs://). A torn or malformed line (an older format, a disk-full write outside this code) is skipped,
which only costs recomputing that entry.

Used by the label cache (`transforms/labelers/cache.py`) and the judge call cache (`transforms/judges/call_cache.py`).
One store per worker thread: it holds no locks, and pickling ships its settings only (each worker loads the
segments itself on first use).
"""

import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

from rewardmill.transforms.io import storage

T = TypeVar("T")

SEGMENT_GLOB = "segment-*.jsonl"


def _identity(value: Any) -> Any:
    return value


class SegmentStore(Generic[T]):
    """key -> value, where each value is stored as the JSON dict `encode(value)` in the line's `field`.

    `decode(dict) -> T` runs once per stored line at load time; a line it rejects (TypeError, ValueError,
    KeyError) is skipped like a torn one. `encode` and `decode` must pickle (module-level functions or classes).
    """

    def __init__(
        self,
        directory: str | Path,
        field: str = "value",
        flush_every: int = 64,
        encode: Callable[[T], dict] = _identity,
        decode: Callable[[dict], T] = _identity,
    ):
        if flush_every < 1:
            raise ValueError("flush_every must be >= 1")
        self.directory = str(directory)  # a local folder or a FileSystems URL
        self.field = field
        self.flush_every = flush_every
        self.encode = encode
        self.decode = decode
        self._entries: dict[str, T] | None = None  # None until the first get/put loads the segments
        self._pending: list[str] = []  # encoded lines not yet in a segment
        self.hits = 0
        self.misses = 0

    def __getstate__(self):  # ship the settings only; each worker loads the segments itself
        return {**self.__dict__, "_entries": None, "_pending": [], "hits": 0, "misses": 0}

    @property
    def loaded(self) -> bool:
        return self._entries is not None

    @property
    def pending(self) -> int:
        """Entries put since the last flush (lost if the process dies now)."""
        return len(self._pending)

    def _load(self) -> dict[str, T]:
        if self._entries is None:
            entries: dict[str, T] = {}
            for path in storage.matching(self.directory, SEGMENT_GLOB):
                # split on "\n" only: JSON text may hold U+2028 and other characters str.splitlines() splits on
                for line in storage.read_bytes(path).decode("utf-8", errors="replace").split("\n"):
                    try:
                        item = json.loads(line)
                        entries[item["key"]] = self.decode(item[self.field])
                    except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                        continue  # torn or malformed line (or the last, empty one): the entry is simply recomputed
            self._entries = entries
        return self._entries

    def __len__(self) -> int:
        return len(self._load())

    def __contains__(self, key: str) -> bool:  # a lookup that does not count as a hit or miss
        return key in self._load()

    def get(self, key: str) -> T | None:
        value = self._load().get(key)
        if value is None:
            self.misses += 1
        else:
            self.hits += 1
        return value

    def put(self, key: str, value: T) -> None:
        """Remember `value`; it reaches disk at the next flush (every `flush_every` puts, or `flush()`)."""
        # Encode now: a value that cannot be stored fails here, at its caller, and later mutation cannot reach disk.
        line = json.dumps({"key": key, self.field: self.encode(value)}, ensure_ascii=False, sort_keys=True)
        self._load()[key] = value
        self._pending.append(line)
        if len(self._pending) >= self.flush_every:
            self.flush()

    def flush(self) -> None:
        """Write pending entries as one new segment, atomically (`storage.write_bytes`)."""
        if not self._pending:
            return
        name = f"segment-{os.getpid()}-{uuid.uuid4().hex}.jsonl"
        storage.write_text(storage.join(self.directory, name), "".join(line + "\n" for line in self._pending))
        self._pending = []
