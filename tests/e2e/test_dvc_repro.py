"""End to end: `dvc repro` in a fresh git repo on the real default model with tiny params.

Checks the acceptance of the foundation: every stage runs, outputs are complete and accounted for, a second
`dvc repro` does nothing, and running the stages again (on FnApiRunner with 2 workers, and on Dask) writes
byte-identical Parquet.
"""

import ast
import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import rewardmill.rewards
from rewardmill.transforms.io.parquet import read_rows
from rewardmill.transforms.labelers.code_tests import CodeTestsVerifier
from rewardmill.transforms.labelers.math_answer import MathAnswerVerifier
from rewardmill.transforms.labelers.panel_judge import PanelJudge
from rewardmill.transforms.labelers.reference_judge import ReferenceJudge
from tests.conftest import REPO, tiny_params

pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent


def run(cmd: list[str], cwd: Path, extra_env: dict[str, str] | None = None) -> str:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1", **(extra_env or {})}
    env.pop("REWARDMILL_PARAMS", None)
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout + proc.stderr


def parquet_digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*.parquet"))
        if ".dvc" not in p.parts
    }


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("project")
    for name in ["dvc.yaml", ".dvcignore"]:
        shutil.copy(REPO / name, root / name)
    for code in ["pipelines", "transforms", "schemas", "data/benchmarks"]:  # stage deps (code runs from the install)
        shutil.copytree(REPO / code, root / code, ignore=shutil.ignore_patterns("__pycache__"))
    params = tiny_params()
    params["assemble"]["filters"]["decontaminate"]["files"] = ["data/benchmarks/demo.jsonl"]  # the project's copy
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run(["git", "init", "-q"], root)
    run(["git", "config", "user.email", "ci@example.com"], root)
    run(["git", "config", "user.name", "ci"], root)
    run([str(BIN / "dvc"), "init", "-q"], root)
    run([str(BIN / "dvc"), "config", "core.analytics", "false"], root)
    run(["git", "add", "-A"], root)
    run(["git", "commit", "-qm", "init"], root)
    # `rewardmill plan` before each spend: the rollouts' samples, then every label and steps stage's calls
    run([str(BIN / "dvc"), "repro", "model", "prompts"], root)
    plans(root).write_text(run_json([str(BIN / "rewardmill"), "plan", "--json", "--stage", "rollouts"], root))
    run([str(BIN / "dvc"), "repro", "rollouts"], root)
    plans(root, "labels").write_text(run_json([str(BIN / "rewardmill"), "plan", "--json"], root))
    run([str(BIN / "dvc"), "repro"], root)
    return root


def plans(root: Path, what: str = "rollouts") -> Path:
    """Where the fixture keeps a plan (beside the project, not in its git tree)."""
    return root.parent / f"{root.name}-plan-{what}.json"


def run_json(cmd: list[str], cwd: Path, extra_env: dict[str, str] | None = None) -> str:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", **(extra_env or {})}
    env.pop("REWARDMILL_PARAMS", None)
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


def test_repro_builds_every_output(project):
    for out in [
        "models/policy",
        "data/prompts",
        "data/rollouts",
        "data/labels/math_answer",
        "data/labels/code_tests",
        "data/labels/appeal",
        "data/labels/panel",
        "data/datasets/pairs",
        "data/datasets/rl",
        "data/datasets/sft",
        "data/datasets/_rewards",
        "data/steps/mc",
        "data/steps/binary_search",
        "data/datasets/prm",
        "export/README.md",
        "export/viewer.html",
        "reports/view.html",
        "metrics/validate.json",
        "metrics/evaluate.json",
        "reports",
    ]:
        assert (project / out).exists(), out
    params = tiny_params()
    prompts = json.loads((project / "data/prompts/_manifest.json").read_text())
    rollouts = json.loads((project / "data/rollouts/_manifest.json").read_text())
    math = json.loads((project / "data/labels/math_answer/_manifest.json").read_text())
    code = json.loads((project / "data/labels/code_tests/_manifest.json").read_text())
    arithmetic, code_source = params["prompts"]["sources"]
    assert prompts["rows"] == arithmetic["count"] + code_source["limit"]
    assert rollouts["rows"] == prompts["rows"] * params["rollouts"]["n"]
    # each labeler labels its own task and counts the other task's rollouts as not applicable
    n = params["rollouts"]["n"]
    assert math["rows"] == arithmetic["count"] * n and math["not_applicable"] == {"code": code_source["limit"] * n}
    assert code["rows"] == code_source["limit"] * n and code["not_applicable"] == {"math": arithmetic["count"] * n}
    assert rollouts["policy"]["fingerprint"] and len(rollouts["policy"]["fingerprint"]) == 64
    # the judges label the math rollouts with the default model; each stage writes its DVC metrics
    panel = json.loads((project / "metrics/labels/panel.json").read_text())
    assert panel["labels"] + sum(panel["rejects"].values()) == arithmetic["count"] * n
    assert panel["labeler"]["acceptance_rate"] is None or 0 <= panel["labeler"]["acceptance_rate"] <= 1
    assert panel["usage"]["completion_tokens"] > 0 or panel["usage"].get("cache_hits", 0) > 0
    appeal = json.loads((project / "metrics/labels/appeal.json").read_text())
    assert appeal["labels"] == arithmetic["count"] * n and "appealed" in appeal["labeler"]
    # evaluate is off in the shipped params (the vLLM experiment below turns it on): it records only that
    assert json.loads((project / "metrics/evaluate.json").read_text()) == {"enabled": False}


def test_the_stages_viewer_pages_are_what_rewardmill_view_writes(project, tmp_path):
    """validate's reports/view.html and export's viewer.html (linked from the card) are the command's pages, byte for
    byte, so a user can rebuild either from the data alone."""
    for folder, page in (("data/datasets", "reports/view.html"), ("export", "export/viewer.html")):
        run([str(BIN / "rewardmill"), "view", folder, "--out", str(tmp_path / "page.html")], project)
        assert (tmp_path / "page.html").read_bytes() == (project / page).read_bytes(), page
    assert "viewer.html" in card_text(project)


def test_the_plan_before_each_spend_equals_what_the_run_sent(project):
    params = tiny_params()
    n_prompts = json.loads((project / "data/prompts/_manifest.json").read_text())["rows"]
    (rollouts,) = json.loads(plans(project).read_text())
    assert rollouts["rows"] == n_prompts and rollouts["rows_cached"] == 0
    assert rollouts["requests"] == n_prompts * params["rollouts"]["n"]  # every sample, none cached yet
    assert rollouts["tokens_out_max"] == rollouts["requests"] * params["rollouts"]["max_new_tokens"]
    planned = {p["stage"]: p for p in json.loads(plans(project, "labels").read_text())}
    assert planned["rollouts"]["requests"] == 0 and planned["rollouts"]["rows_cached"] == n_prompts
    for name in params["labelers"]:
        usage = json.loads((project / f"metrics/labels/{name}.json").read_text())["usage"]
        assert planned[f"label@{name}"]["requests"] == usage.get("requests", 0), name
        assert planned[f"label@{name}"]["tokens_in"] == usage.get("prompt_tokens", 0), name
    assert planned["label@panel"]["requests"] > 0 and planned["label@appeal"]["requests"] > 0
    for name, entry in params["steps"].items():
        this_run = json.loads((project / f"metrics/steps/{name}.json").read_text())["this_run"]
        plan = planned[f"steps@{name}"]
        generated = plan["requests"] * entry["config"]["k"]  # a request is one prefix's k continuations
        if plan["requests_bound"]:  # a binary search past an uncached prefix: an upper bound
            assert this_run.get("continuations_generated", 0) <= generated, name
        else:
            assert this_run.get("continuations_generated", 0) == generated, name
    assert planned["steps@mc"]["requests"] > 0
    after = json.loads(run_json([str(BIN / "rewardmill"), "plan", "--json"], project))  # the caches hold it all
    assert [(p["stage"], p["requests"]) for p in after if p["requests"]] == []
    assert all(p["rows_cached"] == p["rows"] for p in after if p["stage"] in ("label@appeal", "label@panel"))


@pytest.fixture(scope="module")
def dask_cluster(project):
    """A distributed LocalCluster of 2 worker processes, started from another folder than the project and without the
    offline settings: the stages' runner carries the working directory and the settings over to the workers."""
    import dask
    from distributed import LocalCluster

    here = os.getcwd()
    saved = {k: os.environ.pop(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE") if k in os.environ}
    os.chdir(project.parent)
    try:
        with dask.config.set({"distributed.worker.daemon": False}):  # workers start helper processes
            cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    finally:
        os.chdir(here)
        os.environ.update(saved)
    with cluster:
        yield cluster


# The stages a runner must move every row of, one of each shape: a source split into shards (prompts), model
# inference on the workers (rollouts, the judge panel, step continuations), the sandbox (code_tests), and grouping by
# key (assemble's buckets). The others are one-element pipelines (model, validate, export) or no pipeline (evaluate).
RUNNER_STAGES = ["prompts", "rollouts", "label@math_answer", "label@code_tests", "label@panel", "steps@mc", "assemble"]


def parquet_stages(params: dict) -> list[str]:
    """Every stage that writes Parquet, in DAG order: the two-worker rerun is also the check that rerunning the DAG
    gives the same bytes (what a `dvc repro -f` would show, without rerunning model, validate and evaluate, which
    write none)."""
    labels = [f"label@{name}" for name in params["labelers"]]
    steps = [f"steps@{name}" for name in params.get("steps", {})]
    return ["prompts", "rollouts", *labels, *steps, "assemble", "export"]


@pytest.mark.parametrize("runner", ["dask", "fnapi_2_workers"])
def test_the_dag_on_other_runners_writes_the_same_bytes(project, runner, request, tmp_path):
    """`beam.runner: DaskRunner` on a local cluster of 2 worker processes, and FnApiRunner with 2 worker processes:
    each stage reruns through `dvc repro -s` (beam is a param of each) and writes the one-worker run's bytes. On Dask
    that is RUNNER_STAGES; with 2 workers every stage that writes Parquet (parquet_stages), so this is also the check
    that a rerun of the DAG writes the same bytes. The other stages' outputs are the project's. The model caches come
    along (their keys do not depend on the runner): CPU kernels are not bit-stable from one process to the next (see
    docs/stages.md), and what is checked here is that the runners move every row and write it the same way."""
    copy = tmp_path / "project"
    cache = project / ".dvc/cache"
    shutil.copytree(project, copy, symlinks=True, ignore=lambda d, names: [n for n in names if Path(d, n) == cache])
    params = yaml.safe_load((copy / "params.yaml").read_text())
    if runner == "dask":
        address = request.getfixturevalue("dask_cluster").scheduler_address
        params["beam"].update(runner="DaskRunner", dask_client_address=address)
        stages = RUNNER_STAGES
    else:
        params["beam"].update(runner="FnApiRunner", direct_num_workers=2)
        stages = parquet_stages(params)
        assert set(RUNNER_STAGES) < set(stages) and "label@appeal" in stages and "export" in stages, stages
    (copy / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    before = parquet_digests(project)
    assert any(k.startswith("export/") for k in before) and any(k.startswith("data/rollouts") for k in before)
    for stage in stages:  # DVC removes a stage's outputs before it runs: a stage that wrote nothing fails here
        out = run([str(BIN / "dvc"), "repro", "-s", stage], copy)
        assert f"Running stage '{stage}'" in out, out
    after = parquet_digests(copy)
    moved = {rel: changed_columns(project / rel, copy / rel) for rel in before if after.get(rel) != before[rel]}
    assert after.keys() == before.keys() and not moved, moved


def test_step_labels_become_prm_rows_that_load_with_datasets(project):
    """Both step methods label the same fixed sample; every labeled rollout is a PRM row or a counted reject."""
    from datasets import load_dataset

    metrics = {n: json.loads((project / f"metrics/steps/{n}.json").read_text()) for n in ("mc", "binary_search")}
    for name, m in metrics.items():
        assert m["selection"]["selected"] == tiny_params()["steps"][name]["max_rollouts"], m
        assert m["rollouts"] + sum(m["rejects"].values()) == m["selection"]["selected"]
    # binary search spends no more continuations than exhaustive MC on the same rollouts
    assert metrics["binary_search"]["continuations"] <= metrics["mc"]["continuations"]
    prm_dir = project / "data/datasets/prm"
    rows = read_rows(str(prm_dir))
    rejects = read_rows(str(prm_dir / "_rejects"))
    assert len(rows) + len(rejects) == sum(m["rollouts"] for m in metrics.values())
    validate = json.loads((project / "metrics/validate.json").read_text())
    assert set(validate["steps"]) == {"mc", "binary_search"}
    agreement = validate["step_agreement"]["binary_search|mc"]
    assert agreement["n"] >= 0 and (agreement["n"] == 0 or 0 <= agreement["first_error_agreement"] <= 1)
    for split in {r["split"] for r in rows}:
        loaded = load_dataset(str(project / "export"), "prm", split=split)
        assert all(len(r["labels"]) == len(r["completions"]) and isinstance(r["prompt"], str) for r in loaded)


def test_every_input_is_used_or_rejected_with_a_reason(project):
    datasets = project / "data/datasets"
    prompt_ids = {p["prompt_id"] for p in read_rows(str(project / "data/prompts"))}
    n_rollouts = len(read_rows(str(project / "data/rollouts")))
    # rollouts: each is kept or rejected (status = the reason) and counted
    rewards = read_rows(str(datasets / "_rewards"))
    rollout_rejects = [r for r in read_rows(str(datasets / "_rewards/_rejects")) if r["reason"] != "orphan_label"]
    assert len(rewards) == n_rollouts
    assert sum(r["status"] == "kept" for r in rewards) + len(rollout_rejects) == n_rollouts
    # pairs: for every strategy, each prompt has a pair of it, a pair the pair filters dropped, or a reason
    pairs = read_rows(str(datasets / "pairs"))
    rejects = read_rows(str(datasets / "pairs/_rejects"))
    for strategy in tiny_params()["assemble"]["pairs"]["strategies"]:
        paired = {p["prompt_id"] for p in pairs if p["pair_type"] == strategy}
        no_pair = {r["row_id"].rsplit("/", 1)[0] for r in rejects if r["row_id"].endswith("/" + strategy)}
        dropped = {
            json.loads(r["payload"])["prompt_id"] for r in rejects if r["payload"] and r["detail"].startswith(strategy)
        }
        repeated = prompt_ids - paired - no_pair - dropped  # chosen by an earlier strategy already: in pairs once
        assert not paired & no_pair and repeated <= {p["prompt_id"] for p in pairs}, strategy
    for p in pairs:
        assert p["chosen"] != p["rejected"] and p["margin"] > 0
        assert p["chosen"][0]["role"] == "assistant" and p["prompt"][-1]["role"] == "user"
    # rl: one row per prompt unless a prompt filter flagged it
    rl = read_rows(str(datasets / "rl"))
    assert len(rl) + len(read_rows(str(datasets / "rl/_rejects"))) == len(prompt_ids)


def test_every_exported_config_trains_a_step_in_trl(project, tmp_path):
    """Each config loads by name and goes into its TRL trainer as is (no renaming): one step each, on the policy; GRPO
    with rewardmill's own labelers as reward functions (rewardmill.rewards), as the exported card shows."""
    from datasets import concatenate_datasets, load_dataset
    from transformers import (
        AutoModelForCausalLM,
        AutoModelForSequenceClassification,
        AutoModelForTokenClassification,
        AutoTokenizer,
    )
    from trl import DPOConfig, DPOTrainer, GRPOConfig, GRPOTrainer, RewardConfig, RewardTrainer, SFTConfig, SFTTrainer
    from trl.experimental.prm import PRMConfig, PRMTrainer

    model = str(project / "models/policy")
    tokenizer = AutoTokenizer.from_pretrained(model)
    common = {
        "max_steps": 1,
        "per_device_train_batch_size": 2,
        "report_to": [],
        "use_cpu": True,
        "save_strategy": "no",
    }

    def rows(config: str):
        ds = load_dataset(str(project / "export"), config)
        both = concatenate_datasets([ds[split] for split in sorted(ds)])
        assert len(both) >= 2, config
        return both.select(range(2))

    def one_step(trainer) -> float:
        loss = trainer.train().training_loss
        assert loss == loss, trainer  # a number, not NaN
        return loss

    def train(trainer_cls, config_cls, name: str, network, dataset) -> float:
        args = config_cls(output_dir=str(tmp_path / name), max_length=128, **common)
        return one_step(trainer_cls(model=network, processing_class=tokenizer, train_dataset=dataset, args=args))

    def with_head(model_cls, num_labels: int):  # a new scoring head; padding must be known to score a batch
        network = model_cls.from_pretrained(model, num_labels=num_labels)
        network.config.pad_token_id = tokenizer.pad_token_id
        return network

    pairs = rows("pairs")
    train(DPOTrainer, DPOConfig, "dpo", AutoModelForCausalLM.from_pretrained(model), pairs)
    train(RewardTrainer, RewardConfig, "rm", with_head(AutoModelForSequenceClassification, 1), pairs)
    train(SFTTrainer, SFTConfig, "sft", AutoModelForCausalLM.from_pretrained(model), rows("sft"))
    train(PRMTrainer, PRMConfig, "prm", with_head(AutoModelForTokenClassification, 2), rows("prm"))

    # GRPO with the card's own reward functions: the rule verifiers that labelled the data, the sandboxed code tests
    # included, on one math and one code prompt of the rl config
    names = ast.literal_eval(re.search(r'from_params\("params.yaml", (\[.*?\])\)', card_text(project))[1])
    assert names == ["math_answer", "code_tests"], names
    rl = load_dataset(str(project / "export"), "rl")
    rl = concatenate_datasets([rl[split] for split in sorted(rl)])
    one_each = [next(i for i, task in enumerate(rl["task"]) if task == kind) for kind in ("math", "code")]
    reward_funcs = rewardmill.rewards.from_params(project / "params.yaml", names)
    grpo = GRPOConfig(
        output_dir=str(tmp_path / "grpo"),
        num_generations=2,
        max_completion_length=8,
        logging_steps=1,
        **{**common, "per_device_train_batch_size": 4},
    )
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model),
        reward_funcs=reward_funcs,
        args=grpo,
        train_dataset=rl.select(one_each),
        processing_class=tokenizer,
    )
    one_step(trainer)
    logged = {k: v for entry in trainer.state.log_history for k, v in entry.items()}
    for name in names:  # each function scored its own task's completions (a mean over no score would be NaN)
        assert logged[f"rewards/{name}/mean"] == logged[f"rewards/{name}/mean"], logged
        assert logged[f"{name}/scored"] == 0.5, logged  # 2 of the 4 completions are its task's


def card_text(project: Path) -> str:
    return (project / "export/README.md").read_text()


def test_second_repro_is_a_noop_and_status_clean(project):
    out = run([str(BIN / "dvc"), "repro"], project)
    assert "Running stage" not in out, out
    status = run([str(BIN / "dvc"), "status"], project)
    assert "up to date" in status, status


def output_digests(root: Path, lock: dict) -> dict[str, str]:
    """sha256 of every file of every output dvc.lock records (cached or not), by path relative to root."""
    outs = [root / out["path"] for stage in lock["stages"].values() for out in stage.get("outs", [])]
    files = [f for out in outs for f in ([out] if out.is_file() else sorted(out.rglob("*"))) if f.is_file()]
    return {str(f.relative_to(root)): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}


def test_a_tagged_release_pulls_back_the_same_bytes_without_recomputing(project, tmp_path):
    """The README's release flow on a local remote: commit dvc.lock and what DVC keeps in git, `dvc push`, tag. A fresh
    clone of the tag gets every output back from the remote with `dvc pull`, byte for byte, and has nothing to rerun.
    The project is left as found: the commits are undone (HEAD, index and workspace as before), the tag deleted."""
    dvc = str(BIN / "dvc")
    head, git_status = run(["git", "rev-parse", "HEAD"], project), run(["git", "status", "--porcelain"], project)
    config = (project / ".dvc/config").read_bytes()
    remote, clone = tmp_path / "remote", tmp_path / "clone"
    try:
        # the project's remote lives in .dvc/config, committed (the repo ships a default one); here a tmp folder
        run([dvc, "remote", "add", "-d", "storage", str(remote)], project)
        run(["git", "commit", "-qm", "remote", ".dvc/config"], project)
        # the release flow, as the README gives it (`dvc repro` ran in the fixture)
        run(["git", "add", "dvc.lock", "params.yaml", "metrics", "plots", "*.gitignore"], project)
        run(["git", "commit", "-qm", "Release v1.0"], project)
        pushed = run([dvc, "push"], project)
        run(["git", "tag", "-a", "v1.0", "-m", "v1.0"], project)
        assert "in sync" in run([dvc, "status", "-c"], project), pushed  # the remote holds every cached output
        assert not run(["git", "status", "--porcelain", "--untracked-files=no"], project)  # the tag is the workspace
        hub = [str(BIN / "rewardmill"), "push", "--repo-id", "you/name", "--revision", "v1.0", "--dry-run"]
        dry = run(hub, project)  # the Hub upload's release check passes (the upload itself needs a token)
        assert "(main branch, tag v1.0)" in dry and "refuse" not in dry, dry

        run(["git", "clone", "-q", str(project), str(clone)], project)
        run(["git", "checkout", "-q", "v1.0"], clone)
        assert not any(p.is_file() for p in (clone / ".dvc/cache").rglob("*"))  # nothing but the remote to pull from
        run([dvc, "pull"], clone)
        lock = yaml.safe_load((project / "dvc.lock").read_text())
        same = output_digests(project, lock)
        assert {"export/README.md", "metrics/validate.json", "models/policy/model.safetensors"} <= same.keys()
        assert all(any(p.startswith(f"{out}/") for p in same) for out in ["data/datasets/pairs", "reports", "plots"])
        assert output_digests(clone, lock) == same
        assert "up to date" in run([dvc, "status"], clone)
        out = run([dvc, "repro"], clone)
        assert "Running stage" not in out, out
    finally:
        if "v1.0" in run(["git", "tag"], project).split():
            run(["git", "tag", "-d", "v1.0"], project)
        run(["git", "reset", "-q", head.strip()], project)
        (project / ".dvc/config").write_bytes(config)
    assert run(["git", "rev-parse", "HEAD"], project) == head
    assert run(["git", "status", "--porcelain"], project) == git_status


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


def changed_columns(old: Path, new: Path) -> dict[str, str]:
    """{column: first differing row} of two Parquet files: says what moved when bytes differ."""
    import pyarrow.parquet as pq

    a, b = pq.read_table(old), pq.read_table(new)
    if a.num_rows != b.num_rows or a.schema != b.schema:
        return {"<table>": f"{a.num_rows} rows {a.schema.names} vs {b.num_rows} rows {b.schema.names}"}
    changed = {}
    for name in a.column_names:
        left, right = a[name].to_pylist(), b[name].to_pylist()
        rows = [i for i, (x, y) in enumerate(zip(left, right, strict=True)) if x != y]
        if rows:
            changed[name] = f"{len(rows)} rows, e.g. row {rows[0]}: {left[rows[0]]!r:.200} -> {right[rows[0]]!r:.200}"
    return changed


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
    out = run([str(BIN / "dvc"), "exp", "run", "-S", "rollouts.backend=vllm", "-S", "evaluate.enabled=true"], project)
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
