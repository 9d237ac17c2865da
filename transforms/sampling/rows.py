"""Beam glue around the sampling backends: deterministic batching in, ROLLOUT_V2 rows out."""

from typing import Any

import apache_beam as beam

from rewardmill.transforms.io.parquet import stable_shard
from rewardmill.transforms.sampling.params import SamplingParams, rollout_id


class _Chunk(beam.DoFn):
    def __init__(self, batch_size: int):
        self.batch_size = batch_size

    def process(self, element):
        _, prompts = element
        # Similar lengths share a batch (less padding); prompt_id breaks ties so the order is total.
        ordered = sorted(prompts, key=lambda p: (sum(len(m["content"]) for m in p["messages"]), p["prompt_id"]))
        for start in range(0, len(ordered), self.batch_size):
            yield ordered[start : start + self.batch_size]


class FormBatches(beam.PTransform):
    """prompt rows -> lists of at most `batch_size` prompts; the same prompts always give the same batches."""

    def __init__(self, batch_size: int, groups: int):
        super().__init__()
        self.batch_size = batch_size
        self.groups = groups

    def expand(self, prompts):
        groups = self.groups
        return (
            prompts
            | "Key by group" >> beam.Map(lambda p: (stable_shard(p["prompt_id"], groups), p))
            | "Group" >> beam.GroupByKey()
            | "Chunk" >> beam.ParDo(_Chunk(self.batch_size))
        )


class ToRolloutRows(beam.DoFn):
    """list of (prompt row, Sample) -> ROLLOUT_V2 rows."""

    def __init__(self, policy, backend: str, sampling: SamplingParams):
        self.policy = policy
        self.backend = backend
        self.sampling_json = sampling.to_json(backend)

    def process(self, pairs):
        for prompt, sample in pairs:
            beam.metrics.Metrics.counter("rollouts", f"finish_{sample.finish_reason}").inc()
            yield to_rollout_row(prompt, sample, self.policy, self.backend, self.sampling_json)


def to_rollout_row(prompt: dict[str, Any], sample, policy, backend: str, sampling_json: str) -> dict[str, Any]:
    """A ROLLOUT_V2 row, or with an environment's episode (sample.trajectory) a ROLLOUT_V3 row."""
    row = {
        "rollout_id": rollout_id(prompt["prompt_id"], policy.fingerprint, sampling_json, sample.index, sample.seed),
        "prompt_id": prompt["prompt_id"],
        "task": prompt["task"],
        "messages": prompt["messages"],
        "reference": prompt["reference"],
        "tests": prompt["tests"],
        "constraints": prompt["constraints"],
        "rubric": prompt.get("rubric"),
        "split": prompt["split"],
        "sample_index": sample.index,
        "completion": sample.completion,
        "n_tokens": sample.n_tokens,
        "finish_reason": sample.finish_reason,
        "logprob_sum": sample.logprob_sum,
        "policy": {"name": policy.name, "fingerprint": policy.fingerprint, "backend": backend},
        "sampling": sampling_json,
        "seed": sample.seed,
    }
    return row if sample.trajectory is None else {**row, **sample.trajectory}
