"""Candidate pools: resolving `rollouts.policies` into members (names, inherited fields, fingerprints, errors)."""

import json
import shutil

import pytest

from rewardmill.pipelines.rollouts import BACKENDS, RolloutsConfig
from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.sampling.openai_backend import EndpointPolicy
from rewardmill.transforms.sampling.policy import FINGERPRINT_FILE
from rewardmill.transforms.sampling.pool import PolicySpec, member_named, resolve_pool

DEFAULTS = PolicySpec("transformers", None, "cpu", {"max_model_len": 512}, EndpointPolicy())


def test_no_pool_is_the_sections_one_policy_named_by_the_model_stage(policy_dir):
    (member,) = resolve_pool({}, DEFAULTS, str(policy_dir), BACKENDS)
    recorded = json.loads((policy_dir / FINGERPRINT_FILE).read_text())
    assert (member.name, member.info.fingerprint) == (recorded["name"], recorded["fingerprint"])
    assert (member.backend, member.model_dir, member.vllm) == ("transformers", str(policy_dir), {"max_model_len": 512})


def test_members_inherit_left_out_fields_and_take_the_pool_name(policy_dir):
    served = EndpointPolicy(base_url="http://127.0.0.1:9/v1", model="served-policy")
    pool = {
        "local": PolicySpec(),
        "fast": PolicySpec(backend="vllm", vllm={}),
        "remote": PolicySpec(backend="openai", openai=served),
    }
    members = resolve_pool(pool, DEFAULTS, str(policy_dir), BACKENDS)
    assert [m.name for m in members] == ["fast", "local", "remote"]  # name order: the same members, the same plan
    fast, local, remote = members
    assert (local.backend, local.model_dir, local.vllm) == ("transformers", str(policy_dir), {"max_model_len": 512})
    assert (fast.backend, fast.vllm) == ("vllm", {})  # an explicit {} is not "left out"
    assert fast.info.fingerprint == local.info.fingerprint  # same weights, another engine: allowed
    assert remote.model_dir is None and remote.info.fingerprint == served.policy_info().fingerprint
    assert {m.info.name for m in members} == {"fast", "local", "remote"}
    assert member_named(members, "remote") is remote
    with pytest.raises(KeyError, match=r"unknown policy 'other'; the rollouts' policies are \['fast', 'local'"):
        member_named(members, "other")


def test_a_plain_hf_folder_is_fingerprinted_and_a_twin_is_refused(policy_dir, tmp_path):
    plain = tmp_path / "plain"
    shutil.copytree(policy_dir, plain)
    (plain / FINGERPRINT_FILE).unlink()  # any HF folder, not one the model stage made
    (member,) = resolve_pool({"plain": PolicySpec(model=str(plain))}, DEFAULTS, str(policy_dir), BACKENDS)
    recorded = json.loads((policy_dir / FINGERPRINT_FILE).read_text())
    assert member.info.fingerprint == recorded["fingerprint"] and member.info.source == str(plain)
    # the same weights on the same backend under two names would write the same rollout ids
    twins = {"a": PolicySpec(), "b": PolicySpec(model=str(plain))}
    with pytest.raises(ValueError, match="'a' and 'b' are the same policy"):
        resolve_pool(twins, DEFAULTS, str(policy_dir), BACKENDS)


@pytest.mark.parametrize(
    "pool, message",
    [
        ({"a@b": PolicySpec()}, "name 'a@b' must match"),  # '@' separates a pair group's prompt and policy
        ({"x": PolicySpec(backend="tgi")}, r"rollouts.policies.x.backend must be one of"),
        ({"x": PolicySpec(model="/nonexistent/folder")}, r"rollouts.policies.x.model: /nonexistent/folder is not a"),
    ],
)
def test_bad_members_fail_naming_the_member(policy_dir, pool, message):
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        resolve_pool(pool, DEFAULTS, str(policy_dir), BACKENDS)


def test_params_coerce_every_member_and_reject_unknown_keys():
    cfg = from_dict(
        RolloutsConfig,
        {"policies": {"a": None, "b": {"backend": "openai", "openai": {"model": "m"}}}},
        "rollouts",
    )
    assert cfg.policies["a"] == PolicySpec() and cfg.policies["b"].openai == EndpointPolicy(model="m")
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['modle'\] in 'rollouts.policies.a'"):
        from_dict(RolloutsConfig, {"policies": {"a": {"modle": "x"}}}, "rollouts")
    with pytest.raises(ConfigError, match="top_k: the OpenAI chat API has no top_k"):
        from_dict(RolloutsConfig, {"top_k": 5, "policies": {"b": {"backend": "openai"}}}, "rollouts")


@pytest.mark.parametrize(
    "section",
    [
        {"backend": "vllm", "batch_invariant": True},
        {"backend": "openai", "batch_invariant": True},
        {"batch_invariant": True, "policies": {"big": {"backend": "vllm"}}},  # one member batches as vLLM does
    ],
)
def test_batch_invariance_is_refused_where_an_engine_or_server_batches(section):
    with pytest.raises(ConfigError, match="batch_invariant: built for the transformers backend"):
        from_dict(RolloutsConfig, section, "rollouts")


def test_batch_invariance_is_refused_for_a_judge_or_steps_backend_that_is_not_transformers():
    from rewardmill.transforms.judges.client import BackendConfig
    from rewardmill.transforms.steps.params import StepsParams, resolve

    with pytest.raises(ValueError, match="batch_invariant is built for kind transformers"):
        BackendConfig(kind="openai", model="m", base_url="http://127.0.0.1:1/v1", batch_invariant=True)
    config = {"method": "mc", "continuation": {"batch_invariant": True}}
    with pytest.raises(ConfigError, match="built for backend transformers, not vllm"):
        resolve("mc", StepsParams(config=config, backend="vllm"))
    assert resolve("mc", StepsParams(config=config)).continuation.batch_invariant
