"""Checks of the project folder: a git repository with DVC set up, the dvc.yaml the stages run from, and a remote
to push datasets to."""

import subprocess
from pathlib import Path

from rewardmill.transforms.doctor.report import FAIL, OK, WARN, Check


def project_checks(root: Path) -> list[Check]:
    if not (root / "dvc.yaml").exists():
        return [
            Check(
                "dvc",
                FAIL,
                f"{root.absolute()}: no dvc.yaml here",
                "run rewardmill from the project's root folder (where dvc.yaml is)",
            )
        ]
    checks = []
    git = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=root, capture_output=True, text=True)
    if git.returncode != 0:
        checks.append(Check("dvc", FAIL, f"{root.absolute()}: not in a git repository", "git init, then dvc init"))
    if not (root / ".dvc").is_dir():
        checks.append(Check("dvc", FAIL, f"{root.absolute()}: DVC is not initialized here", "dvc init"))
        return checks
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        remote = repo.config["core"].get("remote")
        url = repo.config["remote"].get(remote, {}).get("url") if remote else None
    if remote:
        checks.append(Check("dvc", OK, f"DVC project; default remote {remote} ({url})"))
    else:
        checks.append(
            Check(
                "dvc",
                WARN,
                "DVC project without a default remote: `dvc push` has nowhere to go",
                "dvc remote add -d storage <folder or s3://bucket/path>",
            )
        )
    return checks


def dvc_outs(root: Path) -> list[str]:
    """Every `outs` path dvc.yaml declares (folders the stages write, e.g. models/policy)."""
    import yaml

    try:
        stages = (yaml.safe_load((root / "dvc.yaml").read_text()) or {}).get("stages") or {}
    except (OSError, yaml.YAMLError):
        return []
    outs = []
    for stage in stages.values():
        for out in stage.get("outs") or []:
            outs.append(next(iter(out)) if isinstance(out, dict) else str(out))
    return outs
