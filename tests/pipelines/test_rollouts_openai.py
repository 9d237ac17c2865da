"""The rollouts stage with `backend: openai` against real servers on 127.0.0.1: `transformers serve` (the session's
judge server) and `vllm serve` from vLLM's CPU build, both on the default model. The fault proxy (the one allowed
fake: a real server cannot be made to fail on cue) plays an outage in the middle of the stage."""

import json
from pathlib import Path

import pytest

from rewardmill.pipelines import rollouts
from rewardmill.schemas import ROLLOUT_V2
from rewardmill.transforms.io.parquet import read_rows
from rewardmill.transforms.sampling.openai_backend import EndpointError, EndpointPolicy, sample_requests
from rewardmill.transforms.sampling.params import SamplingParams, sample_seed
from tests.conftest import tiny_params
from tests.pipelines.stage_data import make_prompts
from tests.transforms.judges.fault_proxy import FaultProxy, free_port, schedule

N_PROMPTS, N = 4, 2


@pytest.fixture
def prompts(tmp_path, params_file):
    params = tiny_params()
    params["prompts"]["sources"] = params["prompts"]["sources"][:1]
    params["prompts"]["sources"][0].update(count=N_PROMPTS)
    return make_prompts(tmp_path, params_file, params)


def endpoint_params(base_url: str, model: str, **openai) -> dict:
    """backend openai; `fingerprint` names the weights, so the rollouts (and their cache) do not depend on the
    proxy's port."""
    params = tiny_params()
    params["rollouts"].update(backend="openai", n=N, max_new_tokens=8, batch_size=1)
    params["rollouts"]["openai"] = {
        "base_url": base_url,
        "model": model,
        "max_retries": 1,
        "fingerprint": "smollm2-test",
        **openai,
    }
    return params


def run_stage(tmp_path, params_file, params, prompts, name, cache=None) -> Path:
    params_file(params)
    out = tmp_path / name
    argv = ["--prompts", str(prompts), "--out", str(out)] + (["--cache", str(cache)] if cache else [])
    rollouts.main(argv)
    return out


def test_one_seeded_request_per_sample():
    sp = SamplingParams(n=3, temperature=0.7, top_p=0.9, max_new_tokens=16, seed=5)
    requests = sample_requests([{"role": "user", "content": "hi", "extra": 1}], "pid", sp)
    assert [r.sampling.seed for r in requests] == [sample_seed(5, "pid", j) for j in range(3)]
    assert {(r.sampling.n, r.sampling.max_tokens, r.sampling.top_logprobs) for r in requests} == {(1, 16, 1)}
    assert requests[0].messages == ({"role": "user", "content": "hi"},)


def test_served_policy_survives_an_outage_and_resumes_from_the_cache(
    tmp_path, params_file, prompts, judge_server, policy_dir, caplog
):
    contents = sorted(r["messages"][-1]["content"] for r in read_rows(str(prompts)))
    down = {contents[0]: [500] * 20}  # every attempt for one prompt fails: the server is down for it
    cache = tmp_path / "cache"
    model = str(policy_dir)  # transformers serve names a model by its path
    with FaultProxy(judge_server, schedule(down)) as proxy:
        params = endpoint_params(proxy.url + "/v1", model)
        with pytest.raises(SystemExit, match=r"generation failed for 1 of 4 prompts.*injected 500.*rerun to resume"):
            run_stage(tmp_path, params_file, params, prompts, "r1", cache)
    assert not (tmp_path / "r1").exists() and not list(tmp_path.glob("r1.tmp-*"))  # nothing half-written

    caplog.set_level("INFO", logger="rewardmill")
    with FaultProxy(judge_server) as proxy:  # the server is back (on another port: the url is not in the key)
        params = endpoint_params(proxy.url + "/v1", model)
        first = run_stage(tmp_path, params_file, params, prompts, "r2", cache)
    assert "1 prompts sampled now, 3 reused from the cache" in caplog.text
    rows = read_rows(str(first), ROLLOUT_V2)
    assert len(rows) == N_PROMPTS * N and all(r["completion"] and 0 < r["n_tokens"] <= 8 for r in rows)
    expected = EndpointPolicy(base_url="http://elsewhere/v1", model=model, fingerprint="smollm2-test").policy_info()
    assert {json.dumps(r["policy"], sort_keys=True) for r in rows} == {
        json.dumps({"backend": "openai", "fingerprint": expected.fingerprint, "name": model}, sort_keys=True)
    }
    with FaultProxy(judge_server) as proxy:  # a rerun: every prompt from the cache, the same bytes
        again = run_stage(tmp_path, params_file, endpoint_params(proxy.url + "/v1", model), prompts, "r3", cache)
    assert (first / "part-00000-of-00001.parquet").read_bytes() == (again / "part-00000-of-00001.parquet").read_bytes()


def test_a_pool_of_a_local_and_a_served_policy_accounts_for_every_prompt(
    tmp_path, params_file, prompts, judge_server, policy_dir
):
    """rollouts.policies: the local model on transformers beside an endpoint that is down for one prompt. With
    max_generation_errors: 1 the stage writes both members' rows and the served member's failure as a reject
    `<prompt_id>@served`: every (prompt, member) is a row set or a reject."""
    contents = sorted(r["messages"][-1]["content"] for r in read_rows(str(prompts)))
    lost = next(r["prompt_id"] for r in read_rows(str(prompts)) if r["messages"][-1]["content"] == contents[0])
    with FaultProxy(judge_server, schedule({contents[0]: [500] * 20})) as proxy:
        params = endpoint_params(proxy.url + "/v1", str(policy_dir))
        served = params["rollouts"].pop("openai")
        params["rollouts"].update(backend="transformers", max_generation_errors=1)
        params["rollouts"]["policies"] = {"local": {}, "served": {"backend": "openai", "openai": served}}
        params_file(params)
        out = tmp_path / "pool"
        rollouts.main(["--prompts", str(prompts), "--model", str(policy_dir), "--out", str(out)])
    rows = read_rows(str(out), ROLLOUT_V2)
    by_member = {name: [r for r in rows if r["policy"]["name"] == name] for name in ("local", "served")}
    assert len(by_member["local"]) == N_PROMPTS * N and len(by_member["served"]) == (N_PROMPTS - 1) * N
    assert {r["policy"]["backend"] for r in by_member["served"]} == {"openai"}
    assert lost not in {r["prompt_id"] for r in by_member["served"]}
    rejects = read_rows(str(out / "_rejects"))
    assert [(r["row_id"], r["reason"]) for r in rejects] == [(f"{lost}@served", "generation_error")]
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["rows"] == len(rows) and manifest["rejects"] == {"generation_error": 1}
    assert manifest["policies"]["served"]["model"] is None


def test_an_unreachable_endpoint_fails_before_any_work(tmp_path, params_file, prompts):
    params = endpoint_params(f"http://127.0.0.1:{free_port()}/v1", "m")
    with pytest.raises(EndpointError, match="unreachable.*start the server"):
        run_stage(tmp_path, params_file, params, prompts, "r")
    assert not (tmp_path / "r").exists()


def test_vllm_serve_as_the_policy(tmp_path, params_file, prompts, vllm_server, policy_dir):
    params = endpoint_params(vllm_server + "/v1", str(policy_dir), max_concurrency=4)
    params["rollouts"]["batch_size"] = 4
    out = run_stage(tmp_path, params_file, params, prompts, "r")
    rows = read_rows(str(out), ROLLOUT_V2)
    assert len(rows) == N_PROMPTS * N and {r["policy"]["backend"] for r in rows} == {"openai"}
    assert all(0 < r["n_tokens"] <= 8 and r["finish_reason"] in ("stop", "length") for r in rows)
    assert all(r["logprob_sum"] is not None and r["logprob_sum"] < 0 for r in rows)  # vLLM sends token logprobs
    again = run_stage(tmp_path, params_file, params, prompts, "r2")  # vLLM honours per-request seeds: same samples
    assert [r["completion"] for r in read_rows(str(again))] == [r["completion"] for r in rows]


def test_feedback_episodes_on_a_served_policy(tmp_path, params_file, prompts, judge_server, policy_dir):
    """`rollouts.environment` on backend openai: every turn one seeded request to the real server, the feedback in
    the conversation, the same bytes again from the turn cache."""
    params = endpoint_params(judge_server + "/v1", str(policy_dir), max_concurrency=2)
    params["rollouts"]["environment"] = {"name": "feedback", "config": {"max_attempts": 2}, "max_turns": 2}
    cache = tmp_path / "cache"
    out = run_stage(tmp_path, params_file, params, prompts, "r", cache)
    rows = read_rows(str(out))
    assert len(rows) == N_PROMPTS * N and {r["policy"]["backend"] for r in rows} == {"openai"}
    for r in rows:
        assistant = [t for t in r["turns"] if t["role"] == "assistant"]
        assert 1 <= len(assistant) <= 2 and r["completion"] == (assistant[-1]["content"] or "")
        assert r["stop_reason"] == "done" and r["env_reward"] in (0.0, 1.0)
        feedback = [t for t in r["turns"] if t["role"] == "user"]
        assert len(feedback) == len(assistant) - 1  # each wrong attempt but the last got the feedback
    again = run_stage(tmp_path, params_file, params, prompts, "r2", cache)  # every turn from the cache
    shard = "part-00000-of-00001.parquet"
    assert (out / shard).read_bytes() == (again / shard).read_bytes()
