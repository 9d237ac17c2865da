"""A served policy on the batch backend (`rollouts.openai.batch`), against the local batch server (vLLM's real batch
runner on the default model; tests/transforms/batch/test_local_server.py says why not the hosted service) with
`vllm serve` of the same model behind the same base URL for online requests. Every sample the rollout cache lacks
goes through one batch, none online; the rollouts equal the online run's (vLLM honours per-request seeds); a rerun
sends nothing. The server's request log is the evidence."""

import json

import pytest

from rewardmill.schemas import ROLLOUT_V2
from rewardmill.transforms.batch.local_server import Faults, LocalBatchServer
from rewardmill.transforms.io.parquet import read_rows
from tests.pipelines import test_rollouts_openai
from tests.pipelines.test_rollouts_openai import N_PROMPTS, N, endpoint_params, run_stage
from tests.transforms.batch.test_local_server import RUNNER, RUNNER_ENV

pytestmark = [pytest.mark.model, pytest.mark.server]


prompts = test_rollouts_openai.prompts  # the same N_PROMPTS arithmetic prompts (a fixture)


BATCH = {"poll_seconds": 0.5, "max_poll_seconds": 2.0}
FIELDS = ("rollout_id", "completion", "n_tokens", "finish_reason", "seed")


def test_a_served_policy_samples_through_the_batch_as_it_would_online(
    tmp_path,
    params_file,
    prompts,
    vllm_server,
    policy_dir,
):
    model = str(policy_dir)
    with LocalBatchServer(model, tmp_path / "server", RUNNER, vllm_server + "/v1", Faults(), env=RUNNER_ENV) as server:
        online = run_stage(
            tmp_path, params_file, endpoint_params(server.url, model), prompts, "online", tmp_path / "c1"
        )
        assert len([e for e in server.requests() if e.get("online")]) == N_PROMPTS * N

        params = endpoint_params(server.url, model, batch=BATCH)
        batched = run_stage(tmp_path, params_file, params, prompts, "batch", tmp_path / "c2")
        log = server.requests()
        assert len([e for e in log if e.get("online")]) == N_PROMPTS * N  # no new online request
        assert len([e for e in log if e.get("batch")]) == N_PROMPTS * N and len(server.batches) == 1
        record = json.loads((batched / "_manifest.json").read_text())["batch"]
        assert record["batches"] == 1 and record["batch_requests"] == N_PROMPTS * N and record["batch_failures"] == 0

        again = run_stage(tmp_path, params_file, params, prompts, "again", tmp_path / "c2")
        assert server.requests() == log and len(server.batches) == 1  # every sample from the rollout cache

    rows = {r["rollout_id"]: r for r in read_rows(str(online), ROLLOUT_V2)}
    through_batch = {r["rollout_id"]: r for r in read_rows(str(batched), ROLLOUT_V2)}
    assert set(rows) == set(through_batch)
    for rid, row in rows.items():
        assert {k: row[k] for k in FIELDS} == {k: through_batch[rid][k] for k in FIELDS}, rid
        assert through_batch[rid]["logprob_sum"] == pytest.approx(row["logprob_sum"], abs=1e-4)
    assert read_rows(str(again), ROLLOUT_V2) == read_rows(str(batched), ROLLOUT_V2)
