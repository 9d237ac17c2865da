"""End to end: exact row targets, with real DVC, the real default model and every stage up to the dataset.

`rewardmill plan` predicts the rounds from the dataset on disk; `rewardmill repro` runs them (`dvc repro assemble`
per round, the prompt sources grown in params.yaml), ends with at least the rows asked for, within one round of the
prediction, and its last round equals a single fresh run at the final sizes byte for byte (a new repo, no caches).
Byte identity needs batch-invariant sampling and judging (`rollouts.batch_invariant`, `backend.batch_invariant`):
batched, a prompt's logprobs move in their 5th digit with its batch mates (docs/targets.md). The project is the demo's
tiny params with the rule verifiers and the appeal judge (a local model whose scores are logprobs), on which that
shows; the demo project of the other e2e files checks `rewardmill repro` without targets.
"""

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, only_labelers, tiny_params
from tests.e2e.project import BIN, parquet_digests, run, run_json

pytestmark = pytest.mark.e2e

CODE = ["pipelines", "transforms", "schemas", "data/benchmarks"]  # stage deps (code runs from the install)


def new_repo(root: Path, params: dict) -> Path:
    """A git + DVC repo at `root` holding the project's dvc.yaml, code and `params`."""
    root.mkdir(parents=True)
    for name in ["dvc.yaml", ".dvcignore"]:
        shutil.copy(REPO / name, root / name)
    for code in CODE:
        shutil.copytree(REPO / code, root / code, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    run([str(BIN / "dvc"), "init", "-q"], root)
    return root


def invariant_params() -> dict:
    params = only_labelers(tiny_params(), ("math_answer", "code_tests", "appeal"))
    params["assemble"]["filters"]["decontaminate"]["files"] = ["data/benchmarks/demo.jsonl"]  # the repo's copy
    params["rubrics"] = {}
    params["steps"] = {"mc": params["steps"]["mc"]}  # assemble reads data/steps: one cheap steps stage
    params["steps"]["mc"]["config"]["continuation"]["batch_invariant"] = True
    params["rollouts"]["batch_invariant"] = True
    backend = {"kind": "transformers", "model": "models/policy", "batch_invariant": True}
    params["labelers"]["appeal"]["config"]["backend"] = backend
    params["evaluate"]["enabled"] = False
    return params


def rows(project: Path, config: str) -> int:
    return json.loads((project / "data/datasets" / config / "_manifest.json").read_text())["rows"]


def sizes(project: Path) -> list[tuple]:
    return [
        (s.get("count"), s.get("limit"))
        for s in yaml.safe_load((project / "params.yaml").read_text())["prompts"]["sources"]
    ]


def test_without_targets_repro_is_one_dvc_repro(project):
    out = run([str(BIN / "rewardmill"), "repro"], project)
    assert "Data and pipelines are up to date" in out and "targets:" not in out, out


def test_a_pairs_target_is_met_in_the_rounds_the_plan_predicted_and_equals_one_run_at_the_final_size(tmp_path):
    params = invariant_params()
    project = new_repo(tmp_path / "rounds", params)
    run([str(BIN / "dvc"), "repro", "assemble"], project)  # the dataset the plan reads its rates from
    before = rows(project, "pairs")
    wanted = math.ceil(max(before, 2) * 1.6)  # more than it has: the sources must grow
    params["targets"] = {"pairs": wanted}
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    start = sizes(project)

    (predicted,) = [p for p in json.loads(run_json([str(BIN / "rewardmill"), "plan", "--json"], project))
                    if p["stage"] == "targets"]  # fmt: skip
    assert predicted["basis"] == "observed" and predicted["rounds"] >= 2, predicted
    assert predicted["per_round"][0]["rows"] == {"pairs": before}
    assert predicted["prompts_added"] > 0 and predicted["requests"] > 0  # the new prompts' samples and judge calls

    out = run([str(BIN / "rewardmill"), "repro"], project)
    record = json.loads((project / ".rewardmill/targets.json").read_text())
    assert record["met"] and rows(project, "pairs") >= wanted, out
    assert abs(len(record["rounds"]) - predicted["rounds"]) <= 1, (record, predicted)
    grown = sizes(project)
    flat = [(g or 0, b or 0) for new, old in zip(grown, start, strict=True) for g, b in zip(new, old, strict=True)]
    assert grown != start and all(g >= b for g, b in flat)  # sources only grow
    assert "targets: met in" in out and "targets: round 2:" in out, out
    status = run([str(BIN / "dvc"), "status"], project)  # the last round is the DAG at params.yaml's sizes
    assert "up to date" in status, status
    per_row = json.loads((project / "metrics/validate.json").read_text())["spend"]
    assert per_row["pairs"]["rows"] == rows(project, "pairs")  # the final `dvc repro` built what reads the dataset

    # One run at the final sizes, from nothing: a new repo, no caches, no outputs.
    fresh = new_repo(tmp_path / "fresh", yaml.safe_load((project / "params.yaml").read_text()))
    run([str(BIN / "dvc"), "repro", "assemble"], fresh)
    ours = {k: v for k, v in parquet_digests(project).items() if k.startswith("data/")}
    theirs = parquet_digests(fresh)
    differ = sorted(k for k, digest in theirs.items() if ours.get(k) != digest)
    assert not differ and set(theirs) <= set(ours), f"a round's outputs differ from one run: {differ}"
    assert any(k.startswith("data/datasets/pairs/") for k in theirs) and any("labels/appeal" in k for k in theirs)
