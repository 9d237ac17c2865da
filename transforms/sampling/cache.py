"""Rollout cache: a prompt's n samples are generated once per (policy, backend, sampling params), then reused.

Key = sha256 of the policy fingerprint, the sampling JSON (backend included), the prompt_id (every sample's seed
derives from it) and the messages: everything a prompt's samples depend on, and nothing about their batch. A
killed rollouts stage resumes from the last finished batch, and `dvc repro -f` writes the same bytes even where
CPU kernels are not bit-stable across processes (the label, judge-call and continuation caches already did this
for their stages). Entries live in JSONL segments (`SegmentStore`) outside DVC outputs; floats round-trip exactly.
"""

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import apache_beam as beam

from rewardmill.transforms.io import storage
from rewardmill.transforms.io.segments import SegmentStore
from rewardmill.transforms.sampling.params import OFF_BY_DEFAULT, Sample, SamplingParams

COUNTERS = "rewardmill_rollouts"
Generate = Callable[[list[dict[str, Any]]], list[list[Sample]]]  # prompt rows -> their samples, in order


def _encode(samples: list[Sample]) -> dict:
    """A prompt's samples as JSON (a single-turn sample without its empty `trajectory`, as entries always were)."""
    return {
        "samples": [{k: v for k, v in asdict(s).items() if not (k == "trajectory" and v is None)} for s in samples]
    }


def _decode(item: dict) -> list[Sample]:
    return [Sample(**s) for s in item["samples"]]


class RolloutCache:
    """Samples by prompt under `root/<backend>-<fingerprint[:16]>`; `cache_dir=None` turns caching off."""

    def __init__(self, cache_dir: str | Path | None, fingerprint: str, backend: str, sampling: SamplingParams):
        self.fingerprint = fingerprint
        self.sampling_json = sampling.to_json(backend)
        self.n = sampling.n
        folder = storage.join(cache_dir, f"{backend}-{fingerprint[:16]}") if cache_dir else None
        # flush_every never triggers: sample() flushes once per batch, so a batch is one segment
        self._store = SegmentStore(folder, "rollouts", 1 << 30, _encode, _decode) if folder else None
        # an episode's turns, one segment per round of a batch (`turns`): a stage killed mid-batch replays the
        # finished rounds from here instead of sampling them again
        turns = storage.join(folder, TURNS_FOLDER) if folder else None
        self._turns = SegmentStore(turns, "turns", 1 << 30, _encode_turn, _decode_turn) if turns else None
        self._turn_sampling = _turn_sampling(sampling, backend)
        self.generated = 0  # prompts this process sampled (cache misses)
        self.reused = 0  # prompts served from the cache

    def key_of(self, prompt: dict[str, Any]) -> str:
        ident = {
            "policy": self.fingerprint,
            "sampling": self.sampling_json,
            "prompt_id": prompt["prompt_id"],
            "messages": [{"role": m["role"], "content": m["content"]} for m in prompt["messages"]],
        }
        return hashlib.sha256(json.dumps(ident, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def has(self, prompt: dict[str, Any]) -> bool:
        """Whether all n samples of `prompt` are cached (what `rewardmill plan` asks)."""
        if self._store is None:
            return False
        samples = self._store.get(self.key_of(prompt))
        return samples is not None and len(samples) == self.n

    def sample(self, prompts: Sequence[dict[str, Any]], generate: Generate) -> list[list[Sample]]:
        """Each prompt's samples, in order: cached ones as stored, the rest from one `generate` call (then stored
        and flushed, so a crash after this batch loses nothing)."""
        if self._store is None:
            fresh = generate(list(prompts))
            self._count(len(prompts), 0)
            return fresh
        keys = [self.key_of(p) for p in prompts]
        found = {k: v for k in keys if (v := self._store.get(k)) is not None and len(v) == self.n}
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            fresh = generate([prompts[i] for i in missing])
            for i, samples in zip(missing, fresh, strict=True):
                found[keys[i]] = samples
                self._store.put(keys[i], samples)
            self._store.flush()
        self._count(len(missing), len(prompts) - len(missing))
        return [found[k] for k in keys]

    def _count(self, generated: int, reused: int) -> None:
        self.generated += generated
        self.reused += reused
        beam.metrics.Metrics.counter(COUNTERS, "prompts_generated").inc(generated)
        beam.metrics.Metrics.counter(COUNTERS, "prompts_reused").inc(reused)

    def turns(self, generate: Callable[[list], list[Sample]]) -> Callable[[list], list[Sample]]:
        """`generate` (TurnRequests -> one Sample each) behind the turn cache: each turn is keyed by what it depends
        on (policy, sampling, its seed, the conversation so far as formatted, the tools), so a replayed episode gets
        its turns back and samples only from where it stopped. Caching off: `generate` itself."""
        if self._turns is None:
            return generate

        def cached(requests: list) -> list[Sample]:
            keys = [self.turn_key(r) for r in requests]
            found = {k: v for k in keys if (v := self._turns.get(k)) is not None}
            missing = [i for i, k in enumerate(keys) if k not in found]
            if missing:
                fresh = generate([requests[i] for i in missing])
                if len(fresh) != len(missing):  # nothing is stored from a backend that miscounts
                    raise RuntimeError(f"the policy returned {len(fresh)} turns for {len(missing)} requests")
                for i, sample in zip(missing, fresh, strict=True):
                    found[keys[i]] = sample
                    self._turns.put(keys[i], sample)
                self._turns.flush()
            beam.metrics.Metrics.counter(COUNTERS, "turns_generated").inc(len(missing))
            beam.metrics.Metrics.counter(COUNTERS, "turns_reused").inc(len(requests) - len(missing))
            return [found[k] for k in keys]

        return cached

    def turn_key(self, request) -> str:
        ident = {
            "policy": self.fingerprint,
            "sampling": self._turn_sampling,
            "seed": request.seed,
            "messages": request.messages,
            "turns_from": request.turns_from,
            "tools": request.tools,
        }
        text = json.dumps(ident, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()


TURNS_FOLDER = "turns"


def _turn_sampling(sampling: SamplingParams, backend: str) -> str:
    """What a turn's draw depends on besides its seed and conversation: the backend and the token-level settings
    (not `n`, the run seed or the episode: a turn's own seed and conversation carry those)."""
    fields = {
        k: v
        for k, v in asdict(sampling).items()
        if k not in ("n", "seed", "episode") and not (k in OFF_BY_DEFAULT and not v)
    }
    return json.dumps({**fields, "backend": backend}, sort_keys=True, separators=(",", ":"))


def _encode_turn(sample: Sample) -> dict:
    return {k: v for k, v in asdict(sample).items() if k != "trajectory"}


def _decode_turn(item: dict) -> Sample:
    return Sample(**item)
