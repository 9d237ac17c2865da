"""`rewardmill new-environment` on a copy of the project: the generated environment passes its generated test, ruff,
and the Protocol check, imported as the package a user's checkout is."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rewardmill.pipelines.scaffold_environment import main
from rewardmill.transforms.errors import UserError
from tests.conftest import REPO

BIN = Path(sys.executable).parent


@pytest.fixture
def project(tmp_path):
    """A project whose transforms/ is a copy (the scaffold writes there) and, beside it, a `rewardmill` namespace
    package made of links to it, ahead of the install on PYTHONPATH (as tests/e2e's editable_overlay)."""
    root = tmp_path / "project"
    shutil.copytree(REPO / "transforms", root / "transforms", ignore=shutil.ignore_patterns("__pycache__"))
    package = tmp_path / "overlay" / "rewardmill"
    package.mkdir(parents=True)
    for name, target in [
        ("pipelines", REPO / "pipelines"),
        ("schemas", REPO / "schemas"),
        ("transforms", root / "transforms"),
    ]:
        (package / name).symlink_to(target)
    (package / "rewards").symlink_to(root / "transforms/rewards")
    return root, package.parent


@pytest.mark.slow  # a pytest and a ruff process
def test_the_scaffold_is_a_working_environment_with_a_passing_test(project, capsys):
    root, overlay = project
    main(["short_answer", "--root", str(root)])
    out = capsys.readouterr().out
    assert "registered ShortAnswerEnvironment as 'short_answer'" in out
    assert "rollouts.environment: {name: short_answer" in out
    init = (root / "transforms/environments/__init__.py").read_text()
    assert "from rewardmill.transforms.environments.short_answer import ShortAnswerEnvironment" in init
    assert '"short_answer": ShortAnswerEnvironment,' in init and '"feedback": FeedbackEnvironment,' in init
    source = root / "transforms/environments/short_answer.py"
    test = root / "tests/transforms/environments/test_short_answer.py"
    ruff = [str(BIN / "ruff"), "check", "--config", str(REPO / "pyproject.toml"), "--no-cache"]
    checked = subprocess.run([*ruff, str(root / "transforms/environments"), str(test)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout  # sorted imports and entries (isort), line lengths
    env = {**os.environ, "PYTHONPATH": str(overlay), "PYTHONDONTWRITEBYTECODE": "1"}
    ran = subprocess.run(
        [str(BIN / "pytest"), "-q", "-p", "no:cacheprovider", "-p", "no:xdist", str(test)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0 and "5 passed" in ran.stdout, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert source.read_text().count("TODO") >= 2  # the places a user edits are marked


@pytest.mark.parametrize("name", ["ShortAnswer", "1abc", "has-dash", "feedback"])
def test_bad_or_existing_names_change_nothing(project, name):
    root, _ = project
    if name == "feedback":
        assert (root / "transforms/environments/feedback.py").exists()
    before = (root / "transforms/environments/__init__.py").read_text()
    with pytest.raises(UserError):  # the CLI prints it as one line and exits 2
        main([name, "--root", str(root)])
    assert (root / "transforms/environments/__init__.py").read_text() == before
    assert not (root / "tests").exists()
