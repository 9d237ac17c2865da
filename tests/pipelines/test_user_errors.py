"""The README's promise, mistake by mistake: a user's mistake prints one line saying what is wrong and where, and
exits 2, with no traceback anywhere, run as a user runs it (the console script in a project folder, and `dvc repro`).
No model runs: every mistake is found before one would."""

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from tests.conftest import REPO, tiny_params

BIN = Path(sys.executable).parent
RM = str(BIN / "rewardmill")
BAD_YAML = "beam:\n  runner: [FnApiRunner\nmodel:\n  dtype: float32\n"  # an unclosed flow list: line 3, column 6


def run(project: Path, *argv: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "REWARDMILL_PARAMS"} | {"HF_HUB_OFFLINE": "1"}
    env["PATH"] = f"{BIN}:{env['PATH']}"
    return subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=timeout)


def write_params(project: Path, edit: Callable[[dict], None] | None = None, name: str = "params.yaml") -> Path:
    params = tiny_params()
    if edit:
        edit(params)
    (project / name).write_text(yaml.safe_dump(params, sort_keys=False))
    return project / name


def file_source(path: str) -> Callable[[dict], None]:
    def edit(params: dict) -> None:
        params["prompts"]["sources"] = [{"name": "mine", "kind": "file", "path": path}]

    return edit


def typo(params: dict) -> None:
    params["prompts"]["sourcez"] = []


def unknown_labeler(params: dict) -> None:
    params["labelers"]["ai_disclamer"] = {"labeler": "ai_disclamer", "tasks": ["math"]}


def missing_model(params: dict) -> None:
    params["model"]["source"] = "checkpoints/run1/final"  # a local folder the user never made


def bad_yaml(project: Path) -> None:
    (project / "params.yaml").write_text(BAD_YAML)


def empty_file(project: Path) -> None:
    (project / "prompts.jsonl").write_bytes(b"")
    write_params(project, file_source("prompts.jsonl"))


def all_rejected(project: Path) -> None:
    (project / "prompts.jsonl").write_bytes(b'{"prompt": "no reference"}\n{"question": "wrong column"}\n')
    write_params(project, file_source("prompts.jsonl"))


# (id, set up the project, argv, what the one line names)
CASES = [
    ("params typo", lambda p: write_params(p, typo), ["run", "prompts", "--out", "out"], ["sourcez", "'prompts'"]),
    (
        "missing --params file",
        lambda p: write_params(p),
        ["--params", "missing.yaml", "run", "prompts"],
        ["--params missing.yaml: no such file"],
    ),
    ("yaml syntax: doctor", bad_yaml, ["doctor", "--no-endpoints"], ["params.yaml:3:6: YAML syntax error"]),
    ("yaml syntax: plan", bad_yaml, ["plan"], ["params.yaml:3:6: YAML syntax error"]),
    ("yaml syntax: stages --params", bad_yaml, ["stages", "--params"], ["params.yaml:3:6: YAML syntax error"]),
    ("yaml syntax: run", bad_yaml, ["run", "prompts", "--out", "out"], ["params.yaml:3:6: YAML syntax error"]),
    (
        "yaml syntax: --params FILE",
        lambda p: (p / "exp.yaml").write_text(BAD_YAML),
        ["--params", "exp.yaml", "run", "model"],
        ["exp.yaml:3:6: YAML syntax error", "flow sequence"],
    ),
    (
        "unknown labeler",
        lambda p: write_params(p, unknown_labeler),
        ["run", "check", "--out", "check.json"],
        ["labelers.ai_disclamer.labeler", "unknown labeler 'ai_disclamer'"],
    ),
    (
        "missing model path",
        lambda p: write_params(p, missing_model),
        ["run", "model", "--out", "models/policy"],
        ["'model.source'", "checkpoints/run1/final"],
    ),
    (
        "missing model path: check",
        lambda p: write_params(p, missing_model),
        ["run", "check", "--out", "check.json"],
        ["'model.source'", "checkpoints/run1/final"],
    ),
    (
        "model path that reads as a hub id, offline",  # models/x is org/name in form; offline, not in the cache
        lambda p: write_params(p, lambda params: params["model"].update(source="models/my-finetune")),
        ["run", "model", "--out", "models/policy"],
        ["'model.source'", "models/my-finetune: no such local folder", "HF_HUB_OFFLINE"],
    ),
    (
        "missing prompt file",
        lambda p: write_params(p, file_source("nope.jsonl")),
        ["run", "prompts", "--out", "out"],
        ["prompts.sources[0] (mine)", "nope.jsonl: prompt source file not found"],
    ),
    (
        "missing prompt file: check",
        lambda p: write_params(p, file_source("nope.jsonl")),
        ["run", "check", "--out", "check.json"],
        ["prompts.sources[0] (mine)", "nope.jsonl"],
    ),
    (
        "empty prompt source",
        empty_file,
        ["run", "prompts", "--out", "out"],
        ["prompts.sources[0] (mine, prompts.jsonl) has no rows"],
    ),
    (
        "every row rejected",
        all_rejected,
        ["run", "prompts", "--out", "out"],
        [
            "all 2 rows of prompts.sources[0] (mine, prompts.jsonl) were rejected",
            "missing_prompt 1",
            "missing_reference 1",
        ],
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("setup", "argv", "names"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_mistake_is_one_line_exit_2_and_no_traceback(tmp_path, setup, argv, names):
    setup(tmp_path)
    proc = run(tmp_path, RM, *argv)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert lines and lines[-1].startswith("rewardmill: error: "), proc.stderr
    assert all(name in lines[-1] for name in names), lines[-1]
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "check.json").exists()


@pytest.mark.slow
def test_a_row_that_is_not_utf8_is_a_reject_and_the_rest_go_on(tmp_path):
    """Not an error: the row goes to _rejects/ as not_utf8 (file and line in its detail), the stage succeeds."""
    lines = [json.dumps({"prompt": f"What is {i} + {i}?", "reference": str(2 * i)}).encode() for i in range(3)]
    lines.insert(1, '{"prompt": "Combien font 2 + 2 ? réponse", "reference": "4"}'.encode("latin-1"))
    (tmp_path / "prompts.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    write_params(tmp_path, file_source("prompts.jsonl"))
    proc = run(tmp_path, RM, "run", "prompts", "--out", "out")
    assert proc.returncode == 0 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    manifest = json.loads((tmp_path / "out/_manifest.json").read_text())
    assert manifest["rows"] == 3 and manifest["rejects"] == {"not_utf8": 1}
    [reject] = pq.read_table(next((tmp_path / "out/_rejects").glob("*.parquet"))).to_pylist()
    assert reject["reason"] == "not_utf8" and reject["detail"].startswith("prompts.jsonl line 2: byte 0xe9")


@pytest.mark.slow
def test_dvc_repro_stops_at_the_check_stage_with_our_line(tmp_path):
    """An unknown labeler: without the check stage DVC only said `No such file or directory:
    '.../transforms/labelers/ai_disclamer.py'` (label@KEY depends on that file). DVC runs `check` first."""
    project = tmp_path / "project"
    project.mkdir()
    for folder in ("pipelines", "transforms", "schemas", "data/benchmarks"):
        shutil.copytree(REPO / folder, project / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "dvc.yaml", project / "dvc.yaml")
    write_params(project, unknown_labeler)
    for cmd in (["git", "init", "-q"], [str(BIN / "dvc"), "init", "-q"]):
        subprocess.run(cmd, cwd=project, check=True, capture_output=True)
    proc = run(project, str(BIN / "dvc"), "repro", timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    ours = [line for line in out.splitlines() if line.startswith("rewardmill: error: ")]
    assert len(ours) == 1 and "unknown labeler 'ai_disclamer'" in ours[0], out
    assert "Running stage 'check'" in out and "failed to reproduce 'check'" in out, out
    assert "Running stage 'model'" not in out and "ai_disclamer.py" not in out and "Traceback" not in out, out
