"""The demo project the e2e files share: `dvc repro` in a fresh git repo on the real default model with tiny
params, built once per run and copied for each test file (`project` in tests/e2e/conftest.py).

The build is the expensive part (every stage, the default model included, about 4 minutes on 2 cores). Under
pytest-xdist the workers share one build: the first to ask builds it behind a file lock in the run's shared temp
folder, the others wait for it and copy it. Each file gets its own copy (git repo, DVC cache, outputs), so what one
file's tests do to their project (experiments, commits, a release) never reaches another's.
"""

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import REPO, tiny_params

BIN = Path(sys.executable).parent
BUILT = ".e2e-built"  # written last in the shared build: a build that failed half way is built again


def run(cmd: list[str], cwd: Path, extra_env: dict[str, str | None] | None = None) -> str:
    """`cmd` in `cwd` with the venv first on PATH (the stages are `rewardmill run ...`); its output, or fail.
    `extra_env`: variables to set, or with None to unset."""
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1", **(extra_env or {})}
    env = {k: v for k, v in env.items() if v is not None}
    env.pop("REWARDMILL_PARAMS", None)
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout + proc.stderr


def run_json(cmd: list[str], cwd: Path, extra_env: dict[str, str] | None = None) -> str:
    """`cmd`'s standard output alone (a command printing JSON), or fail."""
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", **(extra_env or {})}
    env.pop("REWARDMILL_PARAMS", None)
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


def plans(root: Path, what: str = "rollouts") -> Path:
    """Where the build keeps a plan (beside the project, not in its git tree)."""
    return root.parent / f"{root.name}-plan-{what}.json"


def parquet_digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*.parquet"))
        if ".dvc" not in p.parts
    }


def build(root: Path) -> None:
    """The demo DAG in a fresh git repo at `root`: `rewardmill plan` before each spend (the rollouts' samples, then
    every label and steps stage's calls, once the rubric sets they grade against are written), and `dvc repro` of every
    stage."""
    root.mkdir(parents=True)
    for name in ["dvc.yaml", ".dvcignore"]:
        shutil.copy(REPO / name, root / name)
    for code in ["pipelines", "transforms", "schemas", "data/benchmarks"]:  # stage deps (code runs from the install)
        shutil.copytree(REPO / code, root / code, ignore=shutil.ignore_patterns("__pycache__"))
    params = tiny_params()
    params["assemble"]["filters"]["decontaminate"]["files"] = ["data/benchmarks/demo.jsonl"]  # the project's copy
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run(["git", "init", "-q"], root)
    run(["git", "config", "user.email", "ci@example.com"], root)
    run(["git", "config", "user.name", "ci"], root)
    run([str(BIN / "dvc"), "init", "-q"], root)
    run([str(BIN / "dvc"), "config", "core.analytics", "false"], root)
    run(["git", "add", "-A"], root)
    run(["git", "commit", "-qm", "init"], root)
    run([str(BIN / "dvc"), "repro", "model", "prompts"], root)
    plans(root).write_text(run_json([str(BIN / "rewardmill"), "plan", "--json", "--stage", "rollouts"], root))
    run([str(BIN / "dvc"), "repro", "rollouts", *(f"rubrics@{name}" for name in params.get("rubrics") or {})], root)
    plans(root, "labels").write_text(run_json([str(BIN / "rewardmill"), "plan", "--json"], root))
    run([str(BIN / "dvc"), "repro"], root)


def shared_build(shared: Path) -> Path:
    """The run's one build at `shared` (built by the first caller, behind a file lock; the others wait)."""
    from filelock import FileLock

    with FileLock(f"{shared}.lock"):
        if not (shared.parent / f"{shared.name}{BUILT}").exists():
            for stale in [shared, plans(shared), plans(shared, "labels")]:  # a build that failed half way
                shutil.rmtree(stale, ignore_errors=True) if stale.is_dir() else stale.unlink(missing_ok=True)
            build(shared)
            (shared.parent / f"{shared.name}{BUILT}").touch()
    return shared


def copy_project(source: Path, dest: Path) -> Path:
    """A copy of the project at `source` (git repo, DVC cache and outputs, file times kept) and its plans. The DVC
    cache's files are hard links: DVC names them by their content and never writes one in place (it makes them
    read-only), so the copies share them and each copy costs the size of its workspace (about half of the 1.1 GB)."""
    cache = source / ".dvc" / "cache"

    def link_or_copy(src: str, dst: str) -> str:
        if Path(src).is_relative_to(cache):
            os.link(src, dst)
            return dst
        return shutil.copy2(src, dst)

    shutil.copytree(source, dest, symlinks=True, copy_function=link_or_copy)
    for what in ("rollouts", "labels"):
        shutil.copy2(plans(source, what), plans(dest, what))
    return dest
