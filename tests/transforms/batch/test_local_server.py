"""The batch lifecycle on vLLM's real batch runner (CPU build, the default model), through the OpenAI SDK: files,
batches, status, results by custom_id, an expired batch and a failed request resubmitted, nothing sent twice.

Why a local server and not the hosted service: no network here, and a hosted service cannot be told to expire a
batch or fail one request on cue. The server (transforms/batch/local_server.py) implements the documented endpoints
on top of `vllm run-batch`, which reads and writes the hosted API's file format; the failures are its `faults`."""

import json

import pytest

from rewardmill.transforms.batch.client import BatchJudgeClient
from rewardmill.transforms.batch.local_server import Faults, LocalBatchServer
from rewardmill.transforms.judges.call_cache import call_key
from rewardmill.transforms.judges.client import BackendConfig, BatchConfig, JudgeRequest, Sampling

pytestmark = [pytest.mark.model, pytest.mark.server]

RUNNER = ["--dtype", "float32", "--enforce-eager", "--max-model-len", "2048"]
RUNNER_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1"}


def backend(server: LocalBatchServer, policy_dir, cache, **batch) -> BackendConfig:
    return BackendConfig(
        kind="openai", model=str(policy_dir), base_url=server.url, cache_dir=str(cache),
        batch=BatchConfig(poll_seconds=0.5, max_poll_seconds=2.0, **batch),
    )  # fmt: skip


def test_lifecycle_with_an_expired_batch_and_a_failed_request(policy_dir, tmp_path):
    asked = [
        JudgeRequest(({"role": "user", "content": f"Is {a} + {a} = {2 * a}? Answer yes or no."},),
                     Sampling(max_tokens=6, top_logprobs=3))
        for a in range(4)
    ]  # fmt: skip
    config_ids = None
    faults = Faults(expire_batches={1})
    with LocalBatchServer(str(policy_dir), tmp_path / "work", RUNNER, faults=faults, env=RUNNER_ENV) as server:
        config = backend(server, policy_dir, tmp_path / "cache")
        client = BatchJudgeClient(config)
        config_ids = [call_key(client.model_id, r) for r in asked]
        faults.fail_ids = {config_ids[0]}  # it runs in the first half of batch 1, and fails there
        got = client.complete(asked)
        log = server.requests()
        batches = {b: dict(s) for b, s in server.batches.items()}
    assert all(r.error is None and r.text for r in got), [r.error for r in got]
    assert all(r.completions[0].logprobs for r in got)  # top logprobs come back through the batch file
    assert [b["status"] for b in batches.values()] == ["expired", "completed"]
    ran = [(e["batch"], e["custom_id"]) for e in log]
    first, second = "batch-000001", "batch-000002"
    # batch 1 ran its first half only; request 0 failed there; batch 2 carries request 0 and the two never run
    assert ran == [(first, config_ids[0]), (first, config_ids[1])] + [
        (second, k) for k in (config_ids[0], config_ids[2], config_ids[3])
    ]
    usage = client.usage()
    assert usage["batches"] == 2 and usage["batch_requests"] == 4 and usage["batch_resubmitted"] == 3
    assert usage["batch_failures"] == 0 and usage["completion_tokens"] > 0
    ledger = json.loads(next((tmp_path / "cache" / "batches").glob("*.json")).read_text())
    assert [b["id"] for b in ledger["batches"]] == [first, second]
