"""A judge label stage against a real OpenAI-compatible server (`transformers serve` on the default model) that
fails part of the requests: retries and timeouts recover, the stage finishes, failures beyond the retry budget go
to _rejects with the reason, and a rerun labels them from where the first run stopped."""

import json

import pyarrow.parquet as pq

from rewardmill.pipelines import label
from rewardmill.schemas import ROLLOUT_V2
from rewardmill.transforms.io.parquet import rows_to_table, write_table
from rewardmill.transforms.labelers.pointwise_judge import PointwiseJudge, PointwiseJudgeConfig
from tests.conftest import tiny_params
from tests.pipelines.test_label_and_assemble import MSG, rollout
from tests.transforms.judges.fault_proxy import HANG, FaultProxy, schedule

COMPLETIONS = ["4", "5", "doomed 4", "slow 4"]


def judge_params(proxy_url: str, policy_dir) -> dict:
    backend = {"kind": "openai", "model": str(policy_dir), "base_url": proxy_url + "/v1"}
    backend |= {"max_retries": 1, "request_timeout": 5.0, "max_concurrency": 2}
    # 1 of the 4 rollouts is meant to lose its call: allowed here (test_label_failed_calls.py covers the limit)
    return {"labeler": "pointwise_judge", "config": {"backend": backend, "max_tokens": 6}, "max_failed_calls": 0.5}


def user_content(completion: str) -> str:
    """What the proxy sees as the last user message for this rollout (its fault schedule is keyed on it)."""
    return PointwiseJudge(PointwiseJudgeConfig(max_tokens=6)).request(MSG, completion).messages[-1]["content"]


def run_stage(tmp_path, params_file, proxy_url, policy_dir) -> tuple[list[dict], list[dict], dict]:
    params = tiny_params()
    params["labelers"] = {"judge": judge_params(proxy_url, policy_dir)}
    params_file(params)
    out, metrics = tmp_path / "labels", tmp_path / "metrics.json"
    args = ["judge", "--rollouts", str(tmp_path / "rollouts"), "--out", str(out), "--cache", str(tmp_path / "cache")]
    label.main([*args, "--metrics", str(metrics)])
    labels = pq.read_table(out).to_pylist() if list(out.glob("*.parquet")) else []
    rejects_dir = out / "_rejects"
    rejects = pq.read_table(rejects_dir).to_pylist() if rejects_dir.exists() else []
    return labels, rejects, json.loads(metrics.read_text())


def test_failing_server_rejects_only_what_exhausted_retries_and_a_rerun_finishes(
    tmp_path, params_file, judge_server, policy_dir
):
    rows = [rollout("p1", i, c) for i, c in enumerate(COMPLETIONS)]
    (tmp_path / "rollouts").mkdir()
    write_table(rows_to_table(rows, ROLLOUT_V2), str(tmp_path / "rollouts" / "part-00000-of-00001.parquet"))
    faults = {
        user_content("5"): [503],  # recovers on the retry
        user_content("slow 4"): [HANG],  # the request timeout fires, the retry succeeds
        user_content("doomed 4"): [500, 500],  # beyond max_retries=1: rejected
    }
    with FaultProxy(judge_server, schedule(faults)) as proxy:
        labels, rejects, metrics = run_stage(tmp_path, params_file, proxy.url, policy_dir)
        assert sorted(r["rollout_id"] for r in labels) == ["p1-r0", "p1-r1", "p1-r3"]
        assert all(r["verdict"] in ("correct", "incorrect", "abstain") for r in labels)
        assert [(r["row_id"], r["reason"]) for r in rejects] == [("p1-r2", "judge_call_failed")]
        assert "InternalServerError" in rejects[0]["detail"]
        assert metrics["rejects"] == {"judge_call_failed": 1} and metrics["labels"] == 3
        usage = metrics["usage"]
        assert usage["requests"] == 4 and usage["retries"] == 3 and usage["failures"] == 1
        assert usage["cache_misses"] == 4 and usage["completion_tokens"] > 0

        proxy.plan = lambda body, attempt: None  # the server is healthy again
        labels_again, rejects_again, metrics_again = run_stage(tmp_path, params_file, proxy.url, policy_dir)
    assert sorted(r["rollout_id"] for r in labels_again) == ["p1-r0", "p1-r1", "p1-r2", "p1-r3"]
    assert rejects_again == [] and metrics_again["rejects"] == {}
    # The 3 labels of the first run come from the label cache: only the rejected rollout is asked again.
    assert metrics_again["usage"]["requests"] == 1
    same = {r["rollout_id"]: r for r in labels_again}
    assert all(same[r["rollout_id"]] == r for r in labels)
