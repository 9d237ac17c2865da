"""End to end: the README's experiments on the demo project (tests/e2e/project.py), in its own copy of the run's one
build: writing your own labeler (scaffold, test, `dvc repro`, `dvc exp run`), an assemble override the appeal's
probe rate refuses, the evaluate stage turned on, and the agentic experiment (multi-turn episodes) sampled by vLLM's
CPU build.

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
from rewardmill.transforms.labelers.rubric_judge import RubricJudge
from tests.conftest import REPO, tiny_params
from tests.e2e.project import BIN, run, run_json

pytestmark = pytest.mark.e2e


# The built-in labelers of the shipped params that label math, by params name.
MATH_LABELERS = {
    "appeal": ReferenceJudge,
    "math_answer": MathAnswerVerifier,
    "panel": PanelJudge,
    "rubric": RubricJudge,  # against the generated rubrics (rubrics@reference)
}

# What reads every label: rerun by a new labeler, and by a new weight of one (assemble and what reads its output).
READ_ALL_LABELS = {"assemble", "evaluate", "validate", "export"}
# A rubrics stage may rank with any labeler (rank_by), so it depends on the labelers' code: a new labeler reruns it,
# from its caches, to the same bytes, so no label stage reruns after it.
RUBRICS = {f"rubrics@{name}" for name in tiny_params()["rubrics"]}


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
        assert {*new, "assemble"} <= ran <= {"check", *new, *RUBRICS, *READ_ALL_LABELS}, out  # no other label stage
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


def test_the_evaluate_experiment_trains_a_reward_model_that_validate_reads(project):
    """docs/evaluate.md's `dvc exp run -S evaluate.enabled=true`: evaluate trains a reward model on the train split's
    pairs and measures it on the test split's, and validate reads its metrics; nothing before evaluate reruns (the
    stage's figures are checked on a pair dataset built for it in tests/pipelines/test_evaluate.py)."""
    out = run([str(BIN / "dvc"), "exp", "run", "-S", "evaluate.enabled=true"], project)
    ran = set(re.findall(r"Running stage '([^']+)'", out))
    assert "evaluate" in ran and ran <= {"check", "evaluate", "validate", "export"}, out
    evaluation = json.loads((project / "metrics/evaluate.json").read_text())
    rm = evaluation["reward_model"]
    pairs = json.loads((project / "data/datasets/pairs/_manifest.json").read_text())
    assert rm["source"] == "trained" and rm["train_pairs"] + rm["test_pairs"] == pairs["rows"]
    if rm["train_pairs"]:
        assert rm["train"]["steps"] == tiny_params()["evaluate"]["train"]["max_steps"], rm
        assert rm["test"]["all"]["n"] + rm["test"]["too_long"] == rm["test_pairs"], rm
    else:  # the samples made no train pair: said, not trained on nothing
        assert "no train pairs" in rm["error"], rm
    gates = [v for k, v in evaluation["labelers"].items() if k.split("/")[0] in ("math_answer", "code_tests")]
    assert gates and all(g["gate"] for g in gates), evaluation["labelers"]
    metrics = json.loads((project / "metrics/validate.json").read_text())
    assert metrics["validation"] and all(v["success"] for v in metrics["validation"].values())
    run(["git", "checkout", "params.yaml"], project)  # the next experiment starts from the project's params


def test_the_agentic_experiment_on_vllm_builds_multi_turn_datasets_trl_trains(project, tmp_path):
    """docs/environments.md's agentic experiment, sampled by vLLM's CPU build (`-S rollouts.backend=vllm` added, as
    docs/gpu.md says): 8 math prompts in the python_tool environment with verifier feedback, 2 episodes each, at most
    3 turns; the outcome and turn labelers; multi-turn pairs, SFT rows with their `tools`, RL rows naming the
    environment and turn-level PRM rows that validate and export; one step each of TRL's DPO, SFT and PRM trainers
    on the exported configs. Last in this module: the experiment's outputs replace the workspace's."""
    from datasets import concatenate_datasets, load_dataset
    from transformers import AutoModelForCausalLM, AutoModelForTokenClassification, AutoTokenizer
    from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer
    from trl.experimental.prm import PRMConfig, PRMTrainer

    experiment = [
        str(BIN / "dvc"), "exp", "run", "-n", "agentic",
        "-S", "prompts.sources=[{name:arithmetic,kind:arithmetic,count:8,seed:0,levels:[1]}]",
        "-S", "rollouts.n=2",
        "-S", "rollouts.environment={name:python_tool,config:{max_attempts:3},max_turns:3}",
        "-S", "~labelers.code_tests", "-S", "~labelers.appeal", "-S", "~labelers.panel",
        "-S", "+labelers.env={labeler:environment}", "-S", "+labelers.turns={labeler:turns}",
        "-S", "assemble.aggregate.gates=[env,math_answer]",
        "-S", "~assemble.aggregate.weights", "-S", "+assemble.aggregate.weights={turns:1.0}",
        "-S", "+assemble.aggregate.normalize.turns=prompt",
        "-S", "rollouts.backend=vllm",
    ]  # fmt: skip
    # as a user runs it: without the suite's VLLM_CPU_KVCACHE_SPACE, the engine sizes its KV cache from free memory
    out = run(experiment, project, {"VLLM_CPU_KVCACHE_SPACE": None})
    assert re.search(r"starting an engine on .*'kv_cache_memory_bytes': \d+", out), out[-3000:]
    ran = set(re.findall(r"Running stage '([^']+)'", out))
    assert {"prompts", "rollouts", "label@env", "label@turns", "assemble", "validate", "export"} <= ran, out
    assert not {"model", "label@appeal", "label@panel", "label@code_tests"} & ran, out

    rollouts = read_rows(str(project / "data/rollouts"))
    assert len(rollouts) == 16 and {r["policy"]["backend"] for r in rollouts} == {"vllm"}
    assert {r["environment"]["name"] for r in rollouts} == {"python_tool"}
    assert all(r["turns"] and r["turns"][0]["role"] == "assistant" for r in rollouts)
    assert {r["stop_reason"] for r in rollouts} <= {"done", "max_turns", "max_tokens"}, rollouts  # no error
    episodes = json.loads((project / "data/rollouts/_manifest.json").read_text())["episodes"]
    assert episodes["trajectories"] == sum(episodes["by_stop_reason"].values()) == 16, episodes
    for name in ("mc", "binary_search"):  # Monte Carlo steps of an episode's last answer: counted rejects
        rejects = read_rows(str(project / f"data/steps/{name}/_rejects"))
        assert rejects and {r["reason"] for r in rejects} == {"trajectory"}, name

    datasets = project / "data/datasets"
    schemas = {
        name: json.loads((datasets / name / "_manifest.json").read_text())["schema"] for name in ("pairs", "sft", "rl")
    }
    assert schemas == {"pairs": "pair_v3", "sft": "sft_v2", "rl": "rl_v2"}, schemas
    prm = read_rows(str(datasets / "prm"))
    assert prm and {r["method"] for r in prm} == {"turns"}  # one row per trajectory, turns as steps
    metrics = json.loads((project / "metrics/validate.json").read_text())
    assert {"pairs", "sft", "rl", "prm", "rollouts"} <= set(metrics["validation"])
    assert all(v["success"] for v in metrics["validation"].values()), metrics["validation"]
    assert "Multi-turn preference pairs" in (project / "export/README.md").read_text()
    assert "agentic" in run([str(BIN / "dvc"), "exp", "show", "--csv"], project)  # recorded with its params

    model = str(project / "models/policy")
    tokenizer = AutoTokenizer.from_pretrained(model)
    common = {"max_steps": 1, "per_device_train_batch_size": 1, "report_to": [], "use_cpu": True,
              "save_strategy": "no", "max_length": 256}  # fmt: skip
    for trainer_cls, config_cls, config in ((DPOTrainer, DPOConfig, "pairs"), (SFTTrainer, SFTConfig, "sft")):
        loaded = load_dataset(str(project / "export"), config)
        rows = concatenate_datasets([loaded[split] for split in sorted(loaded)])
        assert len(rows) >= 1 and all(json.loads(t) for t in rows["tools"]), config  # the tool's schema rides along
        # SmolLM2's template has no tool format: the prompt is as the policy was fed it, the protocol's system first
        assert all(p[0]["role"] == "system" and "<tool_call>" in p[0]["content"] for p in rows["prompt"]), config
        if config == "pairs":  # whole trajectories: a failed episode's feedback turns are inside its side
            assert any(len(c) + len(r) > 2 for c, r in zip(rows["chosen"], rows["rejected"], strict=True)), rows[:]
        args = config_cls(output_dir=str(tmp_path / config), **common)
        network = AutoModelForCausalLM.from_pretrained(model)
        trainer = trainer_cls(model=network, processing_class=tokenizer, train_dataset=rows, args=args)
        loss = trainer.train().training_loss
        assert loss == loss, config  # a number, not NaN

    # the turn-level process rows: one per trajectory, its assistant turns as steps, in TRL's stepwise format
    loaded = load_dataset(str(project / "export"), "prm")
    rows = concatenate_datasets([loaded[split] for split in sorted(loaded)])
    assert set(rows["method"]) == {"turns"} and any(len(c) > 1 for c in rows["completions"])
    network = AutoModelForTokenClassification.from_pretrained(model, num_labels=2)
    network.config.pad_token_id = tokenizer.pad_token_id  # a new scoring head: padding must be known to score a batch
    args = PRMConfig(output_dir=str(tmp_path / "prm"), **common)
    loss = PRMTrainer(model=network, processing_class=tokenizer, train_dataset=rows, args=args).train().training_loss
    assert loss == loss, "prm"
