"""The label stage's DVC deps cover the code its labelers run: a change to a module a labeler imports (directly, in a
function body, or through another module it imports) must rerun that label stage, or `dvc repro` ships stale labels.
The check follows imports of transforms.labelers and transforms.judges from every labeler params.yaml configures and
from the inner labelers its config names (an appeal's rule, a tier); the registry (the package itself, which imports
every labeler to look one up by name) is not followed: a stage runs only the labelers its params name."""

import ast
from pathlib import Path

import yaml

from tests.conftest import REPO

FOLLOWED = ("rewardmill.transforms.labelers", "rewardmill.transforms.judges")


def module_path(module: str) -> Path | None:
    parts = module.removeprefix("rewardmill.").split(".")
    for candidate in (REPO.joinpath(*parts).with_suffix(".py"), REPO.joinpath(*parts, "__init__.py")):
        if candidate.is_file():
            return candidate
    return None


def imported(path: Path) -> set[Path]:
    """The followed modules `path` imports anywhere in its body (`from pkg import module` included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        for name in names:
            if name.startswith(FOLLOWED) and name not in FOLLOWED and (target := module_path(name)) is not None:
                found.add(target)
    return found


def inner_labelers(config) -> set[str]:
    """Registry keys named as `labeler` anywhere in a labeler's config (appeals, tiers, panelists)."""
    if isinstance(config, dict):
        named = {config["labeler"]} if isinstance(config.get("labeler"), str) else set()
        return named.union(*(inner_labelers(v) for v in config.values()))
    if isinstance(config, list):
        return set().union(*(inner_labelers(v) for v in config))
    return set()


def closure(*start: Path) -> set[Path]:
    seen, todo = set(), list(start)
    while todo:
        path = todo.pop()
        if path not in seen:
            seen.add(path)
            todo += imported(path) - seen
    return seen


def test_every_label_stage_depends_on_the_labeler_code_it_runs():
    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text())
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    deps = dvc["stages"]["label"]["do"]["deps"]
    missing = {}
    for key, entry in params["labelers"].items():
        declared = [REPO / d.replace("${item.labeler}", entry["labeler"]) for d in deps]
        keys = {entry["labeler"], *inner_labelers(entry.get("config") or {})}
        runs = closure(*(REPO / "transforms" / "labelers" / f"{k}.py" for k in sorted(keys)))
        uncovered = sorted(
            str(path.relative_to(REPO))
            for path in runs
            if path.name != "__init__.py" and not any(path == d or d in path.parents for d in declared)
        )
        if uncovered:
            missing[key] = uncovered
    assert not missing, f"label stages miss deps on code they run: {missing}"
