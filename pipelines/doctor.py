"""`rewardmill doctor`: check the setup before a run, and say what to fix.

rewardmill doctor                 # this project: params.yaml (or --params FILE), models/policy, the caches
rewardmill doctor --json          # one object per check: area, status (ok | warn | FAIL), detail, fix
rewardmill doctor --no-endpoints  # skip the requests to configured endpoints

It checks Python and the pinned packages, that params load (every stage's section, with its labelers' configs),
the model source and the materialized model's fingerprint, the code sandbox (a real probe: no network inside),
offline settings and the hub ids params name, free disk where outputs, caches and temp files go, GPU and vLLM
against what params ask for, each configured endpoint (key variable set, `GET /models` answers, the model is
served), and the DVC project. Exit status 1 when any check failed, 0 otherwise (warnings included).
"""

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from rewardmill.pipelines.check import input_problems, setting_problem
from rewardmill.pipelines.settings import all_settings
from rewardmill.transforms.config import mappings, params_path, read_params
from rewardmill.transforms.doctor.endpoints import endpoint_check, endpoints_in
from rewardmill.transforms.doctor.host import (
    accelerator_checks,
    disk_checks,
    offline_checks,
    package_checks,
    python_check,
)
from rewardmill.transforms.doctor.model import folder_check, source_check
from rewardmill.transforms.doctor.project import dvc_outs, project_checks
from rewardmill.transforms.doctor.report import FAIL, OK, Check, exit_status, render
from rewardmill.transforms.doctor.sandbox import sandbox_check
from rewardmill.transforms.sampling.policy import is_hub_id

MODEL_FOLDER = "models/policy"  # dvc.yaml's model stage output


def params_checks(settings: dict[str, Any], params: dict[str, Any] | None = None) -> list[Check]:
    """Every section that does not load (an unknown labeler with its closest names), and the inputs params name that
    are not there (prompt files, decontamination benchmarks): what the `check` stage stops `dvc repro` on."""
    params = read_params() if params is None else params
    failed = {name: value for name, value in settings.items() if isinstance(value, Exception)}
    inputs = input_problems(params, settings, model=False)  # model.source: source_check
    if not failed and not inputs:
        return [Check("params", OK, f"{params_path()}: every section loads ({len(settings)} sections and stages)")]
    return [
        Check(
            "params",
            FAIL,
            setting_problem(params, name, error),
            f"fix it in {params_path()}; `rewardmill stages {name} --params` shows the settings it takes",
        )
        for name, error in failed.items()
    ] + [Check("params", FAIL, problem, f"fix the path in {params_path()}") for problem in inputs]


def needs(settings: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(where params ask for vLLM, where they ask for a CUDA device)."""
    vllm, cuda = [], []
    for stage, value in settings.items():
        if isinstance(value, Exception) or stage in ("beam", "prices", "cache"):
            continue
        for where, block in mappings(value, stage):
            if block.get("backend") == "vllm" or block.get("kind") == "vllm":
                vllm.append(where)
            if str(block.get("device") or "").startswith("cuda"):
                cuda.append(where)
    return vllm, cuda


def hub_ids(settings: dict[str, Any], local: list[str]) -> tuple[tuple[str, str], ...]:
    """(where, id) of the models params name that are neither a local path nor a DVC output (`local`)."""
    found = []
    model = settings.get("model")
    candidates = [("model.source", model["source"])] if isinstance(model, dict) else []
    for stage, value in settings.items():
        if isinstance(value, Exception) or "@" not in stage:
            continue
        for where, block in mappings(value.get("config") or {}, f"{stage}.config"):
            if block.get("kind") in ("transformers", "vllm") and isinstance(block.get("model"), str):
                candidates.append((f"{where}.model", block["model"]))
    for where, name in candidates:
        if is_hub_id(name) and name.rstrip("/") not in local:
            found.append((where, name))
    return tuple(found)


def code_sandbox_users(settings: dict[str, Any]) -> dict[str, dict]:
    return {
        stage.partition("@")[2]: value["config"]
        for stage, value in settings.items()
        if stage.startswith("label@") and isinstance(value, dict) and value.get("labeler") == "code_tests"
    }


def run_checks(root: Path, model: str, endpoints: bool) -> list[Check]:
    checks = [python_check(), *package_checks()]
    params = read_params()
    settings = all_settings(params)
    checks += params_checks(settings, params)
    if isinstance(settings.get("model"), dict):
        checks.append(source_check(settings["model"]["source"]))
    checks.append(folder_check(model))
    checks.append(sandbox_check(code_sandbox_users(settings)))
    checks += offline_checks(hub_ids=hub_ids(settings, [*dvc_outs(root), model]))
    caches = settings["cache"]["root"]
    checks += disk_checks({"outputs": str(root), "caches": caches, "temp files": tempfile.gettempdir()})
    checks += accelerator_checks(*needs(settings))
    for endpoint in endpoints_in(settings) if endpoints else []:
        checks.append(endpoint_check(endpoint))
    checks += project_checks(root)
    return checks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="rewardmill doctor", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--model", default=MODEL_FOLDER, help=f"the materialized policy folder (default {MODEL_FOLDER})"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per check instead of the report")
    parser.add_argument("--no-endpoints", action="store_true", help="send no request to configured endpoints")
    args = parser.parse_args(argv)
    checks = run_checks(Path("."), args.model, endpoints=not args.no_endpoints)
    if args.json:
        print(json.dumps([c.__dict__ for c in checks], indent=2))
    else:
        print(render(checks))
    return exit_status(checks)
