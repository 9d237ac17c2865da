"""Sampling parameters and rollout identity, shared by every backend."""

import hashlib
import json
from dataclasses import asdict, dataclass


@dataclass
class Sample:
    """One completion as every backend reports it."""

    index: int
    seed: int
    completion: str
    n_tokens: int
    finish_reason: str  # stop | length
    logprob_sum: float | None
    trajectory: dict | None = None  # an environment's episode: ROLLOUT_V3's trajectory columns (environments/)
    # with keep_tokens: {prompt_ids, completion_ids, logprobs}, exactly what was fed and drawn (per-token raw logprobs)
    tokens: dict | None = None


def token_fields(tokens: dict[str, list] | None) -> dict[str, list | None]:
    """A turn's TURN token fields (schemas/trajectory.py) from a Sample's `tokens`, all None without them."""
    tokens = tokens or {}
    return {
        "prompt_token_ids": tokens.get("prompt_ids"),
        "token_ids": tokens.get("completion_ids"),
        "token_logprobs": tokens.get("logprobs"),
    }


@dataclass(frozen=True)
class SamplingParams:
    n: int = 4
    temperature: float = 0.8
    top_p: float = 1.0
    top_k: int = 0  # 0 = off
    max_new_tokens: int = 256  # per assistant turn
    seed: int = 0
    episode: str | None = None  # an environment's identity and limits (canonical JSON); None: one turn
    keep_tokens: bool = False  # record each turn's prompt and completion token ids and per-token logprobs
    # one generate call per prompt (its n samples), never shared with other prompts: a sample's floats (logprobs) are
    # then a function of its prompt alone, not of its batch mates (transformers on CPU: the batch's padding and shape
    # move them in the 5th digit). Costs throughput; docs/targets.md says when it matters
    batch_invariant: bool = False

    def __post_init__(self):
        if self.n < 1:
            raise ValueError("n must be >= 1")
        if self.temperature <= 0:
            raise ValueError("temperature must be > 0 (greedy decoding gives n identical samples)")
        if not 0 < self.top_p <= 1:
            raise ValueError("top_p must be in (0, 1]")
        if self.top_k < 0 or self.max_new_tokens < 1:
            raise ValueError("top_k must be >= 0 and max_new_tokens >= 1")

    def to_json(self, backend: str) -> str:
        """Canonical JSON of everything that determines a sample (the backend samples differently; an environment's
        episode is part of it, and absent for one turn, so single-turn sampling keeps its JSON and rollout ids)."""
        fields = {k: v for k, v in asdict(self).items() if not (k in OFF_BY_DEFAULT and not v)}
        return json.dumps({**fields, "backend": backend}, sort_keys=True, separators=(",", ":"))


# Left out of the identity while off, so turning on a newer option leaves every earlier rollout id and cache key as it
# was: an episode (None), token capture (False: with it the samples carry token ids, another cache entry), batch
# invariance (False: with it a sample's floats differ in their last digits, another cache entry).
OFF_BY_DEFAULT = ("episode", "keep_tokens", "batch_invariant")


def _hash_int(*parts: object) -> int:
    digest = hashlib.sha256("\x00".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1  # non-negative int64


def prompt_seed(seed: int, prompt_id: str) -> int:
    return _hash_int("prompt", seed, prompt_id)


def sample_seed(seed: int, prompt_id: str, index: int) -> int:
    """Per-rollout seed: a sample depends on its prompt and index only, never on its batch mates."""
    return _hash_int("sample", seed, prompt_id, index)


def rollout_id(prompt_id: str, fingerprint: str, sampling_json: str, index: int, seed: int) -> str:
    return hashlib.sha256(
        "\x00".join([prompt_id, fingerprint, sampling_json, str(index), str(seed)]).encode()
    ).hexdigest()
