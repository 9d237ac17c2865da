"""`rollouts.backend: recorded`: the rollouts are transcripts someone recorded (prompts source kind `traces`), not
samples. Nothing is generated: each prompt's recorded trajectories become its rollouts, in file order, as ROLLOUT_V3
rows. Their policy says so: name `recorded`, backend `recorded`, and a fingerprint made of the traces files' sha256,
so nothing passes for an on-policy sample, and the rollout ids change with the file. Each row's `environment` names
the file, its digest and the line (`{name: recorded, config: {file, sha256, format, line}}`).

Token counts (`n_tokens`) are counted with the stage's `--model` tokenizer (the transcript records none): they serve
the length filters and budgets, not as the recording model's own counts. `logprob_sum` is None (no logprobs were
recorded) and the seed is 0. A prompt without recorded traces (from another source) fails its batch, naming it.
"""

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any

from rewardmill.schemas.prompt import METADATA_RECORDED as SOURCE_KEY
from rewardmill.schemas.prompt import METADATA_TRACES as METADATA_KEY
from rewardmill.transforms.environments.episodes import Trajectory
from rewardmill.transforms.environments.rollouts import as_sample
from rewardmill.transforms.io.progress import Progress
from rewardmill.transforms.sampling.cache import RolloutCache
from rewardmill.transforms.sampling.handler import PolicyHandler
from rewardmill.transforms.sampling.params import Sample, SamplingParams

BACKEND = "recorded"


class Recording:
    """What `environment_column` records of a trace: where it was recorded."""

    name = "recorded"
    version = "1"

    def __init__(self, config: dict[str, Any]):
        self.config = config


def fingerprint(digests: Iterable[str]) -> str:
    """The recorded policy's fingerprint: the traces files' sha256s, in sorted order."""
    joined = "\n".join(sorted(set(digests)))
    return "recorded:" + hashlib.sha256(joined.encode()).hexdigest()


def recorded_digests(metadata: Iterable[str | None]) -> list[str]:
    """The traces files' sha256s named by the prompts' metadata."""
    out = []
    for value in metadata:
        spec = (json.loads(value) if value else {}).get(SOURCE_KEY)
        if spec:
            out.append(spec["sha256"])
    return out


def recorded_samples(prompt: dict[str, Any], count) -> list[Sample]:
    """A prompt's recorded trajectories as Samples with their ROLLOUT_V3 columns; `count(text)` counts tokens."""
    metadata = json.loads(prompt["metadata"]) if prompt.get("metadata") else {}
    traces, where = metadata.get(METADATA_KEY), metadata.get(SOURCE_KEY)
    if not traces or not where:
        raise ValueError(
            f"prompt {prompt['prompt_id']} has no recorded traces: backend recorded turns the prompts of a `traces` "
            "source into rollouts, and samples nothing"
        )
    samples = []
    for j, trace in enumerate(traces):
        turns = [_accounted(turn, count) for turn in trace["turns"]]
        trajectory = Trajectory(index=j, seed=0, turns=turns, stop_reason="done")
        recording = Recording({**{k: where[k] for k in ("file", "sha256", "format")}, "line": trace["line"]})
        samples.append(as_sample(trajectory, recording, trace.get("tools")))  # as an environment's episode is
    return samples


def _accounted(turn: dict[str, Any], count) -> dict[str, Any]:
    if turn["role"] != "assistant":
        return dict(turn)
    calls = json.dumps([c["function"] for c in turn.get("tool_calls") or []]) if turn.get("tool_calls") else ""
    text = (turn.get("reasoning") or "") + (turn.get("content") or "") + calls
    return {**turn, "n_tokens": count(text), "finish_reason": "stop", "logprob_sum": None}


class RecordedPolicyHandler(PolicyHandler):
    """Element = one batch of prompt rows -> (prompt row, Sample) per recorded trace. Nothing is cached: reading
    is all there is."""

    def __init__(self, model_dir: str, sampling: SamplingParams, total_prompts: int | None, label: str | None = None):
        super().__init__(RolloutCache(None, "", BACKEND, sampling), total_prompts, label)
        self.model_dir = model_dir
        self.sampling = sampling

    def load_model(self):
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(self.model_dir)

    def run_inference(self, batch: Sequence[list[dict[str, Any]]], model, inference_args=None) -> Iterable:
        if self._progress is None:
            self._progress = Progress(f"rollouts[{self.label or BACKEND}]", self.total_prompts, unit="prompt")
        count = lambda text: len(model(text, add_special_tokens=False)["input_ids"]) if text else 0  # noqa: E731
        for prompts in batch:
            samples = [recorded_samples(p, count) for p in prompts]
            self._progress.update(len(prompts), sum(s.n_tokens for per in samples for s in per))
            yield [(prompt, s) for prompt, per in zip(prompts, samples, strict=True) for s in per]
