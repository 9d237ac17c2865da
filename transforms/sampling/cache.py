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
from rewardmill.transforms.sampling.params import Sample, SamplingParams

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
