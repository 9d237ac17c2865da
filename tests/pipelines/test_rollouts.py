"""The rollouts stage on the real default model: counts, determinism, batch independence."""

import hashlib
import json
import shutil

import pyarrow.parquet as pq
import pytest

from rewardmill.pipelines import rollouts
from rewardmill.pipelines import steps as steps_stage
from rewardmill.schemas import ROLLOUT_V2
from rewardmill.transforms.config import ConfigError
from rewardmill.transforms.io.parquet import read_rows
from rewardmill.transforms.sampling.policy import FINGERPRINT_FILE
from tests.conftest import tiny_params
from tests.pipelines.stage_data import make_prompts


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def inputs(tmp_path, params_file, policy_dir):
    params = tiny_params()
    params["prompts"]["sources"] = params["prompts"]["sources"][:1]  # arithmetic only: counts below assume it
    params["prompts"]["sources"][0].update(count=4)
    params["rollouts"].update(n=2, max_new_tokens=8, batch_size=4)
    prompts = make_prompts(tmp_path, params_file, params)
    return params, prompts, policy_dir


def run_stage(tmp_path, params_file, params, prompts, model, name, cache=None):
    params_file(params)
    out = tmp_path / name
    rollouts.main(
        ["--prompts", str(prompts), "--model", str(model), "--out", str(out)]
        + (["--cache", str(cache)] if cache else [])
    )
    return out


def test_rollouts_are_complete_deterministic_and_batch_independent(tmp_path, params_file, inputs):
    params, prompts, model = inputs
    first = run_stage(tmp_path, params_file, params, prompts, model, "r1")
    table = pq.read_table(first / "part-00000-of-00001.parquet")  # non-empty: safe to read directly
    assert table.schema.equals(ROLLOUT_V2, check_metadata=True)
    rows = table.to_pylist()
    assert len(rows) == 4 * 2 and len({r["rollout_id"] for r in rows}) == 8
    fingerprint = json.loads((model / FINGERPRINT_FILE).read_text())["fingerprint"]
    assert {r["policy"]["fingerprint"] for r in rows} == {fingerprint}
    assert all(r["finish_reason"] in ("stop", "length") and r["n_tokens"] <= 8 for r in rows)
    manifest = json.loads((first / "_manifest.json").read_text())
    assert manifest["rows"] == 8 and manifest["rejects"] == {} and manifest["schema"] == "rollout_v2"

    again = run_stage(tmp_path, params_file, params, prompts, model, "r2")
    assert digest(first / "part-00000-of-00001.parquet") == digest(again / "part-00000-of-00001.parquet")
    assert (first / "_manifest.json").read_text() == (again / "_manifest.json").read_text()

    # Other batch composition: same samples (ids and text), because every row has its own seed.
    params["rollouts"]["batch_size"] = 1
    single = read_rows(str(run_stage(tmp_path, params_file, params, prompts, model, "r3")))
    assert {(r["prompt_id"], r["sample_index"], r["completion"]) for r in single} == {
        (r["prompt_id"], r["sample_index"], r["completion"]) for r in rows
    }


def test_cached_rerun_samples_nothing_and_writes_the_same_bytes(tmp_path, params_file, inputs, caplog):
    params, prompts, model = inputs
    cache = tmp_path / "cache"
    first = run_stage(tmp_path, params_file, params, prompts, model, "r1", cache)
    segments = sorted(cache.rglob("segment-*.jsonl"))
    assert segments  # one segment per batch, written as it finished
    caplog.set_level("INFO", logger="rewardmill")
    again = run_stage(tmp_path, params_file, params, prompts, model, "r2", cache)
    assert sorted(cache.rglob("segment-*.jsonl")) == segments  # nothing sampled, nothing new stored
    assert "0 prompts sampled now, 4 reused from the cache" in caplog.text
    for name in ("part-00000-of-00001.parquet", "_manifest.json"):  # the manifest does not depend on the cache
        assert (first / name).read_bytes() == (again / name).read_bytes()

    # rollouts.reasoning splits what was sampled: no sample is drawn again, the rows are v3 with the same ids. The
    # default model writes no trace, so every completion is its whole text (status none, no reasoning tokens).
    params["rollouts"]["reasoning"] = {"open": "<think>", "close": "</think>"}
    caplog.clear()
    split = run_stage(tmp_path, params_file, params, prompts, model, "r2-reasoning", cache)
    assert "0 prompts sampled now, 4 reused from the cache" in caplog.text
    v2, v3 = read_rows(str(first)), read_rows(str(split))
    assert json.loads((split / "_manifest.json").read_text())["schema"] == "rollout_v3"
    assert [(r["rollout_id"], r["completion"]) for r in v3] == [(r["rollout_id"], r["completion"]) for r in v2]
    assert {(r["reasoning_status"], r["reasoning"], r["reasoning_tokens"]) for r in v3} == {("none", None, 0)}
    assert all([t["content"] for t in r["turns"]] == [r["completion"]] for r in v3)  # one assistant turn
    tokens = json.loads((split / "_manifest.json").read_text())["tokens"]  # reasoning counted apart, read back
    assert tokens == {"generated": sum(r["n_tokens"] for r in v3), "reasoning": 0, "reasoning_uncounted": 0}
    assert "tokens" not in json.loads((first / "_manifest.json").read_text())  # without reasoning: as before
    del params["rollouts"]["reasoning"]

    # Longer completions are other samples: a miss for every prompt, stored beside the first ones.
    params["rollouts"]["max_new_tokens"] = 9
    run_stage(tmp_path, params_file, params, prompts, model, "r3", cache)
    assert "4 prompts sampled now, 0 reused from the cache" in caplog.text


def test_failed_stage_leaves_no_output(tmp_path, params_file, inputs):
    params, prompts, model = inputs
    broken = tmp_path / "broken_model"
    shutil.copytree(model, broken)
    (broken / "model.safetensors").write_bytes(b"not weights")
    params_file(params)
    out = tmp_path / "r"
    with pytest.raises(Exception):  # noqa: B017 - any load failure must abort the stage
        rollouts.main(["--prompts", str(prompts), "--model", str(broken), "--out", str(out)])
    assert not out.exists()
    assert not list(tmp_path.glob("r.tmp-*"))


def test_bad_backend_is_rejected_before_work(tmp_path, params_file):
    params = tiny_params()
    params["rollouts"]["backend"] = "llama"
    params_file(params)
    with pytest.raises(ConfigError, match="backend"):
        rollouts.main(["--out", str(tmp_path / "x")])


def test_vllm_backend_stage_is_complete_stable_and_cached(tmp_path, params_file, inputs, vllm_engine, caplog):
    """backend: vllm on vLLM's CPU build (the session's engine, which the stage's handler shares)."""
    params, prompts, model = inputs
    params["rollouts"]["backend"] = "vllm"
    first = run_stage(tmp_path, params_file, params, prompts, model, "v1")
    rows = read_rows(str(first), ROLLOUT_V2)
    assert len(rows) == 4 * 2 and len({r["rollout_id"] for r in rows}) == 8
    assert {r["policy"]["backend"] for r in rows} == {"vllm"} and all(r["completion"] for r in rows)
    assert all(r["n_tokens"] <= 8 and r["logprob_sum"] < 0 for r in rows)
    assert json.loads(rows[0]["sampling"])["backend"] == "vllm"

    # No cache, the same batches: the same tokens. Two such runs once wrote different bytes in a full test run (not
    # seen alone), so floats are compared to 1e-4; byte-identical reruns are the rollouts cache's job (checked below).
    again = read_rows(str(run_stage(tmp_path, params_file, params, prompts, model, "v2")), ROLLOUT_V2)
    fields = ("rollout_id", "completion", "n_tokens", "finish_reason", "seed", "sampling")
    assert [tuple(r[f] for f in fields) for r in again] == [tuple(r[f] for f in fields) for r in rows]
    assert [r["logprob_sum"] for r in again] == pytest.approx([r["logprob_sum"] for r in rows], rel=1e-4)

    params["rollouts"]["batch_size"] = 1  # other batches: the same tokens (floats may move in the last digits)
    single = read_rows(str(run_stage(tmp_path, params_file, params, prompts, model, "v3")))
    assert {(r["rollout_id"], r["completion"], r["n_tokens"]) for r in single} == {
        (r["rollout_id"], r["completion"], r["n_tokens"]) for r in rows
    }

    cache = tmp_path / "cache"
    cached = run_stage(tmp_path, params_file, params, prompts, model, "v4", cache)
    caplog.set_level("INFO", logger="rewardmill")
    resumed = run_stage(tmp_path, params_file, params, prompts, model, "v5", cache)
    assert "0 prompts sampled now, 4 reused from the cache" in caplog.text
    assert digest(cached / "part-00000-of-00001.parquet") == digest(resumed / "part-00000-of-00001.parquet")


def test_vllm_backend_runs_environment_episodes(tmp_path, params_file, inputs, vllm_engine):
    """rollouts.environment on vLLM (the session's engine): every live episode's next turn in one seeded generate
    call, so the episodes are the same in other batches; the cache gives their bytes back. What an episode holds
    (turns, stop reasons, feedback) is checked on transformers in test_rollouts_environment.py."""
    params, prompts, model = inputs
    params["rollouts"].update(backend="vllm", max_new_tokens=12)
    params["rollouts"]["environment"] = {"name": "feedback", "config": {"max_attempts": 2}, "max_turns": 2}
    cache = tmp_path / "cache"
    first = run_stage(tmp_path, params_file, params, prompts, model, "e1", cache)
    rows = read_rows(str(first))
    assert len(rows) == 4 * 2 and {r["policy"]["backend"] for r in rows} == {"vllm"}
    for r in rows:
        assistant = [t for t in r["turns"] if t["role"] == "assistant"]
        assert 1 <= len(assistant) <= 2 and r["completion"] == (assistant[-1]["content"] or "")
        assert r["n_tokens"] == sum(t["n_tokens"] for t in assistant) and r["stop_reason"] in ("done", "max_turns")
    assert any(len(r["turns"]) > 1 for r in rows), [r["turns"] for r in rows]  # some episode took a second turn
    again = run_stage(tmp_path, params_file, params, prompts, model, "e2", cache)
    assert digest(first / "part-00000-of-00001.parquet") == digest(again / "part-00000-of-00001.parquet")
    params["rollouts"]["batch_size"] = 1  # sampled anew in other batches: the same turns
    single = read_rows(str(run_stage(tmp_path, params_file, params, prompts, model, "e3")))
    turns = lambda rs: {(r["rollout_id"], tuple((t["role"], t["content"]) for t in r["turns"])) for r in rs}  # noqa: E731
    assert turns(single) == turns(rows)


def test_a_candidate_pool_samples_every_prompt_with_every_member(tmp_path, params_file, inputs, vllm_engine):
    """rollouts.policies with a transformers and a vLLM member: each member writes the rows its backend writes alone,
    named by the member; the steps stage takes one member by name and refuses an unknown one."""
    params, prompts, model = inputs
    alone = {}
    for backend in ("transformers", "vllm"):
        params["rollouts"]["backend"] = backend
        alone[backend] = read_rows(str(run_stage(tmp_path, params_file, params, prompts, model, f"alone-{backend}")))
    params["rollouts"]["backend"] = "transformers"
    params["rollouts"]["policies"] = {"local": None, "fast": {"backend": "vllm"}}
    out = run_stage(tmp_path, params_file, params, prompts, model, "pool")
    rows = read_rows(str(out), ROLLOUT_V2)
    assert len(rows) == 4 * 2 * 2 and len({r["rollout_id"] for r in rows}) == 16

    def sample(r):
        return r["rollout_id"], r["prompt_id"], r["completion"], r["n_tokens"], r["seed"]

    for name, backend in (("local", "transformers"), ("fast", "vllm")):
        mine = [r for r in rows if r["policy"]["name"] == name]
        assert {r["policy"]["backend"] for r in mine} == {backend}
        assert sorted(map(sample, mine)) == sorted(map(sample, alone[backend]))
    manifest = json.loads((out / "_manifest.json").read_text())
    assert sorted(manifest["policies"]) == ["fast", "local"] and "policy" not in manifest
    assert manifest["policies"]["fast"]["model"] == str(model)

    params["steps"]["mc"]["policy"] = "slow"
    params_file(params)
    argv = ["mc", "--rollouts", str(out), "--model", str(model), "--out", str(tmp_path / "steps")]
    with pytest.raises(ConfigError, match=r"steps.mc.policy: unknown policy 'slow'; the rollouts' policies are \['fa"):
        steps_stage.main(argv)
    del params["steps"]["mc"]["policy"]
    params_file(params)
    with pytest.raises(ConfigError, match=r"the rollouts come from policies \['fast', 'local'\]; name the one"):
        steps_stage.main(argv)
    assert not (tmp_path / "steps").exists()


def test_a_model_vllm_cannot_load_fails_the_stage_with_the_folder_named(tmp_path, params_file, inputs):
    params, prompts, model = inputs
    broken = tmp_path / "not_a_vllm_model"
    shutil.copytree(model, broken)
    config = json.loads((broken / "config.json").read_text())
    (broken / "config.json").write_text(json.dumps({**config, "architectures": ["NoSuchForCausalLM"]}))
    params["rollouts"]["backend"] = "vllm"
    params_file(params)
    out = tmp_path / "r"
    with pytest.raises(Exception, match="vLLM cannot load the model in .*not_a_vllm_model"):
        rollouts.main(["--prompts", str(prompts), "--model", str(broken), "--out", str(out)])
    assert not out.exists() and not list(tmp_path.glob("r.tmp-*"))
