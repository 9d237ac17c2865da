"""A label stage's `spend` (what its labels rest on) on the real default model judging: the first run's spend equals
what it sent (its usage counters), a rerun answered wholly from the caches records the same spend, and prompts a
budget left out are not in it. The assemble stage divides it by each config's rows (tests/e2e/test_repro.py)."""

import json

import pytest

from rewardmill.schemas import ROLLOUT_V2
from rewardmill.transforms.io.parquet import rows_to_table, write_table
from rewardmill.transforms.stage.outputs import read_manifest
from tests.conftest import tiny_params
from tests.pipelines.test_plan import ROWS, labelers, run_label


@pytest.fixture
def project(tmp_path):
    """test_plan.py's six rollouts of three prompts."""
    (tmp_path / "rollouts").mkdir()
    write_table(rows_to_table(ROWS, ROLLOUT_V2), str(tmp_path / "rollouts" / "part-00000-of-00001.parquet"))
    return tmp_path


PRICES = {"models": {}, "local": {"input": 1.0, "output": 2.0}}  # the local judge priced, so dollars move too


def priced_params(policy_dir, **budget) -> dict:
    params = tiny_params()
    params["labelers"] = labelers(policy_dir, **budget)
    params["prices"] = PRICES
    return params


def test_spend_is_what_the_first_run_sent_and_a_cached_rerun_records_the_same(project, policy_dir, params_file):
    params_file(priced_params(policy_dir))
    metrics, _ = run_label(project, "panel")
    usage, spend = metrics["usage"], read_manifest(project / "labels" / "panel")["spend"]
    assert usage["requests"] == 18 and metrics["spend"] == spend  # 6 rollouts x 3 panelists, all sent
    assert spend["requests"] == usage["requests"]
    assert (spend["tokens_in"], spend["tokens_out"]) == (usage["prompt_tokens"], usage["completion_tokens"])
    assert spend["cost_usd"] == pytest.approx((spend["tokens_in"] * 1.0 + spend["tokens_out"] * 2.0) / 1e6, abs=1e-6)
    assert spend["uncached_requests"] == 0 and spend["estimated_requests"] == 0

    metrics_again, _ = run_label(project, "panel")  # every label from the label cache: nothing sent
    assert metrics_again["usage"].get("requests", 0) == 0
    assert read_manifest(project / "labels" / "panel")["spend"] == spend


def test_prompts_a_budget_left_out_are_not_in_the_spend(project, policy_dir, params_file):
    params_file(priced_params(policy_dir, max_requests=8))  # p1 only (6 calls)
    metrics, rejects = run_label(project, "panel")
    spend = read_manifest(project / "labels" / "panel")["spend"]
    assert len(rejects) == 4 and spend["requests"] == metrics["usage"]["requests"] == 6
    assert json.dumps(spend)  # plain JSON in the manifest
