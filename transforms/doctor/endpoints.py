"""Checks of the OpenAI-compatible endpoints params use (served policies, judges, reward servers): the API key's
variable is set, the server answers `GET /models` in time, and it serves the configured model. The key is sent, never
printed."""

import os
from dataclasses import dataclass
from typing import Any

from rewardmill.transforms.config import entry_section, mappings
from rewardmill.transforms.doctor.report import FAIL, OK, WARN, Check
from rewardmill.transforms.judges.openai_client import LOCAL_PLACEHOLDER_KEY, is_local


@dataclass(frozen=True)
class Endpoint:
    where: str  # the params path, e.g. labelers.panel.config.backend
    base_url: str  # what `GET {base_url}/models` lists the served models under
    model: str | None
    api_key_env: str = "OPENAI_API_KEY"


def endpoints_in(settings: dict[str, Any]) -> list[Endpoint]:
    """The endpoints the resolved stage settings (pipelines/settings.py) send requests to, in stage order.

    - rollouts: `openai` when the backend (or a pool member's) is openai;
    - any judge backend block `{kind: openai, base_url, model, api_key_env}` in a label or steps entry;
    - a reward model's `endpoint: {base_url, ...}` (vLLM's server root: its /v1 lists the models).
    """
    found = []
    rollouts = settings.get("rollouts")
    if isinstance(rollouts, dict):
        # a pool's members sample instead of the section itself; a member's unset field (None) takes the section's,
        # and its `openai` block replaces the section's whole, as transforms/sampling/pool.py resolves them
        pool = rollouts["policies"] or {}
        members = {f"rollouts.policies.{name}": pool[name] for name in sorted(pool)} or {"rollouts": {}}
        for where, member in members.items():
            if (member.get("backend") or rollouts["backend"]) == "openai":
                openai = member.get("openai") or rollouts["openai"]
                found.append(_endpoint(f"{where}.openai", openai, openai.get("model")))
    for stage, value in settings.items():
        if "@" in stage and isinstance(value, dict):
            section, key = entry_section(stage)
            found += _endpoints_under(value.get("config") or {}, f"{section}.{key}.config")
    unique = {}
    for endpoint in found:
        unique.setdefault((endpoint.base_url, endpoint.model, endpoint.api_key_env), endpoint)
    return list(unique.values())


def _endpoints_under(config: dict, where: str) -> list[Endpoint]:
    """Judge backend blocks `{kind: openai, base_url, ...}` and reward-model `endpoint:` blocks, at any depth."""
    found = []
    for path, block in mappings(config, where):
        if block.get("kind") == "openai" and block.get("base_url"):
            found.append(_endpoint(path, block, block.get("model")))
        elif block.get("backend") == "endpoint" and (block.get("endpoint") or {}).get("base_url"):
            endpoint = block["endpoint"]
            served = {**endpoint, "base_url": endpoint["base_url"].rstrip("/") + "/v1"}
            found.append(_endpoint(f"{path}.endpoint", served, endpoint.get("model") or block.get("model")))
    return found


def _endpoint(where: str, block: dict, model: str | None) -> Endpoint:
    return Endpoint(where, block["base_url"], model, block.get("api_key_env") or "OPENAI_API_KEY")


def endpoint_check(endpoint: Endpoint, timeout: float = 5.0, env: dict[str, str] | None = None) -> Check:
    """One request, no retries: a doctor says what is wrong now instead of waiting out a backoff."""
    import openai

    env = os.environ if env is None else env
    key = env.get(endpoint.api_key_env)
    name = f"{endpoint.where} ({endpoint.base_url})"
    if not key and not is_local(endpoint.base_url):
        return Check(
            "endpoint",
            FAIL,
            f"{name}: {endpoint.api_key_env} is not set",
            f"export {endpoint.api_key_env}=... (api_key_env names the variable; the key never goes in params)",
        )
    client = openai.OpenAI(
        base_url=endpoint.base_url, api_key=key or LOCAL_PLACEHOLDER_KEY, timeout=timeout, max_retries=0
    )
    try:
        served = sorted(m.id for m in client.models.list())
    except openai.AuthenticationError:
        return Check(
            "endpoint",
            FAIL,
            f"{name}: the key in {endpoint.api_key_env} was refused (401)",
            f"set {endpoint.api_key_env} to a valid key",
        )
    except openai.APIConnectionError as exc:  # includes timeouts
        return Check(
            "endpoint",
            FAIL,
            f"{name}: not reachable ({type(exc).__name__}: {exc})",
            "start the server (vllm serve / transformers serve) or fix base_url",
        )
    except openai.APIStatusError as exc:
        if _healthy(endpoint.base_url, timeout):  # e.g. `transformers serve` answers 500 to /models offline
            return Check(
                "endpoint",
                OK,
                f"{name}: reachable (/health answers; its /models answered "
                f"{exc.status_code}, so the served model was not checked)",
            )
        return Check(
            "endpoint",
            FAIL,
            f"{name}: GET /models answered {exc.status_code}",
            "check base_url (an OpenAI-compatible server lists its models under it)",
        )
    finally:
        client.close()
    if endpoint.model and served and endpoint.model not in served:
        return Check(
            "endpoint",
            WARN,
            f"{name}: reachable, but it does not list {endpoint.model} (it serves {', '.join(served[:5])})",
            "fix the model name in params",
        )
    return Check("endpoint", OK, f"{name}: reachable, serves {endpoint.model or ', '.join(served[:3])}")


def _healthy(base_url: str, timeout: float) -> bool:
    """The server root's /health (vLLM, transformers serve, SGLang) answers 200."""
    import httpx

    root = base_url.rstrip("/").removesuffix("/v1")
    try:
        return httpx.get(f"{root}/health", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False
