"""Budgets on the rollouts and steps stages, on the real default model: whole prompts in id order up to the budget,
the rest rejected with reason `budget`; a rerun with a larger budget generates only what the first run left out."""

import json

from rewardmill.pipelines import plan, rollouts
from rewardmill.transforms.io.parquet import read_rows
from rewardmill.transforms.stage.outputs import count_rejects
from tests.conftest import tiny_params
from tests.pipelines.stage_data import make_prompts
from tests.pipelines.test_steps_stage import run as run_steps
from tests.pipelines.test_steps_stage import write_rollouts


def test_rollouts_budget_then_a_larger_one_samples_only_the_rest(tmp_path, params_file, policy_dir, stage_log):
    params = tiny_params()
    params["prompts"]["sources"] = params["prompts"]["sources"][:1]
    params["prompts"]["sources"][0].update(count=4)
    params["rollouts"].update(n=2, max_new_tokens=8, batch_size=4, budget={"max_requests": 5})  # 2 samples a prompt
    prompts = make_prompts(tmp_path, params_file, params)
    out, cache = tmp_path / "rollouts", tmp_path / "cache"
    argv = ["--prompts", str(prompts), "--model", str(policy_dir), "--out", str(out), "--cache", str(cache)]
    rollouts.main(argv)
    first = {r["prompt_id"] for r in read_rows(str(out))}
    ids = sorted(r["prompt_id"] for r in read_rows(str(prompts)))
    assert first == set(ids[:2])  # the two lowest ids fit 4 of 5 requests; a third would make 6
    assert count_rejects(out) == {"budget": 2}
    assert "budget reached (max_requests=5)" in stage_log.text
    stage_log.clear()

    params["rollouts"]["budget"] = {"max_requests": 8}
    params_file(params)
    rollouts.main(argv)
    assert {r["prompt_id"] for r in read_rows(str(out))} == set(ids) and count_rejects(out) == {}
    assert "2 prompts sampled now, 2 reused from the cache" in stage_log.text


def test_steps_budget_then_a_larger_one_continues_only_the_rest(tmp_path, params_file, policy_dir):
    params = tiny_params()
    config = {"k": 2, "segment": {"strategy": "sentences"}, "continuation": {"max_new_tokens": 8}, "method": "mc"}
    params["steps"] = {"mc": {"tasks": ["math"], "config": config}}
    params_file(params)
    rollout_dir = write_rollouts(tmp_path)
    paths = plan.plan_paths(rollouts=str(rollout_dir), model=str(policy_dir), steps_cache=None)
    groups = plan.plan_steps_stage("mc", paths, plan.load_prices()).groups  # prefixes per prompt, nothing cached
    assert set(groups) == {"p1", "p2", "p3"}  # p4 has no reference: rejected before any continuation

    params["steps"]["mc"]["budget"] = {"max_requests": groups["p1"].requests}
    params_file(params)
    out, metrics = run_steps(tmp_path, "mc", policy_dir, rollout_dir)
    assert count_rejects(out) == {"budget": 2, "no_reference": 1}
    assert metrics["this_run"]["continuations_generated"] == 2 * groups["p1"].requests
    assert metrics["budget"]["left_requests"] == groups["p2"].requests + groups["p3"].requests

    params["steps"]["mc"]["budget"] = {"max_requests": sum(g.requests for g in groups.values())}
    params_file(params)
    out, metrics = run_steps(tmp_path, "mc", policy_dir, rollout_dir)
    assert count_rejects(out) == {"no_reference": 1}
    generated = metrics["this_run"]["continuations_generated"]
    assert generated == 2 * (groups["p2"].requests + groups["p3"].requests)  # p1's prefixes come from the cache
    assert json.loads((out / "_manifest.json").read_text())["selection"]["selected"] == 4
