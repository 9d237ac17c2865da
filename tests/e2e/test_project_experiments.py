"""End to end: the README's experiments on the demo project (tests/e2e/project.py), in its own copy of the run's one
build: writing your own labeler (scaffold, test, `dvc repro`, `dvc exp run`), an assemble override the appeal's
probe rate refuses, and the same DAG sampled by vLLM's CPU build.

A file of its own so that on `make test`'s workers it runs beside test_repro.py's checks instead of after them
(tests/e2e/conftest.py says how the file names set the order).
"""

import csv
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from rewardmill.transforms.io.parquet import read_rows
from rewardmill.transforms.labelers.code_tests import CodeTestsVerifier
from rewardmill.transforms.labelers.math_answer import MathAnswerVerifier
from rewardmill.transforms.labelers.panel_judge import PanelJudge
from rewardmill.transforms.labelers.reference_judge import ReferenceJudge
from tests.conftest import REPO, tiny_params
from tests.e2e.project import BIN, run, run_json

pytestmark = pytest.mark.e2e


# The built-in labelers of the shipped params that label math, by params name.
MATH_LABELERS = {
    "appeal": ReferenceJudge,
    "math_answer": MathAnswerVerifier,
    "panel": PanelJudge,
}

# What reads every label: rerun by a new labeler, and by a new weight of one (assemble and what reads its output).
READ_ALL_LABELS = {"assemble", "evaluate", "validate", "export"}


def editable_overlay(project: Path) -> dict[str, str]:
    """The environment in which the project is the `rewardmill` package, as a checkout is its own editable install.

    The stages run `rewardmill run ...`, which imports the installed package: here an editable install of the repo,
    not of this copy of it. The overlay is a folder beside the project (outside its git tree) holding `rewardmill/`
    without an __init__.py (a namespace package, as the install's is) whose pipelines, transforms, schemas and rewards
    link to the project's folders. On PYTHONPATH it comes before setuptools' editable finder, which is appended to
    sys.meta_path, in every command and in the Beam workers they start (which inherit the environment). No bytecode is
    written: in the repo, .gitignore keeps __pycache__ out of a `git add transforms/labelers`.
    """
    package = project.parent / f"{project.name}-overlay" / "rewardmill"
    package.mkdir(parents=True, exist_ok=True)
    for name, folder in [
        ("pipelines", "pipelines"),
        ("transforms", "transforms"),
        ("schemas", "schemas"),
        ("rewards", "transforms/rewards"),
    ]:
        if not (package / name).is_symlink():
            (package / name).symlink_to(project / folder)
    return {"PYTHONPATH": str(package.parent), "PYTHONDONTWRITEBYTECODE": "1"}


def not_skipped(out: str) -> set[str]:
    """The stages a `dvc repro` or `dvc exp run` ran, or took from DVC's run cache instead of running them again."""
    return {a or b for a, b in re.findall(r"Running stage '([^']+)'|Stage '([^']+)' is cached", out)}


def test_the_write_your_own_labeler_steps_work_as_written(project, tmp_path):
    """The README's "Write your own labeler", each command as written there and run from the repo's root: scaffold
    word_count, `ruff check` and pytest its files, `dvc repro` (only it and what reads all labels run), commit, a
    `--temp` experiment on its config (params.yaml untouched, `dvc exp show --only-changed` lists it in a few columns)
    and a workspace experiment on its weight (only assemble and after run; the value lands in params.yaml).

    Every command runs with editable_overlay(project): in the repo the code a newcomer edits is the installed package,
    here the install is the repo's, which has no word_count. The project is left as found (files, HEAD, index, outputs,
    `dvc status` clean), because the later tests run the stages from the install, which cannot label with word_count.
    """
    dvc, env = str(BIN / "dvc"), editable_overlay(project)
    made = ["transforms/labelers/word_count.py", "tests", "pyproject.toml", ".ruff_cache", ".pytest_cache"]
    made += ["data/labels/word_count", "data/labels/math_answer_quick"]
    assert not any((project / rel).exists() for rel in made), made
    head = run(["git", "rev-parse", "HEAD"], project).strip()
    git_status = run(["git", "status", "--porcelain"], project)
    gitignores = run(["git", "ls-files", "-co", "--exclude-standard", "*.gitignore"], project).split()
    edited = ["params.yaml", "dvc.lock", "transforms/labelers/__init__.py", *gitignores]
    saved = {rel: (project / rel).read_bytes() for rel in edited}
    for uncached in ("metrics", "plots"):  # outputs DVC does not cache: `dvc checkout` cannot bring them back
        shutil.copytree(project / uncached, tmp_path / uncached)
    shutil.copy(REPO / "pyproject.toml", project / "pyproject.toml")  # the repo's ruff and pytest settings
    try:
        where = run(
            [str(BIN / "python"), "-c", "import rewardmill.transforms.labelers as m; print(m.__file__)"], project, env
        )
        assert f"{env['PYTHONPATH']}/rewardmill/transforms/labelers/__init__.py" in where, where  # not the install's

        out = run([str(BIN / "rewardmill"), "new-labeler", "word_count"], project, env)
        assert "registered WordCountLabeler as 'word_count' in transforms/labelers/__init__.py" in out, out
        assert (project / "tests/transforms/labelers/test_word_count.py").is_file()
        params = yaml.safe_load((project / "params.yaml").read_text())
        assert params["labelers"]["word_count"] == {"labeler": "word_count", "config": {"min_chars": 1}}
        out = run([str(BIN / "ruff"), "check", "transforms/labelers", "tests/transforms/labelers"], project, env)
        assert "All checks passed" in out, out  # the registry's imports stay sorted (isort, I001)
        out = run([str(BIN / "pytest"), "tests/transforms/labelers/test_word_count.py"], project, env)
        assert "4 passed" in out, out  # it imports word_count: the overlay's code, not the install's

        # and beside it a second entry of a built-in labeler under a new name: it labels only its own task
        params = yaml.safe_load((project / "params.yaml").read_text())
        params["labelers"]["math_answer_quick"] = {"labeler": "math_answer", "config": {"timeout_seconds": 2}}
        (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        out = run([dvc, "repro"], project, env)
        ran = not_skipped(out)
        new = {"label@word_count", "label@math_answer_quick"}
        assert {*new, "assemble"} <= ran <= {"check", *new, *READ_ALL_LABELS}, out  # no other label, steps or rollouts
        pairs = read_rows(str(project / "data/datasets/pairs"))  # word_count labels every task: in every pair
        assert pairs and all("word_count@1" in p["label_sources"] for p in pairs), pairs[0]["label_sources"]
        quick = f"math_answer_quick@{MathAnswerVerifier.version}"
        math_sources = {f"{name}@{cls.version}" for name, cls in MATH_LABELERS.items()} | {quick, "word_count@1"}
        code_sources = {f"code_tests@{CodeTestsVerifier.version}", "word_count@1"}
        for p in pairs:  # a math pair names the new math labeler among its sources; a code pair only code_tests
            sources = set(p["label_sources"])
            assert sources == code_sources or (quick in sources and sources <= math_sources), sources
        assert "Running stage" not in run([dvc, "repro"], project, env)

        # a committed baseline: `--temp` experiments run from a commit (untracked files are left out), and
        # `dvc exp show` compares experiments with it
        committed = ["transforms/labelers", "tests/transforms/labelers", "dvc.lock", "params.yaml", "metrics", "plots"]
        run(["git", "add", *committed, "*.gitignore"], project)
        run(["git", "commit", "-qm", "Add the word_count labeler"], project)
        files = run(["git", "show", "--name-only", "--format=", "HEAD"], project).split()
        assert {"transforms/labelers/word_count.py", "tests/transforms/labelers/test_word_count.py"} <= set(files)
        assert not [f for f in files if "__pycache__" in f], files

        before = (project / "params.yaml").read_bytes()
        out = run([dvc, "exp", "run", "--temp", "-S", "labelers.word_count.config.min_chars=20"], project, env)
        assert "Running stage 'label@word_count'" in out, out
        assert (project / "params.yaml").read_bytes() == before  # a temp copy ran it: the workspace is untouched
        # the copy has git's files, not .rewardmill/: its stages used the workspace's caches (in_workspace), so the
        # judges' audit in validate was the one kept, not measured again
        assert "audit: appeal (reference_judge): the result kept" in out, out
        assert "audit: appeal (reference_judge) on" not in out, out
        table = run_json([dvc, "exp", "show", "--only-changed", "--csv"], project, env)
        shown = list(csv.DictReader(io.StringIO(table)))
        min_chars = [(row["Experiment"], row["labelers.word_count.config.min_chars"]) for row in shown]
        assert [value for name, value in min_chars if not name] == ["1", "1"], min_chars  # the workspace and HEAD
        assert [value for name, value in min_chars if name] == ["20"], min_chars  # the experiment, by its name
        assert len(shown[0]) < 40, list(shown[0])  # not the hundreds of columns of every param and metric

        # without the `+`, DVC refuses a key params does not have yet
        proc = subprocess.run(
            [dvc, "exp", "run", "-S", "assemble.aggregate.weights.word_count=0.5"],
            cwd=project,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
        )
        assert proc.returncode != 0 and "Key 'word_count' is not in struct" in proc.stderr, proc.stderr
        out = run([dvc, "exp", "run", "-S", "+assemble.aggregate.weights.word_count=0.5"], project, env)
        ran = not_skipped(out)
        assert "assemble" in ran and ran <= {"check", *READ_ALL_LABELS}, out  # check: any params change, same bytes
        weights = yaml.safe_load((project / "params.yaml").read_text())["assemble"]["aggregate"]["weights"]
        assert weights["word_count"] == 0.5, weights  # a workspace experiment writes its params to params.yaml
    finally:
        run(["git", "reset", "-q", head], project)
        for rel in made:
            if (project / rel).is_dir():
                shutil.rmtree(project / rel)
            (project / rel).unlink(missing_ok=True)
        for rel, data in saved.items():
            (project / rel).write_bytes(data)
        for uncached in ("metrics", "plots"):
            shutil.rmtree(project / uncached)
            shutil.copytree(tmp_path / uncached, project / uncached)
        run([dvc, "checkout", "--force"], project)
    assert "up to date" in run([dvc, "status"], project)
    assert run(["git", "rev-parse", "HEAD"], project).strip() == head
    assert run(["git", "status", "--porcelain"], project) == git_status


def test_an_override_experiment_reruns_only_assemble_and_after(project):
    """The README's `dvc exp run -S '+assemble.aggregate.overrides.appeal=0.9'` asks the appeal to overturn gates.
    The default 135M appeal credits more attack probes than `max_probe_fpr` allows (its label stage reported the rate),
    so assemble refuses it before any work and says why; no label stage reruns for it."""
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1"}
    env.pop("REWARDMILL_PARAMS", None)
    experiment = [str(BIN / "dvc"), "exp", "run", "-S", "+assemble.aggregate.overrides.appeal=0.9"]
    refused = subprocess.run(experiment, cwd=project, env=env, capture_output=True, text=True, timeout=1200)
    out = refused.stdout + refused.stderr
    probe_fpr = json.loads((project / "metrics/labels/appeal.json").read_text())["probes"]
    assert probe_fpr["fpr"] > probe_fpr["max_fpr"], probe_fpr  # the premise: the 135M appeal is fooled too often
    assert refused.returncode != 0 and "cannot be an assemble.aggregate override" in out, out
    ran = set(re.findall(r"Running stage '([^']+)'", out))
    # refused there, before any work; no label stage reran for an assemble param (`check` reruns on any params change,
    # with the same output bytes)
    assert ran == {"check", "assemble"}, out
    run(["git", "checkout", "params.yaml"], project)


def test_experiment_on_vllm_builds_a_dataset_that_validates(project):
    """`dvc exp run -S rollouts.backend=vllm`: the same DAG sampled by vLLM's CPU build, through validate and export.
    With it, docs/evaluate.md's `-S evaluate.enabled=true`: evaluate trains a reward model on the train split's pairs,
    measured on the test split's, and validate reads its metrics (one DAG rerun for both: the stage's figures are
    checked on a pair dataset built for it in tests/pipelines/test_evaluate.py). Last in this module: the
    experiment's outputs replace the workspace's."""
    experiment = [str(BIN / "dvc"), "exp", "run", "-S", "rollouts.backend=vllm", "-S", "evaluate.enabled=true"]
    # as a user runs it: without the suite's VLLM_CPU_KVCACHE_SPACE, the engine sizes its KV cache from free memory
    out = run(experiment, project, {"VLLM_CPU_KVCACHE_SPACE": None})
    assert re.search(r"starting an engine on .*'kv_cache_memory_bytes': \d+", out), out[-3000:]
    ran = set(re.findall(r"Running stage '([^']+)'", out))
    assert {"rollouts", "assemble", "evaluate", "validate", "export"} <= ran and "model" not in ran, out
    rollouts = read_rows(str(project / "data/rollouts"))
    assert rollouts and {r["policy"]["backend"] for r in rollouts} == {"vllm"}
    assert {json.loads(r["sampling"])["backend"] for r in rollouts} == {"vllm"}
    metrics = json.loads((project / "metrics/validate.json").read_text())
    assert metrics["rollouts"]["count"] == len(rollouts)  # validate read the vLLM rollouts...
    assert metrics["validation"] and all(v["success"] for v in metrics["validation"].values())  # ...and passed
    assert (project / "export/README.md").exists()
    shown = run([str(BIN / "dvc"), "exp", "show", "--csv"], project)
    assert "vllm" in shown  # the experiment is recorded with its params

    evaluation = json.loads((project / "metrics/evaluate.json").read_text())
    rm = evaluation["reward_model"]
    pairs = json.loads((project / "data/datasets/pairs/_manifest.json").read_text())
    assert rm["source"] == "trained" and rm["train_pairs"] + rm["test_pairs"] == pairs["rows"]
    if rm["train_pairs"]:
        assert rm["train"]["steps"] == tiny_params()["evaluate"]["train"]["max_steps"], rm
        assert rm["test"]["all"]["n"] + rm["test"]["too_long"] == rm["test_pairs"], rm
    else:  # the vLLM samples made no train pair: said, not trained on nothing
        assert "no train pairs" in rm["error"], rm
    gates = [v for k, v in evaluation["labelers"].items() if k.split("/")[0] in ("math_answer", "code_tests")]
    assert gates and all(g["gate"] for g in gates), evaluation["labelers"]
