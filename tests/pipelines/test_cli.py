import subprocess
import sys
from pathlib import Path

import pytest

from rewardmill.pipelines.cli import STAGES, main


def test_stages_lists_every_stage(capsys):
    assert main(["stages"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in STAGES)


def test_unknown_stage_is_an_argparse_error():
    with pytest.raises(SystemExit) as exc:
        main(["run", "nope"])
    assert exc.value.code == 2


def test_console_script_is_installed():
    script = Path(sys.executable).parent / "rewardmill"
    proc = subprocess.run([str(script), "stages"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "rollouts" in proc.stdout


def test_every_dvc_stage_command_names_a_cli_stage():
    import yaml

    dvc = yaml.safe_load((Path(__file__).resolve().parents[2] / "dvc.yaml").read_text())
    for name, stage in dvc["stages"].items():
        cmd = stage.get("cmd") or stage["do"]["cmd"]
        assert cmd.split()[:2] == ["rewardmill", "run"] and cmd.split()[2] in STAGES, name


def test_version_names_the_installed_package(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"rewardmill {version('rewardmill')}"


@pytest.fixture
def bad_params(tmp_path, monkeypatch):
    """A params file whose prompts section has a typo, away from the working directory; REWARDMILL_PARAMS is
    restored after the test (main sets it for the stage)."""
    import yaml

    from tests.conftest import tiny_params

    params = tiny_params()
    params["prompts"]["sourcez"] = []
    path = tmp_path / "elsewhere.yaml"
    path.write_text(yaml.safe_dump(params))
    monkeypatch.delenv("REWARDMILL_PARAMS", raising=False)
    monkeypatch.chdir(tmp_path)
    return path


def test_a_config_mistake_is_one_line_and_debug_shows_the_traceback(bad_params, tmp_path, capsys):
    """--params anywhere on the line picks the file; its typo is one line on stderr and exit status 2."""
    from rewardmill.transforms.config import ConfigError

    assert main(["run", "prompts", "--out", str(tmp_path / "p"), "--params", str(bad_params)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("rewardmill: error: ") and "sourcez" in err[0] and "--debug" in err[0], err
    assert len(err) == 1 and not (tmp_path / "p").exists()
    with pytest.raises(ConfigError, match="sourcez"):
        main(["--debug", "--params", str(bad_params), "run", "prompts", "--out", str(tmp_path / "p")])


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder with the tiny params.yaml, as the working directory."""
    import yaml

    from tests.conftest import tiny_params

    (tmp_path / "params.yaml").write_text(yaml.safe_dump(tiny_params()))
    monkeypatch.delenv("REWARDMILL_PARAMS", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--params", "missing.yaml", "stages"], "--params missing.yaml: no such file"),
        (["run", "label", "nope", "--rollouts", "r", "--out", "o"], "nope"),  # no such labeler in params
        (["run", "assemble", "--rollouts", "absent", "--labels", "absent", "--out", "o"], "absent"),  # no input
    ],
)
def test_user_errors_say_what_to_fix_in_one_line(project, argv, says):
    """As a user runs it: the console script, in a project folder."""
    script = Path(sys.executable).parent / "rewardmill"
    proc = subprocess.run([str(script), *argv], capture_output=True, text=True, timeout=120, cwd=project)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("rewardmill: error: ")]
    assert proc.returncode == 2 and len(errors) == 1 and says in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr and "apitools" not in proc.stderr, proc.stderr


@pytest.mark.slow
def test_the_console_script_is_quiet_fast_and_names_its_commands(tmp_path):
    """`rewardmill stages` imports no stage (no Beam, no torch); no command prints Beam's apitools warning; a stage's
    --help names `rewardmill run <stage>`."""
    stages_then_modules = "main(['stages']); print('apache_beam' in sys.modules)"
    code = f"import sys; from rewardmill.pipelines.cli import main; {stages_then_modules}"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("False") and "rollouts" in proc.stdout, proc
    script = Path(sys.executable).parent / "rewardmill"
    proc = subprocess.run([str(script), "run", "assemble", "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: rewardmill run assemble"), proc.stdout[:200]
    assert "apitools" not in proc.stderr, proc.stderr


def test_stages_params_shows_every_stage_with_its_defaults_filled_in(project, capsys):
    import yaml

    assert main(["stages", "--params"]) == 0
    out = capsys.readouterr().out
    shown = yaml.safe_load(out)
    assert list(shown)[:3] == ["beam", "prices", "cache"] and list(shown)[-1] == "export"
    assert {"label@math_answer", "label@panel", "steps@mc", "assemble"} <= set(shown)
    # params.yaml sets two math_answer settings; the stage runs with all of them
    assert shown["label@math_answer"]["config"]["float_rounding"] == 6
    assert shown["label@panel"]["config"]["backend"]["kind"] == "transformers"
    assert main(["stages", "label@panel", "--params"]) == 0
    assert list(yaml.safe_load(capsys.readouterr().out)) == ["label@panel"]


def test_stages_params_names_the_section_that_does_not_load_and_shows_the_rest(project, capsys):
    import yaml

    params = yaml.safe_load((project / "params.yaml").read_text())
    params["labelers"]["panel"]["config"]["treshold"] = 0.5  # a typo
    (project / "other.yaml").write_text(yaml.safe_dump(params))
    assert main(["stages", "--params", "other.yaml"]) == 2
    out, err = capsys.readouterr()
    assert "treshold" in err and err.count("rewardmill: error:") == 1 and "label@panel" in err
    assert "label@appeal" in yaml.safe_load(out)  # the other stages still show


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["run", "assemble", "--params"], "--params needs a file"),  # only `stages` takes a bare --params
        (["stages", "nope", "--params"], "no stage nope"),
    ],
)
def test_bare_params_is_for_stages_only(project, capsys, argv, says):
    assert main(argv) == 2
    assert says in capsys.readouterr().err
