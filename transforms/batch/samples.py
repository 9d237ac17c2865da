"""The rollouts stage's batch pass: a served policy whose endpoint has a `batch:` block gets the samples the rollout
cache lacks as provider batches first, so the stage's pipeline finds them in the call cache beside the rollout cache.

A served policy's requests are known before anything is sent (every uncached prompt, n seeded requests each: the
same `sample_requests` the pipeline makes), so one round is all it takes. Each answer is cached under the key the
pipeline looks up; a batch's id goes into the ledger before any wait (client.py), so a stage killed while its batch
runs polls the same batch on the rerun instead of paying twice. Whatever the batch could not answer goes online in
the pipeline. Episodes (rollouts.environment) need a round per turn and are refused.
"""

import logging
from collections import Counter

from rewardmill.transforms.batch.client import BatchJudgeClient
from rewardmill.transforms.batch.provider import provider_class
from rewardmill.transforms.io import storage
from rewardmill.transforms.judges.call_cache import CachedJudgeClient
from rewardmill.transforms.sampling.cache import RolloutCache
from rewardmill.transforms.sampling.openai_backend import sample_requests
from rewardmill.transforms.sampling.params import SamplingParams

log = logging.getLogger("rewardmill")

CALLS_FOLDER = "calls"  # under the rollouts stage's --cache: the served policies' call cache


def calls_dir(cache_dir: str | None) -> str | None:
    """Where a served policy's answers are cached (None without a rollout cache)."""
    return storage.join(cache_dir, CALLS_FOLDER) if cache_dir else None


def batched_members(members: list) -> list:
    """The pool members served by an endpoint with a `batch:` block."""
    return [m for m in members if m.backend == "openai" and m.openai.batch is not None]


def sample_batches(
    members: list, sampling: SamplingParams, prompts: list[dict], cache_dir: str | None, episodes: bool
) -> dict | None:
    """Send each batched member's uncached samples of `prompts` as batches (see the module docstring); the record
    for the manifest, or None when no member batches."""
    batched = batched_members(members)
    if not batched:
        return None
    if episodes:
        raise ValueError(
            "rollouts.openai.batch: multi-turn episodes need a batch per turn, which is not built; sample them online "
            "(remove batch) or without an environment"
        )
    if cache_dir is None:
        raise ValueError("rollouts.openai.batch needs the rollout cache: run the stage with --cache")
    totals: Counter = Counter()
    for m in batched:
        provider_class(m.openai.batch.provider)  # an unknown provider fails before any work
        cache = RolloutCache(cache_dir, m.info.fingerprint, m.backend, sampling)
        todo = [p for p in sorted(prompts, key=lambda p: p["prompt_id"]) if not cache.has(p)]
        requests = [r for p in todo for r in sample_requests(p["messages"], p["prompt_id"], sampling)]
        if not requests:
            continue
        config = m.openai.client_config(calls_dir(cache_dir))
        client = CachedJudgeClient(BatchJudgeClient(config), config.cache_dir)
        try:
            client.complete(requests)
        finally:
            client.close()  # every answer flushed to the call cache, even when a batch is still pending
        totals.update(client.inner.usage())
        log.info("rollouts: batch pass: %d samples of %d prompts to %s", len(requests), len(todo), m.openai.model)
    return {key: totals.get(key, 0) for key in sorted(totals)}
