"""Candidate pools: several policies sample the same prompts, as UltraFeedback samples several models.

params `rollouts.policies` maps a name to a `PolicySpec`. A field left out inherits the `rollouts` section's own
(`backend`, `device`, `vllm`, `openai`), so `dvc exp run -S rollouts.backend=vllm` moves every local member at once.
`model` is the member's HF folder (the stage's `--model`, models/policy, when left out). Every rollout records its
member's name in `policy.name`; pairs stay within one policy unless `assemble.pairs.cross_policy` is on.
An empty `policies` is the single policy of the `rollouts` section, named as the model stage named it.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

from rewardmill.transforms.sampling.endpoint import EndpointPolicy
from rewardmill.transforms.sampling.policy import FINGERPRINT_FILE, PolicyInfo, fingerprint, read_policy_info

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # no '@' or '/': names appear in reject row ids


@dataclass(frozen=True)
class PolicySpec:
    """params `rollouts.policies.<name>`: one member of a candidate pool; None = the `rollouts` section's value."""

    backend: str | None = None  # transformers | vllm | openai
    model: str | None = None  # transformers / vllm: a local HF folder (None = the stage's --model, models/policy)
    device: str | None = None  # transformers: cpu | cuda
    vllm: dict | None = None  # extra vllm.LLM kwargs
    openai: EndpointPolicy | None = None  # backend openai: the served policy


@dataclass(frozen=True)
class Member:
    """One resolved policy of the pool: what the stage samples, and what its rollouts record."""

    name: str
    backend: str
    model_dir: str | None  # None for an endpoint
    device: str
    vllm: dict = field(hash=False)
    openai: EndpointPolicy
    info: PolicyInfo


def resolve_pool(
    policies: dict[str, PolicySpec], defaults: PolicySpec, default_model: str, backends: tuple[str, ...]
) -> list[Member]:
    """params -> the members in name order (the single default member when `policies` is empty). Reads each local
    folder's fingerprint; fails naming the member for a bad name, a missing folder, or two members that would write
    the same rollout ids (same weights, same backend)."""
    if not policies:
        return [_member(None, defaults, defaults, default_model, backends)]
    members = []
    for name in sorted(policies):
        if not isinstance(name, str) or not NAME.match(name):
            raise ValueError(f"rollouts.policies: name {name!r} must match {NAME.pattern} (letters, digits, _ . -)")
        members.append(_member(name, policies[name], defaults, default_model, backends))
    seen: dict[tuple[str, str], str] = {}
    for m in members:
        key = (m.info.fingerprint, m.backend)
        if key in seen:
            raise ValueError(
                f"rollouts.policies: '{seen[key]}' and '{m.name}' are the same policy (fingerprint "
                f"{m.info.fingerprint[:12]}, backend {m.backend}) and would write the same rollouts; keep one"
            )
        seen[key] = m.name
    return members


def member_named(members: list[Member], name: str) -> Member:
    for m in members:
        if m.name == name:
            return m
    raise KeyError(unknown_policy(name, [m.name for m in members]))


def unknown_policy(name: str, known: list[str]) -> str:
    return f"unknown policy {name!r}; the rollouts' policies are {sorted(known)} (params rollouts.policies)"


def _member(
    name: str | None, spec: PolicySpec, defaults: PolicySpec, default_model: str, backends: tuple[str, ...]
) -> Member:
    where = f"rollouts.policies.{name}" if name else "rollouts"
    backend = spec.backend or defaults.backend
    if backend not in backends:
        raise ValueError(f"{where}.backend must be one of {list(backends)}, got {backend!r}")
    openai = spec.openai or defaults.openai
    if backend == "openai":
        served = openai.policy_info()
        info = PolicyInfo(name=name or served.name, source=served.source, fingerprint=served.fingerprint)
        model_dir = None
    else:
        model_dir = spec.model or default_model
        info = local_policy_info(model_dir, name, where)
    return Member(
        name=info.name,
        backend=backend,
        model_dir=model_dir,
        device=spec.device or defaults.device,
        vllm=dict(defaults.vllm if spec.vllm is None else spec.vllm),
        openai=openai,
        info=info,
    )


def local_policy_info(model_dir: str, name: str | None, where: str) -> PolicyInfo:
    """A folder the model stage made (its recorded name and fingerprint), or any HF folder with safetensors weights
    (fingerprinted here). `name`, when given, is the pool's name for it."""
    folder = Path(model_dir)
    if (folder / FINGERPRINT_FILE).exists():
        info = read_policy_info(folder)
        return PolicyInfo(name=name or info.name, source=info.source, fingerprint=info.fingerprint)
    if name is None:
        return read_policy_info(folder)  # the stage's own --model: its message says to run the model stage
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{where}.model: {model_dir} is not a folder; give a local HF folder (hub ids are not fetched at run "
            "time: download it first, or materialize it with the model stage)"
        )
    return PolicyInfo(name=name, source=str(folder), fingerprint=fingerprint(folder))
