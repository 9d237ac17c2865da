"""Every stage in dvc.yaml depends on the code its run executes, so a code change can never ship a stale dataset
that DVC calls up to date.

What a stage runs is derived from the code, not remembered:
- its command `rewardmill run STAGE` runs the stage module `cli.STAGES[STAGE]` (pipelines/cli.py only dispatches:
  it parses `run STAGE ARGS` and calls the module's `main(ARGS)`, so its other subcommands are not followed);
- every `rewardmill.*` module those import, anywhere in a module (function bodies included: the judge and sampling
  backends a factory picks at run time), or name as an object to load by name ("module.Class", a runner Beam
  loads by its path; "module:Class"), transitively;
- the package data of each package it runs (the gold packs, the viewer's page);
- for `label@KEY`, and for a stage that resolves params `labelers` entries itself (validate's audit), the labeler
  params `labelers.KEY.labeler` names and every inner labeler its config names (an appeal's rule, a tier, a
  panelist). The labeler registry (transforms/labelers/__init__.py) is a dispatcher like the
  CLI: it maps a params key to a labeler class, importing every built-in one to do so. A stage runs only the labelers
  its params name, whose files are deps, so the registry is neither followed nor a dep (`rewardmill new-labeler`
  edits it, and adding a labeler must rerun only its own stage and what reads all labels).

A module is covered when a dep of the stage is that file or a folder above it. A package's `__init__.py` that holds
only its docstring runs nothing and needs no dep.
"""

import ast
import tomllib
from functools import cache
from pathlib import Path

import pytest
import yaml

from rewardmill.pipelines.cli import STAGES
from rewardmill.transforms.labelers.code_digest import module_path
from tests.conftest import REPO

REGISTRY = REPO / "transforms" / "labelers" / "__init__.py"
ENTRY = REPO / "transforms" / "labelers" / "params.py"  # resolves a params `labelers` entry to its labeler


def named_modules(name: str) -> set[Path]:
    """The files that importing `name` runs: its module (for `pkg.module.Class`, the module) and its packages'
    `__init__.py`."""
    parts = name.split(".")
    found = set()
    for end in range(2, len(parts) + 1):
        path = module_path(".".join(parts[:end]))
        if path is not None:
            found.add(path)
    return found


def loaded_by_name(text: str) -> str | None:
    """The module a string names an object of, as code that loads it by name spells it ("module:Class", an entry
    point; "module.Class", a Beam runner): None for any other string, a bare package or module name included (a
    prefix to match, such as code_digest.FOLLOWED, imports nothing)."""
    module, colon, attribute = text.partition(":")
    if not colon:
        module, _, attribute = text.rpartition(".")
    if not attribute.isidentifier() or module_path(text) is not None:
        return None
    return module if module_path(module) is not None else None


@cache
def imports(path: Path) -> frozenset[Path]:
    """Project files `path` imports or names (a `rewardmill.*` string), anywhere in its body."""
    found: set[Path] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and " " not in node.value:
            names = [loaded_by_name(node.value)]
        for name in names:
            if name and name.startswith("rewardmill."):
                found |= named_modules(name)
    found.discard(path)
    return frozenset(found)


def package_data() -> dict[Path, list[Path]]:
    """Package folder -> the data files pyproject.toml ships with it (read at run time, never imported)."""
    setup = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    data: dict[Path, list[Path]] = {}
    for package, patterns in setup.get("package-data", {}).items():
        folder = module_path(package).parent
        data[folder] = sorted(f for pattern in patterns for f in folder.glob(pattern) if f.is_file())
    return data


def runs(*start: Path) -> set[Path]:
    """`start` and everything it runs: the import closure (the registry's own imports not followed), and package
    data."""
    seen: set[Path] = set()
    todo = list(start)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        if path != REGISTRY:
            todo += imports(path) - seen
    seen.discard(REGISTRY)
    data = package_data()
    return seen | {f for folder, files in data.items() if any(p.parent == folder for p in seen) for f in files}


def inner_labelers(config) -> set[str]:
    """Registry keys named as `labeler` anywhere in a labeler's config (appeals, tiers, panelists)."""
    if isinstance(config, dict):
        named = {config["labeler"]} if isinstance(config.get("labeler"), str) else set()
        return named.union(*(inner_labelers(v) for v in config.values()))
    if isinstance(config, list):
        return set().union(*(inner_labelers(v) for v in config))
    return set()


def labeler_files(keys: set[str]) -> set[Path]:
    from rewardmill.transforms.labelers import LABELERS

    return {Path(__import__("inspect").getsourcefile(LABELERS[key])).resolve() for key in keys}


def stages() -> list[tuple[str, list[str], set[Path]]]:
    """(stage name, its deps, the files its run executes) for every stage of dvc.yaml, foreach entries expanded."""
    dvc = yaml.safe_load((REPO / "dvc.yaml").read_text())
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    out = []
    for name, stage in dvc["stages"].items():
        if "foreach" in stage:
            section = stage["foreach"].strip("${}")
            entries = dict(params[section])
            if section == "labelers":  # every built-in labeler, as a user's params may name it
                from rewardmill.transforms.labelers import LABELERS

                entries |= {f"any_{key}": {"labeler": key} for key in LABELERS}
            for key, entry in entries.items():
                body = stage["do"]
                command = body["cmd"].split()
                start = {module_path(STAGES[command[2]])}
                if section == "labelers":
                    start |= labeler_files({entry["labeler"], *inner_labelers(entry.get("config") or {})})
                labeler = entry.get("labeler", "")
                deps = [d.replace("${item.labeler}", labeler).replace("${key}", key) for d in body["deps"]]
                out.append((f"{name}@{key}", deps, runs(*start)))
        else:
            command = stage["cmd"].split()
            assert command[:2] == ["rewardmill", "run"], f"{name}: {stage['cmd']}"
            files = runs(module_path(STAGES[command[2]]))
            if ENTRY in files:  # it builds the labelers params configure, as their label stages do (the audit)
                entries = params["labelers"].values()
                keys = {k for e in entries for k in (e["labeler"], *inner_labelers(e.get("config") or {}))}
                files |= runs(*labeler_files(keys))
            out.append((name, stage["deps"], files))
    return out


def runs_code(path: Path) -> bool:
    """False for a file that only holds a docstring (a package's `__init__.py`); data files count as code."""
    if path.suffix != ".py":
        return True
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return any(not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)) for n in body)


def uncovered(deps: list[str], files: set[Path]) -> list[str]:
    declared = [(REPO / d).resolve() for d in deps]
    return sorted(
        str(f.relative_to(REPO)) for f in files if runs_code(f) and not any(f == d or d in f.parents for d in declared)
    )


@pytest.mark.parametrize(("stage", "deps", "files"), stages(), ids=lambda v: v if isinstance(v, str) else "")
def test_the_stage_depends_on_the_code_it_runs(stage, deps, files):
    missing = uncovered(deps, files)
    assert not missing, f"{stage}: dvc.yaml misses deps on code its run executes: {missing}"


def test_the_walk_finds_code_reached_only_at_run_time():
    """The closure follows what a judge and a stage reach lazily: the judge backends (imported inside the factory),
    the local generation they call, and the Dask runner Beam loads by its path."""
    judges = runs(labeler_files({"pointwise_judge"}).pop())
    rel = {str(p.relative_to(REPO)) for p in judges}
    assert {"transforms/judges/transformers_client.py", "transforms/sampling/transformers_generate.py"} <= rel
    label = {str(p.relative_to(REPO)) for p in runs(REPO / "pipelines" / "label.py")}
    assert "transforms/stage/dask_runner.py" in label
    assert not any(p.endswith("/pointwise_judge.py") for p in label)  # the registry's imports are not followed


def test_no_code_dep_is_code_the_stage_never_runs():
    """The other way round: a code dep that none of a stage's runs reaches only reruns the stage for nothing (for a
    foreach stage, the deps are shared by its entries, so each must be reached by one of them)."""
    unused: dict[str, list[str]] = {}
    reached: dict[str, set[Path]] = {}
    declared: dict[str, list[str]] = {}
    for stage, deps, files in stages():
        name = stage.split("@")[0]
        reached.setdefault(name, set()).update(files)
        declared[name] = deps
    for name, deps in declared.items():
        for dep in deps:
            path = (REPO / dep).resolve()
            code = dep.startswith(("pipelines", "transforms", "schemas")) and "$" not in dep
            if code and not any(f == path or path in f.parents for f in reached[name]):
                unused.setdefault(name, []).append(dep)
    assert not unused, f"deps on code the stage never runs: {unused}"


def test_a_missing_dep_is_found():
    """The check can fail: the label stage's deps without the judges' folder miss a module a judge runs."""
    name, deps, files = next(s for s in stages() if s[0] == "label@appeal")
    assert uncovered(deps, files) == []
    assert "transforms/judges/client.py" in uncovered([d for d in deps if d != "transforms/judges"], files)
