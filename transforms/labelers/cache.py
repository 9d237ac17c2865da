"""Per-record label cache: a labeler never recomputes a label it already produced for the same inputs.

Key = sha256 of (labeler class, version, canonical config, the values of the columns it reads): content, not
rollout ids, so a params change that does not touch a record (or a duplicate completion) reuses its label.
Labels are appended in small JSONL segments (a `SegmentStore`), each written to a temp name and renamed, every
`flush_every` labels, so a stage killed halfway keeps what it finished. Timeouts and errors are not cached: they
may be transient. The cache lives outside DVC outputs (DVC deletes a stage's outputs before running it).
"""

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

from rewardmill.pipelines.config import canonical_json
from rewardmill.transforms.io.segments import SegmentStore
from rewardmill.transforms.labelers.base import Label

UNCACHED_VERDICTS = ("timeout", "error")


def namespace(labeler_cls, config: Any) -> str:
    """One folder per (labeler class, version, config): a config change never reads another config's labels."""
    ident = f"{labeler_cls.__module__}.{labeler_cls.__qualname__}\x00{labeler_cls.version}\x00{canonical_json(config)}"
    return f"{labeler_cls.name}-{hashlib.sha256(ident.encode()).hexdigest()[:16]}"


def record_key(values: tuple) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str, ensure_ascii=False).encode()).hexdigest()


def _label_to_dict(label: Label) -> dict:
    return dataclasses.asdict(label)


def _label_from_dict(item: dict) -> Label:
    return Label(**item)


class LabelCache:
    """Labels by record key, in JSONL segments under `root/<namespace>` (lines: {"key": ..., "label": {...}})."""

    def __init__(self, root: str | Path, labeler_cls, config: Any, flush_every: int = 64):
        self.directory = Path(root) / namespace(labeler_cls, config)
        self._store = SegmentStore(self.directory, "label", flush_every, _label_to_dict, _label_from_dict)

    @property
    def flush_every(self) -> int:
        return self._store.flush_every

    @property
    def hits(self) -> int:
        return self._store.hits

    @property
    def misses(self) -> int:
        return self._store.misses

    # What was loaded (None until first use) and what awaits a flush; both empty after pickling.
    @property
    def _labels(self) -> dict[str, Label] | None:
        return self._store._entries

    @property
    def _pending(self) -> list[str]:
        return self._store._pending

    def get(self, key: str) -> Label | None:
        return self._store.get(key)

    def put(self, key: str, label: Label) -> None:
        if label.verdict in UNCACHED_VERDICTS:
            return
        self._store.put(key, label)

    def flush(self) -> None:
        self._store.flush()
