"""`rewardmill new-labeler` on a copy of the project's own files."""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rewardmill.pipelines.label import LabelerParams
from rewardmill.pipelines.scaffold import main
from rewardmill.transforms.config import from_dict
from rewardmill.transforms.errors import UserError
from tests.conftest import REPO


@pytest.fixture
def project(tmp_path):
    (tmp_path / "transforms/labelers").mkdir(parents=True)
    shutil.copy(REPO / "transforms/labelers/__init__.py", tmp_path / "transforms/labelers/__init__.py")
    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    return tmp_path


def test_scaffold_creates_a_working_labeler_test_registry_and_params_entry(project):
    main(["word_count", "--root", str(project)])
    source = project / "transforms/labelers/word_count.py"
    spec = importlib.util.spec_from_file_location("word_count", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    labeler = module.WordCountLabeler()
    assert labeler.label("hello").verdict == "correct" and labeler.label(None).score is None

    init = (project / "transforms/labelers/__init__.py").read_text()
    compile(init, "__init__.py", "exec")
    assert "from rewardmill.transforms.labelers.word_count import WordCountLabeler" in init
    assert '"word_count": WordCountLabeler,' in init and '"math_answer": MathAnswerVerifier,' in init

    # the import and the entry go in sorted order: the registry passes ruff's isort check (I001) as it did before
    ruff = subprocess.run(
        [
            str(Path(sys.executable).parent / "ruff"),
            "check",
            "--config",
            str(REPO / "pyproject.toml"),
            "--no-cache",
            str(project / "transforms/labelers/__init__.py"),
            str(source),
        ],
        capture_output=True,
        text=True,
    )
    assert ruff.returncode == 0, ruff.stdout
    params = yaml.safe_load((project / "params.yaml").read_text())
    assert list(params["labelers"])[-1] == "word_count"
    assert params["labelers"]["word_count"]["config"] == {"min_chars": 1}  # so `-S ...config.min_chars=20` works
    assert from_dict(LabelerParams, params["labelers"]["word_count"], "labelers.word_count").labeler == "word_count"
    original = yaml.safe_load((REPO / "params.yaml").read_text())
    assert {k: v for k, v in params.items() if k != "labelers"} == {
        k: v for k, v in original.items() if k != "labelers"
    }
    test = (project / "tests/transforms/labelers/test_word_count.py").read_text()
    compile(test, "test_word_count.py", "exec")


@pytest.mark.parametrize("name", ["WordCount", "1abc", "has-dash", "math_answer"])
def test_bad_or_existing_names_change_nothing(project, name):
    if name == "math_answer":
        (project / "transforms/labelers/math_answer.py").write_text("# exists\n")
    before = (project / "params.yaml").read_text(), (project / "transforms/labelers/__init__.py").read_text()
    with pytest.raises(UserError):  # the CLI prints it as one line and exits 2
        main([name, "--root", str(project)])
    after = (project / "params.yaml").read_text(), (project / "transforms/labelers/__init__.py").read_text()
    assert before == after


def test_the_next_steps_name_commands_that_run_in_this_install(project, capsys, monkeypatch):
    """After `make install` alone there is no pytest: the printed step installs it first instead of naming a command
    that does not exist; with pytest (make dev) the step runs it directly."""
    main(["word_count", "--root", str(project)])
    lines = capsys.readouterr().out.splitlines()
    step = next(line for line in lines if line.strip().startswith("2."))
    assert "pytest tests/transforms/labelers/test_word_count.py" in step.replace(str(project) + "/", "")
    assert "pip install" not in step  # this venv has pytest
    from rewardmill.pipelines import scaffold

    real_find_spec = scaffold.importlib.util.find_spec
    monkeypatch.setattr(scaffold.importlib.util, "find_spec", lambda n: None if n == "pytest" else real_find_spec(n))
    step = next(s for s in scaffold.next_steps(Path("a.py"), Path("tests/test_a.py")) if s.strip().startswith("2."))
    assert "pip install -q -c requirements.lock pytest && " in step and "/pytest tests/test_a.py" in step
