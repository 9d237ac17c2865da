"""`rewardmill doctor` on a good setup and on a broken one: real model folder, real sandbox probe, a real
`transformers serve` endpoint, a real DVC project."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rewardmill.pipelines.cli import main
from rewardmill.transforms.doctor import host
from rewardmill.transforms.sandbox import runner as sandbox
from tests.conftest import REPO, tiny_params
from tests.transforms.judges.fault_proxy import free_port

BIN = Path(sys.executable).parent


def dvc_project(root: Path, params: dict) -> Path:
    shutil.copy(REPO / "dvc.yaml", root / "dvc.yaml")
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    for cmd in (
        ["git", "init", "-q"],
        [str(BIN / "dvc"), "init", "-q"],
        [str(BIN / "dvc"), "remote", "add", "-d", "storage", str(root.parent / "remote")],
    ):
        subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True)
    return root


def judge_on(params: dict, key: str, base_url: str, model: str, api_key_env: str = "OPENAI_API_KEY") -> None:
    params["labelers"][key]["config"]["backend"] = {
        "kind": "openai",
        "base_url": base_url,
        "model": model,
        "api_key_env": api_key_env,
    }


def doctor(capsys, *args: str) -> tuple[int, list[dict], str]:
    status = main(["doctor", "--json", *args])
    out, err = capsys.readouterr()
    return status, json.loads(out), err


def by_area(checks: list[dict], status: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for check in checks:
        if check["status"] == status:
            found.setdefault(check["area"], []).append(check["detail"] + " | fix: " + check["fix"])
    return found


def expected_disk_status(detail: str) -> str:
    """What a disk check should say, from free space measured here at the path its detail names."""
    path = detail.rsplit("(", 1)[1].rstrip(")")
    free = shutil.disk_usage(path).free / 2**30
    return "FAIL" if free < host.FREE_GIB_FAIL else "warn" if free < host.FREE_GIB_WARN else "ok"


def test_a_good_setup_passes_every_check(tmp_path, monkeypatch, capsys, policy_dir, judge_server):
    params = tiny_params()
    judge_on(params, "panel", f"{judge_server}/v1", str(policy_dir))
    (tmp_path / "project").mkdir()
    project = dvc_project(tmp_path / "project", params)
    monkeypatch.chdir(project)
    monkeypatch.delenv("REWARDMILL_PARAMS", raising=False)
    status, checks, _ = doctor(capsys, "--model", str(policy_dir))
    machine = [c for c in checks if c["area"] == "disk"]  # free disk is the machine's, not the setup's
    assert machine and all(c["status"] == expected_disk_status(c["detail"]) for c in machine), machine
    setup = [c for c in checks if c["area"] != "disk"]
    assert by_area(setup, "FAIL") == {} and by_area(setup, "warn") == {}, checks
    assert status == (0 if all(c["status"] != "FAIL" for c in machine) else 1)
    areas = {c["area"] for c in checks}
    assert areas == {
        "python",
        "packages",
        "params",
        "model",
        "sandbox",
        "offline",
        "disk",
        "accelerator",
        "endpoint",
        "dvc",
    }
    endpoint = next(c for c in checks if c["area"] == "endpoint")
    assert "labelers.panel.config.backend" in endpoint["detail"] and "reachable" in endpoint["detail"]
    assert any("bwrap" in c["detail"] for c in checks if c["area"] == "sandbox")
    assert any("fingerprint" in c["detail"] for c in checks if c["area"] == "model")


def test_a_broken_setup_names_each_problem_and_its_fix(tmp_path, monkeypatch, capsys, policy_dir):
    params = tiny_params()
    closed = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    judge_on(params, "panel", closed, "judge", api_key_env="DOCTOR_TEST_KEY")
    judge_on(params, "appeal", "https://judge.example.com/v1", "big-judge", api_key_env="DOCTOR_UNSET_KEY")
    params["rollouts"].update(backend="transformers", device="cuda")  # no GPU here
    params["model"]["source"] = "some-org/some-model"  # a hub id, and offline mode is on
    params["assemble"]["aggregat"] = {}  # a typo
    project = tmp_path / "project"
    project.mkdir()
    dvc_project(project, params)
    model = tmp_path / "policy"  # the weights changed after the model stage fingerprinted them
    shutil.copytree(policy_dir, model)
    weights = next(model.glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)
    bin_without_bwrap = tmp_path / "bin"  # git for the project check; no bwrap
    bin_without_bwrap.mkdir()
    (bin_without_bwrap / "git").symlink_to(shutil.which("git"))
    monkeypatch.setenv("PATH", str(bin_without_bwrap))
    monkeypatch.setattr(sandbox, "_working", set())  # a fresh process: no earlier test's successful probe
    monkeypatch.setenv("DOCTOR_TEST_KEY", "sk-doctor-secret-0123")
    monkeypatch.delenv("DOCTOR_UNSET_KEY", raising=False)
    monkeypatch.delenv("REWARDMILL_PARAMS", raising=False)
    monkeypatch.chdir(project)
    status, checks, err = doctor(capsys, "--model", str(model))
    failed = by_area(checks, "FAIL")
    assert status == 1
    assert any("assemble" in f and "aggregat" in f for f in failed["params"]), failed
    assert any("weights changed" in f and "dvc repro -f model" in f for f in failed["model"]), failed
    assert any("bwrap" in f and "apt-get install bubblewrap" in f for f in failed["sandbox"]), failed
    assert any("some-org/some-model" in f for f in failed["offline"]), failed
    assert any("rollouts" in f and "CUDA" in f for f in failed["accelerator"]), failed
    endpoints = failed["endpoint"]
    assert any("labelers.panel" in f and "not reachable" in f and "start the server" in f for f in endpoints)
    assert any("labelers.appeal" in f and "DOCTOR_UNSET_KEY is not set" in f for f in endpoints), endpoints
    assert "sk-doctor-secret" not in json.dumps(checks) + err  # the key is sent, never shown
    assert "Traceback" not in err


def test_the_report_says_what_to_fix_and_exits_1(tmp_path, monkeypatch, capsys):
    project = tmp_path / "empty"
    project.mkdir()
    (project / "params.yaml").write_text(yaml.safe_dump(tiny_params(), sort_keys=False))
    monkeypatch.chdir(project)
    monkeypatch.delenv("REWARDMILL_PARAMS", raising=False)
    assert main(["doctor", "--no-endpoints"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  dvc" in out and "run rewardmill from the project's root folder" in out
    assert "warn  model        models/policy: not built yet" in out and "fix: dvc repro model" in out
    assert out.rstrip().splitlines()[-1].startswith("problems found:")


@pytest.mark.parametrize("argv", [["doctor", "--help"]])
def test_help_names_every_area(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 0
    assert "sandbox" in capsys.readouterr().out


def test_params_check_gives_an_unknown_labeler_its_closest_names_and_names_a_missing_prompt_file(tmp_path):
    """What the `check` stage stops `dvc repro` on, doctor reports too: one FAIL each, and the report goes on."""
    from rewardmill.pipelines.doctor import params_checks
    from rewardmill.pipelines.settings import all_settings
    from rewardmill.transforms.doctor.report import FAIL

    params = tiny_params()
    params["labelers"]["panel"]["labeler"] = "panel_judg"
    params["prompts"]["sources"].append({"name": "mine", "kind": "file", "path": str(tmp_path / "nope.jsonl")})
    failed = [c.detail for c in params_checks(all_settings(params), params) if c.status == FAIL]
    assert len(failed) == 2, failed
    assert "labelers.panel.labeler: unknown labeler 'panel_judg' (did you mean 'panel_judge'" in failed[0]
    assert "prompts.sources[2] (mine)" in failed[1] and "nope.jsonl: prompt source file not found" in failed[1]
