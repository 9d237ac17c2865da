"""A scratch DVC project for the benches: git, dvc init, the repo's dvc.yaml and stage code, a given params.yaml."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def env(threads: int, extra: dict | None = None) -> dict[str, str]:
    e = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1"}
    e.update(OMP_NUM_THREADS=str(threads), REWARDMILL_PROGRESS="off", TOKENIZERS_PARALLELISM="false")
    e.pop("REWARDMILL_PARAMS", None)
    return {**e, **(extra or {})}


def run(cmd: list, cwd: Path, threads: int, extra: dict | None = None) -> float:
    """Run `cmd` in `cwd`; its wall seconds, or exit with the tail of its output when it fails."""
    start = time.perf_counter()
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env(threads, extra), capture_output=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).decode(errors="replace")[-4000:]
        raise SystemExit(f"{' '.join(map(str, cmd))} failed in {cwd}:\n{tail}")
    return took


def make_project(root: Path, params: dict, threads: int, extra_files: tuple[str, ...] = ()) -> Path:
    """A fresh project at `root` (removed first) with `params` as its params.yaml, committed."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for name in ["dvc.yaml", ".dvcignore"]:
        shutil.copy(REPO / name, root / name)
    for code in ["pipelines", "transforms", "schemas", *extra_files]:  # stage deps (the code runs from the install)
        shutil.copytree(REPO / code, root / code, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    for cmd in (
        ["git", "init", "-q"],
        ["git", "config", "user.email", "bench@example.com"],
        ["git", "config", "user.name", "bench"],
        [BIN / "dvc", "init", "-q"],
        ["git", "add", "-A"],
        ["git", "commit", "-qm", "bench project"],
    ):
        run(cmd, root, threads)
    return root


def repo_params() -> dict:
    return yaml.safe_load((REPO / "params.yaml").read_text())
