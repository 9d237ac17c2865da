"""The label stage's batch pass: before its pipeline runs, send the calls of every judge whose backend has a
`batch:` block as provider batches, so the pipeline finds their answers in the call cache.

A round runs the labeler over the stage's rows the way `rewardmill plan` does (transforms/planning/label_plan.py):
cached calls are answered, the others are collected instead of sent. The collected calls of each batch backend go
out as batches (client.py), and every answer lands in the call cache. A call that needs an earlier answer (an
appeal after the rule verifier, a second turn) shows up in the next round, up to the backend's `max_rounds`; the
pipeline sends whatever is left online. The record says how many calls went each way.
"""

import logging
from collections import Counter

from rewardmill.transforms.batch.client import BatchJudgeClient
from rewardmill.transforms.batch.provider import provider_class
from rewardmill.transforms.judges.call_cache import CachedJudgeClient
from rewardmill.transforms.judges.client import BackendConfig, JudgeRequest
from rewardmill.transforms.labelers.cache import config_parts
from rewardmill.transforms.planning.judge_calls import CallRecorder
from rewardmill.transforms.planning.label_plan import plan_label_stage
from rewardmill.transforms.planning.spend import Prices, StagePlan
from rewardmill.transforms.planning.stages import Rollouts

log = logging.getLogger("rewardmill")


class CollectingRecorder(CallRecorder):
    """Keeps each request a batch backend would answer, in first-asked order, by the call cache key the planning
    client computed (what the run looks up), instead of pricing it. Requests to other backends, and unseeded samples
    (no key), are left to the pipeline."""

    def __init__(self, stage: str):
        super().__init__(StagePlan(stage, "rollouts"), Prices(), tokens=None)
        self.calls: dict[BackendConfig, dict[str, JudgeRequest]] = {}

    def charge(self, config: BackendConfig, request: JudgeRequest, key: str | None = None) -> None:
        if config.batch is not None and key is not None:
            self.calls.setdefault(config, {})[key] = request


def batch_backends(config) -> list[BackendConfig]:
    """Every backend with a `batch:` block anywhere in a labeler's config (a panel's panelists, an appeal's judge, an
    inner labeler's raw config), found as the label cache finds the models a config names (config_parts)."""
    found: list[BackendConfig] = []
    for part in config_parts(config):
        if isinstance(part, BackendConfig) and part.batch is not None and part not in found:
            found.append(part)
    return found


def batch_pass(name: str, params, config, paths, rows: list[dict]) -> dict | None:
    """Send the stage's batchable calls as batches (see the module docstring); None when no backend batches. `paths`:
    the stage's planning paths (its label cache and rubric sets); `rows`: the rollouts it labels (the ones its
    budget admitted)."""
    backends = batch_backends(config)
    if not backends:
        return None
    if not paths.label_cache:
        raise ValueError(f"labelers.{name}: backend.batch needs the call cache: run the stage with --cache")
    for backend in backends:  # an unknown provider fails before any work
        provider_class(backend.batch.provider)
    rounds = max(b.batch.max_rounds for b in backends)
    totals: Counter = Counter()
    done = 0
    for done in range(1, rounds + 1):
        recorder = CollectingRecorder(f"label@{name}")
        plan_label_stage(name, paths, Prices(), params, rollouts=Rollouts(rows), recorder=recorder)
        if not recorder.calls:
            done -= 1
            break
        for backend, calls in recorder.calls.items():
            client = CachedJudgeClient(BatchJudgeClient(backend), backend.cache_dir)
            try:
                client.complete(list(calls.values()))
            finally:
                client.close()  # flush every answer to the call cache, even when a batch is still pending
            totals.update(client.inner.usage())
            log.info("label@%s: batch round %d: %d calls to %s", name, done, len(calls), backend.model)
    record = {"rounds": done, **{k: totals.get(k, 0) for k in sorted(totals)}}
    log.info("label@%s: batch pass done: %s", name, record)
    return record
