"""What a stage writes: an atomic output folder, rejects, row counts and the manifest.

A stage writes into `<out>.tmp-<pid>/`, writes `_manifest.json` last, then renames the folder into place, so a
crash never leaves a half dataset that DVC would cache. Manifests hold no timestamps: reruns give equal bytes.
"""

import contextlib
import hashlib
import json
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from rewardmill.schemas import REJECT_V1
from rewardmill.schemas.common import schema_id
from rewardmill.transforms.config import canonical_json, params_hash
from rewardmill.transforms.io import storage
from rewardmill.transforms.io.parquet import WriteSortedParquet, list_shards, read_table

REJECTS_DIR = "_rejects"
MANIFEST = "_manifest.json"


@contextlib.contextmanager
def atomic_output(out: str | Path) -> Iterator[str]:
    """Yield a temp folder beside `out` (absolute: workers of a cluster runner run in other working directories); on
    success it replaces `out` whole, on failure it is removed. On an object store (s3://, gs://) the temp folder is
    a sibling prefix, its writability is checked first, and it is published manifests last (`publish_folder`)."""
    if storage.is_url(out):
        tmp = f"{str(out).rstrip('/')}.tmp-{os.getpid()}"
        storage.check_writable(tmp)
        storage.remove_tree(tmp)
        try:
            yield tmp
        except BaseException:
            storage.remove_tree(tmp)
            raise
        storage.publish_folder(tmp, str(out), last=MANIFEST)
        return
    out = Path(out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        yield str(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = out.with_name(f"{out.name}.old-{os.getpid()}")
    if out.exists():
        out.rename(old)
    tmp.rename(out)
    shutil.rmtree(old, ignore_errors=True)


def write_rejects(rejects, directory: str) -> None:
    """Write a PCollection of REJECT_V1 rows to `directory/_rejects/` (always, even when empty)."""
    _ = rejects | "Write rejects" >> WriteSortedParquet(
        storage.join(directory, REJECTS_DIR),
        REJECT_V1,
        sort_key=lambda r: f"{r['row_id']}\x00{r['reason']}\x00{r['stage']}",
    )


def reject(stage: str, row_id: str | None, reason: str, detail: str = "", payload: Any = None) -> dict[str, Any]:
    return {
        "stage": stage,
        "row_id": row_id,
        "reason": reason,
        "detail": detail,
        "payload": None if payload is None else json.dumps(payload, sort_keys=True, default=str, ensure_ascii=False),
    }


def count_rows(directory: str | Path) -> int:
    """Rows in the data shards of a stage output folder (local or a FileSystems URL), from the files' footers."""
    total = 0
    for path in list_shards(str(directory)):
        with FileSystems.open(path) as fh:
            total += pq.ParquetFile(fh).metadata.num_rows
    return total


def count_rejects(directory: str | Path) -> dict[str, int]:
    reasons: Counter[str] = Counter()
    for path in list_shards(storage.join(directory, REJECTS_DIR)):
        reasons.update(read_table(path, columns=["reason"]).column("reason").to_pylist())
    return dict(sorted(reasons.items()))


def digest_path(path: str | Path) -> str:
    """sha256 over a file or every file in a folder (relative names + bytes), in sorted order; local or a store."""
    path = str(path)
    h = hashlib.sha256()
    single = storage.is_file(path)
    for f in [path] if single else storage.files_under(path):
        h.update((f.rsplit("/", 1)[-1] if single else storage.relative(f, path)).encode() + b"\0")
        with FileSystems.open(f) as fh:
            for chunk in iter(lambda fh=fh: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def write_manifest(
    directory: str | Path,
    *,
    stage: str,
    schema,
    config: Any,
    inputs: dict[str, str | Path] | None = None,
    extra: dict[str, Any] | None = None,
    input_digests: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Row counts, rejects by reason, schema version, params hash and input digests; deterministic JSON.

    `inputs`: name -> path, hashed here; `input_digests`: name -> digest_path() already taken (a stage writing
    several manifests over the same inputs hashes them once)."""
    digests = {name: digest_path(p) for name, p in (inputs or {}).items()} | (input_digests or {})
    manifest = {
        "stage": stage,
        "schema": schema_id(schema) if schema is not None else None,
        "rows": count_rows(directory),
        "rejects": count_rejects(directory),
        "params_hash": params_hash(config),
        "params": json.loads(canonical_json(config)),
        "inputs": dict(sorted(digests.items())),
        **(extra or {}),
    }
    storage.write_text(storage.join(directory, MANIFEST), json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def write_json_atomic(path: str | Path, obj: Any) -> None:
    """Write JSON whole or not at all (`storage.write_text`: temp file then rename; readers never see half a file)."""
    storage.write_text(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def read_manifest(directory: str | Path) -> dict[str, Any]:
    path = storage.join(directory, MANIFEST)
    if not storage.exists(path):
        raise FileNotFoundError(f"{path}: missing; the upstream stage did not finish (run `dvc repro`)")
    return json.loads(storage.read_text(path))


def manifest_or_none(directory: str | Path) -> dict[str, Any] | None:
    """The folder's manifest, or None when it has none (a folder written outside its stage, or not built yet)."""
    return read_manifest(directory) if storage.exists(storage.join(directory, MANIFEST)) else None


def trajectory_count(rollouts_dir: str) -> int:
    """How many trajectories the rollouts hold, from their manifest's `episodes` (0: no environment ran, or a folder
    written outside the rollouts stage)."""
    try:
        episodes = read_manifest(rollouts_dir).get("episodes") or {}
    except FileNotFoundError:
        return 0
    return int(episodes.get("trajectories") or 0)
