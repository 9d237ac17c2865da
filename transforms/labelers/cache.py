"""Per-record label cache: a labeler never recomputes a label it already produced for the same inputs.

Key = sha256 of (labeler class, version, canonical config, what the config names but its text does not pin down,
the values of the columns it reads): content, not rollout ids, so a params change that does not touch a record (or a
duplicate completion) reuses its label. What the text does not pin down (`cache_identity`): the fingerprint of
every judge model (a folder path or an endpoint URL stays the same when the model behind it changes) and the version
of every inner labeler (tiers, appeals), recursively.
Labels are appended in small JSONL segments (a `SegmentStore`), each written to a temp name and renamed, every
`flush_every` labels, so a stage killed halfway keeps what it finished. Timeouts and errors are not cached: they
may be transient; nor is a label its labeler marks not `cacheable` (code that timed out is incorrect, but maybe only
because the machine was loaded). The cache lives outside DVC outputs (DVC deletes a stage's outputs before running it).
"""

import dataclasses
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rewardmill.transforms.config import canonical_json
from rewardmill.transforms.io import storage, timings
from rewardmill.transforms.io.segments import SegmentStore
from rewardmill.transforms.labelers.base import Label, as_labels, label_values
from rewardmill.transforms.labelers.code_digest import code_digest
from rewardmill.transforms.labelers.contract import ModelNamingConfig, has_hook

UNCACHED_VERDICTS = ("timeout", "error")


def namespace(labeler_cls, config: Any) -> str:
    """One folder per (labeler class, version, config, cache identity, code): a config, model or code change never
    reads another's labels. The code is the digest of every file the labeler and its inner labelers run
    (code_digest.py), so a fix to a verifier's helper relabels without a version bump."""
    from rewardmill.transforms.labelers import get_labeler_class  # the registry imports every labeler: only here

    identity = cache_identity(config)
    inner = [get_labeler_class(key.rsplit("@", 1)[0]) for key in identity["labelers"]]
    ident = "\x00".join(
        (
            f"{labeler_cls.__module__}.{labeler_cls.__qualname__}",
            str(labeler_cls.version),
            canonical_json(config),
            canonical_json(identity),
            code_digest(labeler_cls, *inner),
        )
    )
    return f"{labeler_cls.name}-{hashlib.sha256(ident.encode()).hexdigest()[:16]}"


def cache_identity(config: Any) -> dict[str, list[str]]:
    """Every judge model's identity (`models`: a local folder's content fingerprint; an endpoint's
    base_url|model|fingerprint; a config's own `model_identity()`) and every inner labeler's `key@version`
    (`labelers`), found anywhere in the config (config_parts), sorted and deduplicated."""
    from rewardmill.transforms.judges.client import BackendConfig
    from rewardmill.transforms.sampling.policy import model_identity

    models: set[str] = set()
    labelers: set[str] = set()
    for part in config_parts(config):
        if isinstance(part, BackendConfig):
            if part.kind == "openai":
                models.add(f"openai|{part.base_url}|{part.model}|{part.fingerprint or ''}")
            else:
                models.add(f"{part.kind}|{model_identity(part.model, part.dtype)}")
        elif isinstance(part, str):
            labelers.add(part)
        else:
            models.add(part.model_identity())  # a config that names its own model (a reward model's fingerprint)
    return {"models": sorted(models), "labelers": sorted(labelers)}


def config_parts(config: Any, where: str = "config") -> Iterator[Any]:
    """What a labeler's config holds that names a model or another labeler, anywhere in it (a panel's panelists, a
    tier's or an appeal's inner config, theirs in turn), depth first: each judge backend (BackendConfig, not walked
    into), each config that names its own model (ModelNamingConfig), and each inner labeler as `key@version`, whose
    raw config is resolved and walked in turn. The label cache's identity and the batch pass both read it."""
    from rewardmill.transforms.judges.client import BackendConfig
    from rewardmill.transforms.labelers.base import resolve_labeler

    if isinstance(config, BackendConfig):
        yield config
        return
    if has_hook(config, ModelNamingConfig) and not isinstance(config, type):
        yield config
    inner = _inner_labeler(config)
    if inner is not None:
        cls, inner_config = resolve_labeler(inner[0], inner[1], where)
        yield f"{inner[0]}@{cls.version}"
        yield from config_parts(inner_config, f"{where}.config")
        return
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        for f in dataclasses.fields(config):
            yield from config_parts(getattr(config, f.name), f"{where}.{f.name}")
    elif isinstance(config, dict):
        for key, item in config.items():
            yield from config_parts(item, f"{where}.{key}")
    elif isinstance(config, list | tuple):
        for i, item in enumerate(config):
            yield from config_parts(item, f"{where}[{i}]")


def _inner_labeler(value: Any) -> tuple[str, dict] | None:
    """(registry key, raw config) when `value` names an inner labeler (a tier, an appeal: `labeler` + `config`)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, dict) and isinstance(value.get("labeler"), str) and isinstance(value.get("config"), dict):
        return value["labeler"], value["config"]
    return None


def record_key(values: tuple) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str, ensure_ascii=False).encode()).hexdigest()


def _label_to_dict(label: Label | list[Label]) -> dict:
    if isinstance(label, list):  # one label per aspect
        return {"labels": [dataclasses.asdict(one) for one in label]}
    return dataclasses.asdict(label)


def _label_from_dict(item: dict) -> Label | list[Label]:
    if "labels" in item:
        return [Label(**one) for one in item["labels"]]
    return Label(**item)


class LabelCache:
    """Labels by record key, in JSONL segments under `root/<namespace>` (lines: {"key": ..., "label": {...}})."""

    def __init__(self, root: str | Path, labeler_cls, config: Any, flush_every: int = 64):
        self.directory = storage.join(root, namespace(labeler_cls, config))  # local or a FileSystems URL
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

    def put(self, key: str, label: Label | list[Label]) -> None:
        if any(one.verdict in UNCACHED_VERDICTS or not one.cacheable for one in as_labels(label)):
            return
        self._store.put(key, label)

    def flush(self) -> None:
        self._store.flush()


def call_cache_dir(label_cache_dir: str) -> str:
    """Where a model-based labeler caches its model calls: `calls/` beside the label cache folder."""
    return storage.join(storage.parent(label_cache_dir), "calls")


def label_with_cache(labeler, cache: "LabelCache | None", rows: list[tuple]) -> list:
    """Labels for rows of the labeler's `reads` values, in order: from `cache` where it has them, the rest computed
    in one batch (base.label_values) and each cached as soon as it exists, so a killed run keeps what it finished."""
    keys = [record_key(values) for values in rows] if cache is not None else [None] * len(rows)
    labels = [cache.get(key) for key in keys] if cache is not None else [None] * len(rows)
    todo = [i for i, label in enumerate(labels) if label is None]

    def remember(j: int, label) -> None:
        if cache is not None:
            cache.put(keys[todo[j]], label)

    for i, label in zip(todo, label_values(labeler, [rows[i] for i in todo], remember), strict=True):
        labels[i] = label
    return labels


def label_group_with_cache(labeler, cache: "LabelCache | None", rows: list[tuple]) -> list:
    """`labeler.label_group(rows)` for the rollouts of one prompt, each label cached under its own values plus the
    whole group's (a comparison depends on the other answers too). A group that raises, or returns the wrong number
    of labels, gets an error label per row: one bad group never stops a run."""
    keys = [record_key((values, rows)) for values in rows] if cache is not None else [None] * len(rows)
    cached = [cache.get(key) for key in keys] if cache is not None else [None] * len(rows)
    if all(label is not None for label in cached):
        return cached
    try:
        with timings.timed("labeler"):
            labels = list(labeler.label_group(rows))
        if len(labels) != len(rows):
            raise ValueError(f"label_group returned {len(labels)} labels for {len(rows)} rows")
    except Exception as exc:
        labels = [Label(None, 0.0, "error", f"{type(exc).__name__}: {exc}"[:500])] * len(rows)
    if cache is not None:
        for key, label in zip(keys, labels, strict=True):
            cache.put(key, label)
    return labels
