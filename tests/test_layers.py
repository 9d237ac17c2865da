"""The import contract: `schemas` <- `transforms` <- `pipelines`, and the GRPO reward functions without Beam.

import-linter (its contracts are `[tool.importlinter]` in pyproject.toml) checks the imports of every module, those in
function bodies included. The installed package maps its folders (pipelines/, transforms/, schemas/) onto
`rewardmill.*` through an editable-install hook that import-linter cannot walk, so the check runs on a tree of links
that lays the same folders out as the `rewardmill` package."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def package_tree(root: Path, **folders: Path) -> Path:
    """`root/rewardmill/<name>` -> each folder (linked), as the package-dir mapping in pyproject.toml installs them."""
    package = root / "rewardmill"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name, folder in folders.items():
        (package / name).symlink_to(folder, target_is_directory=True)
    return root


def project_folders() -> dict[str, Path]:
    return {
        "pipelines": REPO / "pipelines",
        "transforms": REPO / "transforms",
        "schemas": REPO / "schemas",
        "rewards": REPO / "transforms" / "rewards",
    }


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(REPO / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_layers_point_one_way(tmp_path):
    result = lint_imports(package_tree(tmp_path, **project_folders()))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "2 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("layer", "module", "source", "contract"),
    [
        # a schema that reaches up into the transforms
        ("schemas", "upward.py", "from rewardmill.transforms.io import storage\n", "transforms -> schemas"),
        # a transform that imports a stage module, inside a function body (lazy imports count too)
        (
            "transforms",
            "upward.py",
            "def f():\n    from rewardmill.pipelines import label\n",
            "pipelines -> transforms -> schemas",
        ),
        # the reward functions pulling in Beam
        ("rewards", "beamy.py", "import apache_beam\n", "import no Beam"),
    ],
)
def test_a_backwards_import_breaks_the_contract(tmp_path, layer, module, source, contract):
    """The contract can fail: the project with one module added that imports against the layers."""
    folders = project_folders()
    copy = tmp_path / "copy" / layer
    shutil.copytree(folders[layer], copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / module).write_text(source)
    folders[layer] = copy
    result = lint_imports(package_tree(tmp_path / "tree", **folders))
    assert result.returncode != 0
    broken = result.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken and module.removesuffix(".py") in broken


def test_importing_the_reward_functions_loads_no_beam():
    """What a GRPO trainer pays for `from rewardmill.rewards import from_params`: no Apache Beam (a new process)."""
    code = (
        "import sys\n"
        "from rewardmill.rewards import from_params\n"
        "print(sorted({m.split('.')[0] for m in sys.modules if m.startswith('apache_beam')}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]"
