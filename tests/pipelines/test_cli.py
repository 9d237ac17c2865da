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
