"""The project's DVC remote (.dvc/config): a plain folder beside the checkout, shared by the clones next to it, that
`dvc push` fills and `dvc pull` reads; a personal remote in .dvc/config.local overrides it without a change to git."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dvc.config import Config

from tests.conftest import REPO

BIN = Path(sys.executable).parent
REMOTE = "rewardmill-dvc-remote"


def run(cmd: list[str], cwd: Path) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc.stdout + proc.stderr


def checkout(path: Path) -> Path:
    """A git + DVC repo at path with the project's .dvc/config: what a clone of rewardmill starts from."""
    path.mkdir(parents=True)
    run(["git", "init", "-q"], path)
    run(["git", "config", "user.email", "ci@example.com"], path)
    run(["git", "config", "user.name", "ci"], path)
    run([str(BIN / "dvc"), "init", "-q"], path)
    shutil.copy(REPO / ".dvc/config", path / ".dvc/config")
    return path


def test_the_default_remote_is_a_folder_beside_the_checkout():
    config = Config(dvc_dir=str(REPO / ".dvc")).read("repo")  # the committed level only, not a developer's local one
    name = config["core"]["remote"]
    url = Path(config["remote"][name]["url"])  # DVC resolves a relative url against .dvc/, the config's folder
    assert url == REPO.parent / REMOTE
    assert REPO not in url.parents  # outside the git work tree: never committed, never swept by `git clean`
    assert config["core"]["analytics"] == "false"


@pytest.mark.slow
def test_clones_beside_each_other_share_the_default_remote(tmp_path):
    """`dvc push` in one clone creates and fills ../rewardmill-dvc-remote; a clone next to it gets the bytes back by
    `dvc pull` from there (its own cache empty before)."""
    dvc = str(BIN / "dvc")
    first = checkout(tmp_path / "rewardmill")
    (first / "data").mkdir()
    (first / "data/rows.jsonl").write_text('{"prompt_id": "a"}\n')
    run([dvc, "add", "-q", "data/rows.jsonl"], first)
    run(["git", "add", "-A"], first)
    run(["git", "commit", "-qm", "data"], first)
    assert "1 file pushed" in run([dvc, "push"], first)
    assert any(p.is_file() for p in (tmp_path / REMOTE / "files/md5").rglob("*"))

    second = tmp_path / "rewardmill-2"
    run(["git", "clone", "-q", str(first), str(second)], tmp_path)
    assert not (second / ".dvc/cache").exists()
    run([dvc, "pull"], second)
    assert (second / "data/rows.jsonl").read_bytes() == (first / "data/rows.jsonl").read_bytes()
    assert "up to date" in run([dvc, "status"], second)


@pytest.mark.slow
def test_a_local_remote_overrides_the_default_outside_git(tmp_path):
    """The README's `dvc remote add -d --local` and `dvc remote modify --local`: written to .dvc/config.local, which
    DVC's own .dvc/.gitignore keeps out of git, so .dvc/config (and the team's default) stays as committed."""
    dvc = str(BIN / "dvc")
    repo = checkout(tmp_path / "rewardmill")
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-qm", "init"], repo)
    run([dvc, "remote", "add", "-d", "--local", "mine", str(tmp_path / "elsewhere")], repo)
    assert run([dvc, "remote", "default"], repo).strip() == "mine"
    run([dvc, "remote", "modify", "--local", "folder", "url", str(tmp_path / "moved")], repo)
    merged = Config(dvc_dir=str(repo / ".dvc"), local_dvc_dir=str(repo / ".dvc"))  # what a command in repo reads
    assert merged["core"]["remote"] == "mine"
    assert {k: merged["remote"][k]["url"] for k in ("folder", "mine")} == {
        "folder": str(tmp_path / "moved"),
        "mine": str(tmp_path / "elsewhere"),
    }
    assert (repo / ".dvc/config").read_bytes() == (REPO / ".dvc/config").read_bytes()
    assert not run(["git", "status", "--porcelain"], repo)
