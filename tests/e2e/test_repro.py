"""End to end: `dvc repro` in a fresh git repo on the real default model with tiny params (the run's one build, in
tests/e2e/project.py).

Checks the acceptance of the foundation: every stage runs, outputs are complete and accounted for, a second
`dvc repro` does nothing, and running the stages again (on FnApiRunner with 2 workers, and on Dask) writes
byte-identical Parquet. The README's experiments on the same project are in test_project_experiments.py.
"""

import ast
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

import rewardmill.rewards
from rewardmill.transforms.io.parquet import read_rows
from tests.conftest import tiny_params
from tests.e2e.project import BIN, parquet_digests, plans, run, run_json

pytestmark = pytest.mark.e2e


def test_repro_builds_every_output(project):
    for out in [
        "models/policy",
        "data/prompts",
        "data/rollouts",
        "data/labels/math_answer",
        "data/labels/code_tests",
        "data/labels/appeal",
        "data/labels/panel",
        "data/rubrics/reference",
        "data/labels/rubric",
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
    # evaluate is off in the shipped params (an experiment in test_project_experiments.py turns it on): it says so
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
    stages = [p for p in after if p["stage"] != "per_accepted_row"]  # the dataset's cost per row: not a stage
    assert [p["stage"] for p in after[len(stages) :]] == ["per_accepted_row"]  # last, once a dataset is built
    assert [(p["stage"], p["requests"]) for p in stages if p["requests"]] == []
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
    card = card_text(project)
    call = re.search(r'from_params\("params.yaml", (\[.*?\]), prompts="(.*?)"\)', card)
    names, prompts = ast.literal_eval(call[1]), call[2]
    assert names[:2] == ["math_answer", "code_tests"], names  # the gates, then the judges the reward weighs
    weighted = re.search(r"reward_weights=(\[.*?\]),\s+multi_objective_aggregation='(\w+)'", card)
    assert (weighted is not None) == (len(names) > 2), card  # a reward vector: the weights and aggregation with it
    objectives = (
        {"reward_weights": ast.literal_eval(weighted[1]), "multi_objective_aggregation": weighted[2]}
        if weighted
        else {}
    )
    assert len(objectives.get("reward_weights", names)) == len(names)
    rl = load_dataset(str(project / "export"), "rl")
    rl = concatenate_datasets([rl[split] for split in sorted(rl)])
    one_each = [next(i for i, task in enumerate(rl["task"]) if task == kind) for kind in ("math", "code")]
    reward_funcs = rewardmill.rewards.from_params(project / "params.yaml", names, prompts=prompts)
    grpo = GRPOConfig(
        output_dir=str(tmp_path / "grpo"),
        num_generations=2,
        max_completion_length=8,
        logging_steps=1,
        **objectives,  # the reward's weights and aggregation, as the card passes them
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
        scored = logged[f"{name}/scored"]
        if name in ("math_answer", "code_tests"):  # a gate: 2 of the 4 completions are its task's
            assert scored == 0.5, logged
        else:  # a weighted judge: those of its task's completions it scores (an appeal: math_answer's rejects only;
            assert scored <= 0.5, logged  # a split panel abstains)
        assert scored == 0.0 or logged[f"rewards/{name}/mean"] == logged[f"rewards/{name}/mean"], logged


def card_text(project: Path) -> str:
    return (project / "export/README.md").read_text()


def test_the_card_metrics_and_plan_give_the_cost_of_an_accepted_row_of_every_config(project):
    """Issue acceptance: the card shows dollars per accepted row for every exported config, split by stage; the
    metrics and `rewardmill plan` carry the same per-row figures. The sampling's spend is the rollouts' own tokens."""
    card = card_text(project)
    configs = sorted(p.name for p in (project / "export/data").iterdir() if p.is_dir())
    assert "## Cost per accepted row" in card and configs, card
    for config in configs:
        assert re.search(rf"^\| `{config}` \| \d+ \| [\d,.]+ \| \$\d+\.\d{{6}} \|", card, re.M), (config, card)
        assert f"| `{config}` | `rollouts` |" in card
    rollouts = read_rows(str(project / "data/rollouts"))
    sampled = json.loads((project / "data/rollouts/_manifest.json").read_text())["spend"]
    assert sampled["tokens_out"] == sum(r["n_tokens"] for r in rollouts) and sampled["requests"] == len(rollouts)
    metrics = json.loads((project / "metrics/validate.json").read_text())["spend"]
    pairs = json.loads((project / "data/datasets/pairs/_manifest.json").read_text())
    assert metrics["pairs"]["rows"] == pairs["rows"] and metrics["pairs"]["tokens_per_row"] > 0
    labelers = tiny_params()["labelers"]
    graded = {f"rubrics@{e['config']['rubrics']}" for e in labelers.values() if e["config"].get("rubrics")}
    assert graded and set(pairs["spend"]["stages"]) == {"rollouts", *(f"label@{n}" for n in labelers), *graded}
    planned = json.loads(run_json([str(BIN / "rewardmill"), "plan", "--json"], project))
    (per_row,) = [p for p in planned if p["stage"] == "per_accepted_row"]
    assert (
        per_row["configs"]["pairs"]["rows"] == pairs["rows"] and per_row["configs"]["pairs"]["per_row"]["tokens"] > 0
    )
    assert set(per_row["configs"]["pairs"]["stages"]) <= set(pairs["spend"]["stages"])  # as assemble counts them
    assert graded <= set(per_row["configs"]["pairs"]["stages"])


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
