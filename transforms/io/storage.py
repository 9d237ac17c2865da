"""Folders and small files through Beam FileSystems: the same calls on local disk, a shared mount, s3:// or gs://.

Object stores have no folders and no rename. There a folder is a key prefix that exists once an object under it
does, one object PUT is atomic by itself, and a finished folder is published by moving its objects with the
`last` ones (manifests) moved last and deleted first, so a reader that waits for the manifest never sees half a
folder. Local folders keep the atomic rename. Credentials and endpoints come from Beam's options (`beam.options`,
e.g. `--s3_endpoint_url`) or the store's own environment (AWS_ACCESS_KEY_ID ...), never from paths.
"""

import os
import shutil
import uuid
from pathlib import Path


class StorageError(SystemExit):
    """A folder cannot be read or written (missing bucket, credentials, permissions): raised before any work."""


def _filesystems():
    """Beam's FileSystems, imported on first use: importing Beam costs about 1 s, which processes that import the
    labelers but never touch storage (math-verify's helper processes) should not pay. The first use also shares one
    botocore loader across the process (s3_clients.py: Beam's S3 filesystem makes a client per call)."""
    from apache_beam.io.filesystems import FileSystems

    from rewardmill.transforms.io.s3_clients import share_loader

    share_loader()
    return FileSystems


def is_url(path: str | Path) -> bool:
    return "://" in str(path)


def join(base: str | Path, *names: str) -> str:
    return _filesystems().join(str(base), *names) if names else str(base)


def files_under(folder: str | Path) -> list[str]:
    """Every file under `folder`, recursively, sorted (full paths; [] when there is none)."""
    folder = str(folder)
    if not is_url(folder):
        root = Path(folder)
        return sorted(str(p) for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
    return sorted(m.path for m in _filesystems().match([join(folder, "**")])[0].metadata_list)


def parent(path: str | Path) -> str:
    """The folder holding `path` ("s3://b/cache" for "s3://b/cache/labels"; pathlib would fold the "//")."""
    path = str(path).rstrip("/")
    return path.rsplit("/", 1)[0] if is_url(path) else str(Path(path).parent)


def matching(folder: str | Path, pattern: str) -> list[str]:
    """Files directly in `folder` whose names match the glob `pattern`, sorted ([] when the folder is missing)."""
    folder = str(folder)
    if not is_url(folder):
        return sorted(str(p) for p in Path(folder).glob(pattern) if p.is_file())
    return sorted(m.path for m in _filesystems().match([join(folder, pattern)])[0].metadata_list)


def relative(path: str, folder: str | Path) -> str:
    """`path`'s name below `folder` ("a/b.parquet"), with "/" separators on every store."""
    return path[len(str(folder).rstrip("/")) + 1 :].replace(os.sep, "/")


def exists(path: str | Path) -> bool:
    return _filesystems().exists(str(path))


def is_file(path: str | Path) -> bool:
    """A file (an object, on a store), not a folder."""
    return _filesystems().exists(str(path)) if is_url(path) else Path(path).is_file()


def read_bytes(path: str | Path) -> bytes:
    with _filesystems().open(str(path)) as fh:
        return fh.read()


def read_text(path: str | Path) -> str:
    return read_bytes(path).decode("utf-8")


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write `path` whole or not at all: locally a temp file, fsync, then rename; on a store one object PUT."""
    path = str(path)
    if is_url(path):
        with _filesystems().create(path) as fh:
            fh.write(data)
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    with tmp.open("wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, target)


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def make_folder(folder: str | Path) -> None:
    """Create a local folder (and its parents); a store needs none."""
    if not is_url(folder):
        Path(folder).mkdir(parents=True, exist_ok=True)


def remove_tree(folder: str | Path) -> None:
    """Delete `folder` and everything under it; nothing when it does not exist."""
    if not is_url(folder):
        shutil.rmtree(folder, ignore_errors=True)
        return
    files = files_under(folder)
    if files:
        _filesystems().delete(files)


def check_writable(folder: str) -> None:
    """Write and delete a probe object under `folder`: a missing bucket, missing credentials or a denied write fail
    here, with what to do, before a stage does any work (a store reports them only at the first write)."""
    if not is_url(folder):
        return
    probe = join(folder, f".rewardmill-probe-{uuid.uuid4().hex}")
    try:
        write_bytes(probe, b"rewardmill")  # not empty: Beam cannot upload an empty object to S3
        _filesystems().delete([probe])
    except Exception as exc:  # noqa: BLE001 (each store raises its own types; the message says what went wrong)
        raise StorageError(
            f"{folder}: cannot write there ({describe(exc)}). Check that the bucket exists and that credentials "
            "allow writing: for s3:// set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (or a profile) in the environment, "
            "and --s3_endpoint_url / --s3_region_name in beam.options for a store other than AWS"
        ) from None


def check_readable(folder: str, what: str) -> None:
    """`folder` (an upstream output) has files; a store's listing of a missing bucket or of a folder without
    credentials is otherwise just empty, or fails with the store's own traceback."""
    if not is_url(folder):
        return
    try:
        found = bool(files_under(folder))
    except Exception as exc:  # noqa: BLE001 (see check_writable)
        raise StorageError(
            f"{folder}: cannot list the {what} ({describe(exc)}); check the bucket and credentials"
        ) from None
    if not found:
        raise StorageError(f"{folder}: no {what} there (a missing bucket or folder); run the upstream stage first")


def describe(exc: BaseException) -> str:
    """The first line of an exception, which for the stores' clients names the cause (NoSuchBucket, credentials)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def publish_folder(tmp: str, out: str, last: str) -> None:
    """Replace the folder `out` by the finished folder `tmp` on a store: delete `out`'s files named `last` first,
    then its other files; move `tmp`'s other files, then its `last` files. A crash in between leaves `out` without
    a `last` file, which readers take as not finished."""

    def last_after_others(paths: list[str]) -> tuple[list[str], list[str]]:
        return [p for p in paths if p.rsplit("/", 1)[-1] != last], [p for p in paths if p.rsplit("/", 1)[-1] == last]

    old_others, old_last = last_after_others(files_under(out))
    for batch in (old_last, old_others):
        if batch:
            _filesystems().delete(batch)
    for batch in last_after_others(files_under(tmp)):
        if batch:
            _filesystems().rename(batch, [join(out, relative(p, tmp)) for p in batch])
    remove_tree(tmp)
