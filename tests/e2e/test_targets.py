"""End to end: exact row targets on the demo project (the run's one build, tests/e2e/project.py, tiny params), with
real DVC, the real default model and every stage.

`rewardmill plan` predicts the rounds from the dataset on disk; `rewardmill repro` runs them (`dvc repro assemble` per
round, the prompt sources grown in params.yaml), ends with at least the rows asked for, within one round of the
prediction, and its last round equals a single fresh run at the final sizes byte for byte (no caches, a new repo).
"""

import json
import math
import shutil
import subprocess

import pytest
import yaml

from tests.e2e.project import BIN, parquet_digests, run, run_json

pytestmark = pytest.mark.e2e


def rows(project, config: str) -> int:
    return json.loads((project / "data/datasets" / config / "_manifest.json").read_text())["rows"]


def sources(project) -> list[dict]:
    return yaml.safe_load((project / "params.yaml").read_text())["prompts"]["sources"]


def test_without_targets_repro_is_one_dvc_repro(project):
    out = run([str(BIN / "rewardmill"), "repro"], project)
    assert "Data and pipelines are up to date" in out and "targets:" not in out, out


def test_a_pairs_target_is_met_in_the_rounds_the_plan_predicted_and_equals_one_run_at_the_final_size(
    project, tmp_path
):
    before = rows(project, "pairs")
    wanted = math.ceil(before * 1.6)  # more than the build has: the sources must grow
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["targets"] = {"pairs": wanted}
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    sizes = [(s.get("count"), s.get("limit")) for s in sources(project)]

    (predicted,) = [p for p in json.loads(run_json([str(BIN / "rewardmill"), "plan", "--json"], project))
                    if p["stage"] == "targets"]  # fmt: skip
    assert predicted["basis"] == "observed" and predicted["rounds"] >= 2, predicted
    assert predicted["per_round"][0]["rows"] == {"pairs": before}
    assert predicted["prompts_added"] > 0 and predicted["requests"] > 0  # the new prompts' samples and judge calls

    out = run([str(BIN / "rewardmill"), "repro"], project)
    record = json.loads((project / ".rewardmill/targets.json").read_text())
    assert record["met"] and rows(project, "pairs") >= wanted, out
    assert abs(len(record["rounds"]) - predicted["rounds"]) <= 1, (record, predicted)
    grown = [(s.get("count"), s.get("limit")) for s in sources(project)]
    pairs_of_sizes = [
        (g or 0, b or 0) for new, old in zip(grown, sizes, strict=True) for g, b in zip(new, old, strict=True)
    ]
    assert grown != sizes and all(g >= b for g, b in pairs_of_sizes)  # sources only grow
    assert "targets: met in" in out and "targets: round 2:" in out, out
    status = run([str(BIN / "dvc"), "status"], project)  # the last round is the DAG at params.yaml's sizes
    assert "up to date" in status, status
    per_row = json.loads((project / "metrics/validate.json").read_text())["spend"]
    assert per_row["pairs"]["rows"] == rows(project, "pairs")  # the final `dvc repro` built what reads the dataset

    # One run at the final sizes, from nothing: a new repo, no caches, no outputs.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    for name in ["dvc.yaml", ".dvcignore", "params.yaml"]:
        shutil.copy(project / name, fresh / name)
    for code in ["pipelines", "transforms", "schemas", "data/benchmarks"]:
        shutil.copytree(project / code, fresh / code, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["git", "init", "-q"], cwd=fresh, check=True)
    run([str(BIN / "dvc"), "init", "-q"], fresh)
    run([str(BIN / "dvc"), "repro", "assemble"], fresh)
    ours = {k: v for k, v in parquet_digests(project).items() if k.startswith("data/")}
    theirs = parquet_digests(fresh)
    assert set(theirs) <= set(ours) and theirs == {k: ours[k] for k in theirs}, "a round's outputs differ from one run"
    assert any(k.startswith("data/datasets/pairs/") for k in theirs)
