"""pyproject lists packages explicitly (the fixed top-level folders map into `rewardmill.*`): keep it complete."""

import tomllib
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
