"""What every policy backend's RunInference handler shares: pre-formed batches in, (prompt row, Sample) pairs out,
each batch through the rollouts cache, progress with tokens. A backend implements `load_model` and `_generate`."""

from collections.abc import Iterable, Sequence
from typing import Any

from apache_beam.ml.inference.base import ModelHandler

from rewardmill.transforms.io import timings
from rewardmill.transforms.io.progress import Progress
from rewardmill.transforms.sampling.cache import RolloutCache
from rewardmill.transforms.sampling.params import Sample


class PolicyHandler(ModelHandler):
    """Element = one batch of prompt rows -> list of (prompt row, Sample). Batches are formed upstream in a
    deterministic order, so Beam's own batching is off (one element per call): generation depends only on the
    data, never on bundle boundaries."""

    def __init__(self, cache: RolloutCache, total_prompts: int | None, label: str | None = None):
        super().__init__()
        self.cache = cache
        self.total_prompts = total_prompts
        self.label = label  # a pool member's name
        self._progress = None

    def _generate(self, model, prompts: list[dict[str, Any]]) -> list[list[Sample]]:
        raise NotImplementedError

    def run_inference(self, batch: Sequence[list[dict[str, Any]]], model, inference_args=None) -> Iterable:
        if self._progress is None:
            what = f"rollouts[{self.label}]" if self.label else "rollouts"
            self._progress = Progress(what, self.total_prompts, unit="prompt")
        for prompts in batch:
            samples = self.cache.sample(prompts, lambda todo: self._timed_generate(model, todo))
            self._progress.update(len(prompts), sum(s.n_tokens for per in samples for s in per))
            yield [(prompt, s) for prompt, per in zip(prompts, samples, strict=True) for s in per]

    def _timed_generate(self, model, prompts: list[dict[str, Any]]) -> list[list[Sample]]:
        with timings.timed("generate"):
            return self._generate(model, prompts)

    def batch_elements_kwargs(self):
        return {"min_batch_size": 1, "max_batch_size": 1}

    def get_metrics_namespace(self) -> str:
        return "rewardmill_rollouts"
