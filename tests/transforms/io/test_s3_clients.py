"""One botocore loader per process: a new boto3 Session (Beam's S3 filesystem makes one per file operation) parses
no data file again, and its clients stay its own."""

import boto3
import botocore.loaders
import pytest

from rewardmill.transforms.io import s3_clients, storage


@pytest.fixture
def file_loads(monkeypatch) -> list[str]:
    """Every botocore data file read from disk, by path."""
    loads: list[str] = []
    read = botocore.loaders.JSONFileLoader.load_file

    def counted(self, file_path, *args, **kwargs):
        loads.append(file_path)
        return read(self, file_path, *args, **kwargs)

    monkeypatch.setattr(botocore.loaders.JSONFileLoader, "load_file", counted)
    return loads


def s3_client(endpoint: str):
    """What Beam's boto3_client.Client does for every S3IO: a new Session, then its S3 client."""
    session = boto3.session.Session()
    return session.client(
        "s3",
        region_name="us-east-1",
        endpoint_url=endpoint,
        aws_access_key_id="key",
        aws_secret_access_key="secret",
    )


def test_a_new_session_reads_no_data_file_again(file_loads):
    assert s3_clients.share_loader()
    s3_client("http://127.0.0.1:1")  # the first client of the process may read the files
    file_loads.clear()
    clients = [s3_client(f"http://127.0.0.1:{port}") for port in (2, 3, 4)]
    assert file_loads == []  # without the shared loader each Session reads the endpoint rules and the S3 model again
    # the clients are still each Session's own: their endpoints (and credentials, connections) are not shared
    assert [c.meta.endpoint_url for c in clients] == ["http://127.0.0.1:2", "http://127.0.0.1:3", "http://127.0.0.1:4"]


def test_the_shared_loader_keeps_each_search_path_once():
    s3_clients.share_loader()
    loader = boto3.session.Session()._session.get_component("data_loader")
    before = list(loader.search_paths)
    for _ in range(5):  # boto3 appends its data folder to the loader of every Session it makes
        boto3.session.Session()
    assert loader.search_paths == before and len(set(before)) == len(before)


def test_storage_shares_it_on_first_use(monkeypatch):
    calls = []
    monkeypatch.setattr(s3_clients, "share_loader", lambda: calls.append(1) or True)
    storage.exists("/nonexistent/rewardmill-test")
    assert calls == [1]


def test_without_botocore_it_answers_false_once_and_does_not_try_again(monkeypatch):
    """Storage calls it on every use: in an install without the s3 extra the failed import must not be retried."""
    import sys

    monkeypatch.setattr(s3_clients, "_installed", None)
    monkeypatch.setitem(sys.modules, "botocore.loaders", None)  # `import botocore.loaders` raises ImportError
    tries = []
    install = s3_clients._install
    monkeypatch.setattr(s3_clients, "_install", lambda: tries.append(1) or install())
    assert [s3_clients.share_loader() for _ in range(3)] == [False, False, False]
    assert tries == [1]
