"""Per-record label cache: a labeler never recomputes a label it already produced for the same inputs.

Key = sha256 of (labeler class, version, canonical config, the values of the columns it reads): content, not
rollout ids, so a params change that does not touch a record (or a duplicate completion) reuses its label.
Labels are appended in small JSONL segments, each written to a temp name and renamed, every `flush_every`
labels, so a stage killed halfway keeps what it finished. Timeouts and errors are not cached: they may be
transient. The cache lives outside DVC outputs (DVC deletes a stage's outputs before running it).
"""

import dataclasses
import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any

from rewardmill.pipelines.config import canonical_json
from rewardmill.transforms.labelers.base import Label

UNCACHED_VERDICTS = ("timeout", "error")


def namespace(labeler_cls, config: Any) -> str:
    """One folder per (labeler class, version, config): a config change never reads another config's labels."""
    ident = f"{labeler_cls.__module__}.{labeler_cls.__qualname__}\x00{labeler_cls.version}\x00{canonical_json(config)}"
    return f"{labeler_cls.name}-{hashlib.sha256(ident.encode()).hexdigest()[:16]}"


def record_key(values: tuple) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str, ensure_ascii=False).encode()).hexdigest()


class LabelCache:
    def __init__(self, root: str | Path, labeler_cls, config: Any, flush_every: int = 64):
        self.directory = Path(root) / namespace(labeler_cls, config)
        self.flush_every = flush_every
        self._labels: dict[str, Label] | None = None
        self._pending: list[tuple[str, Label]] = []
        self.hits = 0
        self.misses = 0

    def __getstate__(self):  # ship the settings only; each worker loads the segments itself
        return {**self.__dict__, "_labels": None, "_pending": [], "hits": 0, "misses": 0}

    def _load(self) -> dict[str, Label]:
        if self._labels is None:
            self._labels = {}
            for path in sorted(self.directory.glob("*.jsonl")):
                with path.open(encoding="utf-8") as fh:
                    for line in fh:
                        try:
                            item = json.loads(line)
                            self._labels[item["key"]] = Label(**item["label"])
                        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                            continue  # a torn line from a crash mid-write of an older format: recompute it
        return self._labels

    def get(self, key: str) -> Label | None:
        label = self._load().get(key)
        if label is None:
            self.misses += 1
        else:
            self.hits += 1
        return label

    def put(self, key: str, label: Label) -> None:
        if label.verdict in UNCACHED_VERDICTS:
            return
        self._load()[key] = label
        self._pending.append((key, label))
        if len(self._pending) >= self.flush_every:
            self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        name = f"segment-{os.getpid()}-{uuid.uuid4().hex}.jsonl"
        tmp = self.directory / f".{name}.tmp"
        with tmp.open("w", encoding="utf-8") as fh:
            for key, label in self._pending:
                fh.write(json.dumps({"key": key, "label": dataclasses.asdict(label)}, ensure_ascii=False) + "\n")
        os.replace(tmp, self.directory / name)
        self._pending = []
