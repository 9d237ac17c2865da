"""One botocore data loader per process, so Beam's S3 filesystem stops parsing the S3 service model on every call.

Beam's `S3FileSystem` builds a new `S3IO` for every operation (exists, open, list, rename, delete), and with it a
new boto3 Session (`apache_beam/io/aws/clients/s3/boto3_client.py`). A fresh Session gets a fresh botocore `Loader`,
which reads and parses the endpoint rules and the S3 service model from botocore's JSON files again: about 0.13 s
per file operation on 2 cores (bench/s3_clients.py), so a stage that writes a few hundred objects spent most of its
time there (a profile of tests/pipelines/test_object_storage.py: 299 clients, 57 of 105 s).

`share_loader()` makes botocore hand every Session of this process the same Loader for the same AWS_DATA_PATH. A
Loader only reads botocore's and boto3's bundled data files and caches what it parsed; sessions, credentials,
clients and connections stay per Session, so nothing but that cache is shared. boto3 appends its own data folder to
a Session's loader each time it makes one: on the shared loader the folder is kept once.
"""

import threading

_LOCK = threading.Lock()
_installed: bool | None = None  # None: not tried yet; then whether botocore was there to share a loader of


class _PathsOnce(list):
    """A loader's search paths that ignore a folder they already hold (boto3 appends one per Session)."""

    def append(self, path: str) -> None:
        if path not in self:
            super().append(path)


def share_loader() -> bool:
    """Install the shared loader (once per process: every later call returns the first answer without work, since
    storage calls it on each use). False when botocore is not installed (no s3 extra: no S3 filesystem to speed up)."""
    global _installed
    if _installed is not None:
        return _installed
    with _LOCK:
        if _installed is None:
            _installed = _install()
        return _installed


def _install() -> bool:
    try:
        import botocore.loaders
        import botocore.session
    except ImportError:
        return False
    make_loader = botocore.loaders.create_loader
    loaders: dict[str | None, botocore.loaders.Loader] = {}

    def create_loader(search_path_string: str | None = None) -> botocore.loaders.Loader:
        with _LOCK:
            if search_path_string not in loaders:
                loader = make_loader(search_path_string)
                loader._search_paths = _PathsOnce(loader.search_paths)
                loaders[search_path_string] = loader
            return loaders[search_path_string]

    botocore.session.create_loader = create_loader  # what botocore.session.Session registers as its data_loader
    return True
