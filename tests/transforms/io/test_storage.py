"""Folders and small files through Beam FileSystems, on local disk and on a real S3-compatible server (moto)."""

import pytest
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from rewardmill.transforms.io import storage
from tests.conftest import s3_beam


@pytest.fixture(params=["local", "s3"])
def root(request, tmp_path):
    """A folder on each store, empty."""
    if request.param == "local":
        return str(tmp_path / "root")
    endpoint = request.getfixturevalue("s3_endpoint")
    FileSystems.set_options(PipelineOptions(s3_beam(endpoint)["options"]))
    return request.getfixturevalue("s3_bucket") + "/root"


def tree(folder: str) -> dict[str, bytes]:
    return {storage.relative(p, folder): storage.read_bytes(p) for p in storage.files_under(folder)}


@pytest.mark.slow
def test_write_read_list_and_remove(root):
    storage.write_text(storage.join(root, "a", "x.json"), "x")
    storage.write_bytes(storage.join(root, "a", "_rejects", "y.parquet"), b"y")
    storage.write_text(storage.join(f"{root}-sibling", "z"), "z")  # a prefix of another name is not under root
    assert tree(root) == {"a/x.json": b"x", "a/_rejects/y.parquet": b"y"}
    assert storage.is_file(storage.join(root, "a", "x.json")) and not storage.is_file(storage.join(root, "a"))
    assert storage.read_text(storage.join(root, "a", "x.json")) == "x"
    storage.remove_tree(storage.join(root, "a"))
    assert tree(root) == {} and storage.files_under(f"{root}-sibling")
    storage.remove_tree(storage.join(root, "never"))  # removing what is not there is not an error


@pytest.mark.slow
def test_publish_replaces_the_folder_manifests_last(root):
    out, tmp = storage.join(root, "out"), storage.join(root, "out.tmp-1")
    for name in ("old.parquet", "_manifest.json", "sub/_manifest.json"):
        storage.write_text(storage.join(out, name), "old")
    for name in ("new.parquet", "_manifest.json", "sub/part.parquet", "sub/_manifest.json"):
        storage.write_text(storage.join(tmp, name), "new")
    storage.publish_folder(tmp, out, last="_manifest.json")
    new = ("new.parquet", "_manifest.json", "sub/part.parquet", "sub/_manifest.json")
    assert tree(out) == dict.fromkeys(new, b"new")
    assert storage.files_under(tmp) == []


def test_a_missing_bucket_fails_before_any_work_naming_it(s3_endpoint, s3_bucket):
    FileSystems.set_options(PipelineOptions(s3_beam(s3_endpoint)["options"]))
    missing = s3_bucket + "-missing"
    with pytest.raises(storage.StorageError, match=rf"{missing}/out: cannot write there \(.*NoSuchBucket.*exists"):
        storage.check_writable(f"{missing}/out")
    with pytest.raises(storage.StorageError, match=rf"{missing}/in: no rollouts there"):
        storage.check_readable(f"{missing}/in", "rollouts")
    storage.check_writable(f"{s3_bucket}/out")  # the bucket that exists: the probe is written and removed
    assert storage.files_under(s3_bucket) == []


def test_missing_credentials_fail_with_what_to_set(s3_endpoint, s3_bucket, monkeypatch, tmp_path):
    FileSystems.set_options(PipelineOptions(s3_beam(s3_endpoint)["options"]))
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(key)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))  # no profile on this machine either
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(storage.StorageError, match=r"cannot write there \(.*credentials.*AWS_ACCESS_KEY_ID"):
        storage.check_writable(f"{s3_bucket}/out")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("s3://bucket/cache/labels", "s3://bucket/cache"),  # pathlib would give "s3:/bucket/cache"
        ("s3://bucket/cache/labels/", "s3://bucket/cache"),
        ("/data/cache/labels", "/data/cache"),
        ("cache/labels", "cache"),
    ],
)
def test_parent_keeps_a_url_whole(path, expected):
    assert storage.parent(path) == expected
