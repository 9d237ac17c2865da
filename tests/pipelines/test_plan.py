"""Budgets on a judge label stage (the real default model judges): a budget stops the stage at whole prompts (by the
whole output's cost, so the same params give the same bytes), and a rerun with a larger budget finishes without
repeating a call, after which the plan finds nothing left to send. That the plan equals the calls a run makes, stage
by stage, is checked on the demo DAG in tests/e2e/test_dvc_repro.py."""

import json

import pyarrow.parquet as pq
import pytest

from rewardmill.pipelines import label, plan
from rewardmill.schemas import ROLLOUT_V2
from rewardmill.transforms.io.parquet import rows_to_table, write_table
from tests.conftest import tiny_params
from tests.pipelines.test_label_and_assemble import rollout

# p1 and p3 each have a right and a wrong answer, p2 two wrong ones (the appeal judges only what math_answer rejects)
ROWS = [
    rollout("p1", 0, "4"),
    rollout("p1", 1, "It is 5."),
    rollout("p2", 0, "2 + 2 = 22"),
    rollout("p2", 1, "four"),
    rollout("p3", 0, "The answer is 4"),
    rollout("p3", 1, "3"),
]


@pytest.fixture
def project(tmp_path, policy_dir):
    (tmp_path / "rollouts").mkdir()
    write_table(rows_to_table(ROWS, ROLLOUT_V2), str(tmp_path / "rollouts" / "part-00000-of-00001.parquet"))
    return tmp_path


def labelers(policy_dir, **panel_budget) -> dict:
    backend = {"model": str(policy_dir)}
    params = tiny_params()["labelers"]
    params["appeal"]["config"]["backend"] = backend
    params["panel"]["config"]["backend"] = backend
    if panel_budget:
        params["panel"]["budget"] = panel_budget
    return {"appeal": params["appeal"], "panel": params["panel"]}


def planned(project, policy_dir, capsys, stage: str) -> dict:
    capsys.readouterr()
    args = ["--stage", stage, "--json", "--rollouts", str(project / "rollouts"), "--model", str(policy_dir)]
    plan.main([*args, "--cache-root", str(project / "cache")])
    (result,) = json.loads(capsys.readouterr().out)
    return result


def run_label(project, name: str) -> tuple[dict, list[dict]]:
    out, metrics = project / "labels" / name, project / f"{name}.json"
    cache = str(project / "cache/labels")
    label.main(
        [name, "--rollouts", str(project / "rollouts"), "--out", str(out), "--cache", cache, "--metrics", str(metrics)]
    )
    rejects = pq.read_table(out / "_rejects").to_pylist() if (out / "_rejects").exists() else []
    return json.loads(metrics.read_text()), rejects


def test_a_budget_stops_at_whole_prompts_and_a_larger_one_continues_without_repeating_a_call(
    project, policy_dir, params_file, capsys, stage_log
):
    params = tiny_params()
    params["labelers"] = labelers(policy_dir, max_requests=8)  # a prompt is 2 rollouts x 3 panelists = 6 calls
    params_file(params)
    metrics, rejects = run_label(project, "panel")
    assert metrics["usage"]["requests"] == 6  # p1 only: p2 would make 12
    assert sorted((r["row_id"], r["reason"]) for r in rejects) == [
        ("p2-r0", "budget"), ("p2-r1", "budget"), ("p3-r0", "budget"), ("p3-r1", "budget")
    ]  # fmt: skip
    assert "labelers.panel.budget (max_requests=8) was reached" in rejects[0]["detail"]
    assert metrics["budget"]["left_requests"] == 12
    assert "budget reached" in stage_log.text and "raise params labelers.panel.budget" in stage_log.text

    params["labelers"] = labelers(policy_dir, max_requests=18)  # the whole output's cost, cached or not
    params_file(params)
    metrics, rejects = run_label(project, "panel")
    assert rejects == []
    assert metrics["labels"] == len(ROWS)
    assert metrics["usage"]["requests"] == 12  # p2 and p3; p1's labels come from the cache
    assert planned(project, policy_dir, capsys, "label@panel")["requests"] == 0


def test_plan_names_the_stage_to_run_first_when_its_input_is_missing(tmp_path, policy_dir, params_file, capsys):
    params_file(tiny_params())
    plan.main(["--stage", "label@appeal", "--rollouts", str(tmp_path / "nothing"), "--model", str(policy_dir)])
    out = capsys.readouterr().out
    assert "`dvc repro rollouts` first" in out
