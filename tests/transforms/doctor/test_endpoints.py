from rewardmill.transforms.doctor.endpoints import Endpoint, endpoint_check, endpoints_in
from rewardmill.transforms.doctor.report import FAIL

OPENAI = {"base_url": "http://127.0.0.1:8000/v1", "model": "policy", "api_key_env": "OPENAI_API_KEY"}


def member(backend=None, openai=None) -> dict:
    """A pool member as pipelines/settings.py gives it: every PolicySpec field, None where params leave it out."""
    return {"backend": backend, "model": None, "device": None, "vllm": None, "openai": openai}


def test_only_the_endpoints_params_send_to_are_found():
    big = {**OPENAI, "model": "big"}
    settings = {
        "rollouts": {
            "backend": "openai",  # inherited by `served`; `local` overrides it, and the section itself is no member
            "openai": OPENAI,
            "policies": {"local": member("transformers"), "served": member(), "big": member("openai", big)},
        },
        "label@panel": {
            "config": {
                "backend": {"kind": "openai", "base_url": "https://api.x/v1", "model": "j", "api_key_env": "X_KEY"}
            }
        },
        "label@local": {"config": {"backend": {"kind": "transformers", "base_url": None, "model": "models/policy"}}},
        "label@rm": {"config": {"backend": "endpoint", "model": "rm", "endpoint": {"base_url": "http://h:8001/"}}},
        "steps@mc": {
            "config": {
                "judge": {
                    "backend": {"kind": "openai", "base_url": "https://api.x/v1", "model": "j", "api_key_env": "X_KEY"}
                }
            }
        },  # same as panel's: once
        "assemble": {"gates": []},
        "evaluate": ValueError("a stage that does not load"),
    }
    found = endpoints_in(settings)
    assert found == [
        Endpoint("rollouts.policies.big.openai", "http://127.0.0.1:8000/v1", "big"),  # its own block, in name order
        Endpoint("rollouts.policies.served.openai", "http://127.0.0.1:8000/v1", "policy"),  # the section's block
        Endpoint("labelers.panel.config.backend", "https://api.x/v1", "j", "X_KEY"),
        Endpoint("labelers.rm.config.endpoint", "http://h:8001/v1", "rm"),  # vLLM's root: models under /v1
    ]
    single = {"backend": "openai", "openai": OPENAI, "policies": {}}  # no pool: the section is the one policy
    assert endpoints_in({"rollouts": single}) == [Endpoint("rollouts.openai", "http://127.0.0.1:8000/v1", "policy")]


def test_a_missing_key_fails_before_any_request():
    check = endpoint_check(Endpoint("labelers.panel.config.backend", "https://judge.example.com/v1", "j", "K"), env={})
    assert check.status == FAIL and "K is not set" in check.detail and "export K=" in check.fix
