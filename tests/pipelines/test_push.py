"""`rewardmill push`: checks, dry run, offline/token refusals, the release check and the upload call sequence, all
offline."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from huggingface_hub import constants

from rewardmill.pipelines import push
from rewardmill.pipelines.cli import main as cli_main

SECRET = "hf_secretTOKENdoNotPrint123"
DVC = str(Path(sys.executable).with_name("dvc"))


@pytest.fixture
def export(tmp_path):
    folder = tmp_path / "export"
    (folder / "data/default").mkdir(parents=True)
    (folder / "README.md").write_text("---\nconfigs: []\n---\n# card\n")
    table = pa.table({"prompt": ["a", "b"], "chosen": ["c", "d"]})
    pq.write_table(table, folder / "data/default/train-00000-of-00002.parquet")
    pq.write_table(table, folder / "data/default/train-00001-of-00002.parquet")
    return folder


@pytest.fixture
def online_no_token(monkeypatch, tmp_path):
    """Online mode and no token anywhere huggingface_hub looks (constants are read at import, so patch them too)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "hf_home/token"))


def test_plan_lists_exactly_the_export_files(export):
    plan = push.plan_upload(export)
    names = [path for path, _ in plan]
    assert names == [
        "README.md",
        "data/default/train-00000-of-00002.parquet",
        "data/default/train-00001-of-00002.parquet",
    ]
    assert all(size == (export / path).stat().st_size for path, size in plan)


def test_dry_run_through_cli_prints_files_and_target_without_token(export, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", SECRET)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # dry run must not care
    monkeypatch.setattr(push, "HfApi", None)  # any network attempt would crash
    rc = cli_main(["push", "--repo-id", "me/prefs", "--revision", "v1.0", "--folder", str(export), "--dry-run"])
    out = capsys.readouterr()
    assert rc == 0
    for path, size in push.plan_upload(export):
        assert path in out.out and f"{size:,d}" in out.out
    assert "me/prefs" in out.out and "v1.0" in out.out
    assert SECRET not in out.out + out.err


@pytest.mark.parametrize(
    "breakage, reason",
    [
        ("no_folder", "does not exist"),  # export stage never ran
        ("no_readme", "README.md"),  # card missing
        ("no_parquet", "parquet"),  # data/ empty
    ],
)
def test_incomplete_export_is_refused_with_reason(export, breakage, reason):
    if breakage == "no_folder":
        folder = export.parent / "nowhere"
    else:
        folder = export
        targets = [export / "README.md"] if breakage == "no_readme" else list(export.glob("data/**/*.parquet"))
        for path in targets:
            path.unlink()
    with pytest.raises(SystemExit, match=reason) as err:
        push.main(["--repo-id", "me/prefs", "--folder", str(folder), "--dry-run"])
    assert str(folder) in str(err.value) and "dvc repro" in str(err.value)


@pytest.mark.parametrize(
    "repo_id, ok",
    [
        ("me/prefs", True),
        ("org-1/my.data_set", True),
        ("prefs", False),  # no owner
        ("a/b/c", False),  # too many parts
        ("me/-prefs", False),  # leading dash
        ("me/pr--efs", False),  # double dash
        ("me/pre fs", False),  # space
        ("", False),
    ],
)
def test_check_repo_id(repo_id, ok):
    if ok:
        assert push.check_repo_id(repo_id) == repo_id
    else:
        with pytest.raises(SystemExit, match="owner/name"):
            push.check_repo_id(repo_id)


@pytest.mark.parametrize(
    "tag, ok",
    [
        ("v1.0", True),
        ("release/2024-06-01", True),
        ("main", False),  # shadows the branch
        ("v1..0", False),  # git forbids ".."
        ("v1 0", False),  # space
        ("-v1", False),  # leading dash reads as an option
        ("v1.lock", False),  # git forbids ".lock"
        ("v1/", False),  # trailing slash
    ],
)
def test_check_revision(tag, ok):
    if ok:
        assert push.check_revision(tag) == tag
    else:
        with pytest.raises(SystemExit, match="not a valid tag"):
            push.check_revision(tag)


def test_bad_repo_id_through_cli(export):
    with pytest.raises(SystemExit, match="owner/name"):
        cli_main(["push", "--repo-id", "prefs", "--folder", str(export), "--dry-run"])


def test_offline_mode_refuses_before_any_work(export, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_TOKEN", SECRET)
    monkeypatch.setattr(push, "HfApi", None)
    with pytest.raises(SystemExit, match="unset HF_HUB_OFFLINE") as err:
        push.main(["--repo-id", "me/prefs", "--folder", str(export)])
    assert SECRET not in str(err.value)


def test_missing_token_refuses_before_any_work(export, online_no_token, monkeypatch):
    monkeypatch.setattr(push, "HfApi", None)
    with pytest.raises(SystemExit, match="hf auth login"):
        push.main(["--repo-id", "me/prefs", "--folder", str(export)])


class FakeApi:
    """Records calls instead of talking to the Hub."""

    endpoint = "https://huggingface.co"

    def __init__(self, tags=()):
        self.calls, self.tags = [], list(tags)

    def create_repo(self, repo_id, **kw):
        self.calls.append(("create_repo", repo_id, kw))

    def list_repo_refs(self, repo_id, **kw):
        return SimpleNamespace(tags=[SimpleNamespace(name=t) for t in self.tags])

    def upload_folder(self, **kw):
        self.calls.append(("upload_folder", kw["repo_id"], kw))
        return SimpleNamespace(oid="abc123")

    def delete_tag(self, repo_id, **kw):
        self.calls.append(("delete_tag", repo_id, kw))

    def create_tag(self, repo_id, **kw):
        self.calls.append(("create_tag", repo_id, kw))


def _with_fake_hub(monkeypatch, api):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(push, "get_token", lambda: SECRET)
    monkeypatch.setattr(push, "HfApi", lambda: api)


def test_upload_commits_to_main_then_tags_that_commit(export, monkeypatch, capsys):
    api = FakeApi()
    _with_fake_hub(monkeypatch, api)
    push.main(["--repo-id", "me/prefs", "--revision", "v1.0", "--folder", str(export), "--private"])
    assert [c[0] for c in api.calls] == ["create_repo", "upload_folder", "create_tag"]
    assert api.calls[0][2] == {"repo_type": "dataset", "private": True, "exist_ok": True}
    upload = api.calls[1][2]
    assert upload["revision"] == "main" and upload["repo_type"] == "dataset" and "v1.0" in upload["commit_message"]
    assert api.calls[2][2] == {"tag": "v1.0", "revision": "abc123", "repo_type": "dataset"}
    out = capsys.readouterr().out
    assert "https://huggingface.co/datasets/me/prefs/tree/v1.0" in out and SECRET not in out


def test_existing_tag_is_refused_before_upload_unless_forced(export, monkeypatch):
    api = FakeApi(tags=["v1.0"])
    _with_fake_hub(monkeypatch, api)
    with pytest.raises(SystemExit, match="--force-tag"):
        push.main(["--repo-id", "me/prefs", "--revision", "v1.0", "--folder", str(export)])
    assert [c[0] for c in api.calls] == ["create_repo"]
    api.calls.clear()
    push.main(["--repo-id", "me/prefs", "--revision", "v1.0", "--folder", str(export), "--force-tag"])
    assert [c[0] for c in api.calls] == ["create_repo", "upload_folder", "delete_tag", "create_tag"]


def _run(cmd: list[str], cwd) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env={**os.environ, "DVC_NO_ANALYTICS": "1"})
    assert proc.returncode == 0, f"{' '.join(cmd)}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def built_release(tmp_path_factory):
    """A git + DVC repo whose one stage makes export/ (a copy of src/), released as the README says: dvc.lock
    committed, tagged v1.0."""
    root = tmp_path_factory.mktemp("release")
    (root / "src/data/default").mkdir(parents=True)
    (root / "src/README.md").write_text("---\nconfigs: []\n---\n# card\n")
    pq.write_table(pa.table({"prompt": ["a"]}), root / "src/data/default/train-00000-of-00001.parquet")
    (root / "dvc.yaml").write_text(
        "stages:\n  export:\n    cmd: cp -r src export\n    deps: [src]\n    outs: [export]\n"
    )
    for cmd in (
        ["git", "init", "-q"],
        ["git", "config", "user.email", "ci@example.com"],
        ["git", "config", "user.name", "ci"],
    ):
        _run(cmd, root)
    _run([DVC, "init", "-q"], root)
    _run([DVC, "repro", "-q"], root)
    _run(["git", "add", "-A"], root)
    _run(["git", "commit", "-qm", "Release v1.0"], root)
    _run(["git", "tag", "-a", "v1.0", "-m", "v1.0"], root)
    return root


@pytest.fixture
def release(built_release, tmp_path):
    copy = tmp_path / "release"
    shutil.copytree(built_release, copy, symlinks=True)
    return copy


def test_a_tagged_push_of_the_release_goes_through(release, monkeypatch):
    api = FakeApi()
    _with_fake_hub(monkeypatch, api)
    push.main(["--repo-id", "me/prefs", "--revision", "v1.0", "--folder", str(release / "export")])
    assert [c[0] for c in api.calls] == ["create_repo", "upload_folder", "create_tag"]


@pytest.mark.parametrize(
    "breakage, reason",
    [
        ("untagged", "no git tag v1.0"),  # `git tag` skipped
        ("moved_on", "git tag v1.0 is not HEAD"),  # a commit after the tag: the export may not be the tag's
        ("stale", "`dvc status` lists changes in export"),  # a dep changed, `dvc repro` not run
        ("lock_not_committed", "uncommitted changes"),  # repro ran, dvc.lock not committed
    ],
)
def test_a_tagged_push_that_is_not_the_release_is_refused_before_any_network(
    release, monkeypatch, capsys, breakage, reason
):
    if breakage == "untagged":
        _run(["git", "tag", "-d", "v1.0"], release)
    if breakage == "moved_on":
        (release / "notes.txt").write_text("later\n")
        _run(["git", "add", "notes.txt"], release)
        _run(["git", "commit", "-qm", "later"], release)
    if breakage in ("stale", "lock_not_committed"):
        (release / "src/README.md").write_text("---\nconfigs: []\n---\n# card, edited\n")
    if breakage == "lock_not_committed":
        _run([DVC, "repro", "-q"], release)
    monkeypatch.setattr(push, "HfApi", None)  # any network attempt would crash
    args = ["--repo-id", "me/prefs", "--revision", "v1.0", "--folder", str(release / "export")]
    with pytest.raises(SystemExit, match=re.escape(reason)) as err:
        push.main(args)
    assert "no --revision" in str(err.value)
    push.main([*args, "--dry-run"])  # a dry run says so and goes on
    out = capsys.readouterr().out
    assert "a push would refuse" in out and reason in out


def test_an_untagged_push_is_not_held_to_a_release(release, monkeypatch):
    (release / "src/README.md").write_text("---\nconfigs: []\n---\n# card, edited\n")
    api = FakeApi()
    _with_fake_hub(monkeypatch, api)
    push.main(["--repo-id", "me/prefs", "--folder", str(release / "export")])
    assert [c[0] for c in api.calls] == ["create_repo", "upload_folder"]
