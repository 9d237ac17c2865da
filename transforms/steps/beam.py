"""Thin Beam wrapper: a chunk of rollout rows -> STEP_LABEL_V1 rows (main) and REJECT_V1 rows (tagged)."""

import logging

import apache_beam as beam

from rewardmill.transforms.io import timings
from rewardmill.transforms.io.progress import Progress
from rewardmill.transforms.sampling.policy import model_identity
from rewardmill.transforms.stage.outputs import reject
from rewardmill.transforms.steps.continuations import (
    CachedContinuer,
    TransformersContinuer,
    VLLMContinuer,
)
from rewardmill.transforms.steps.labeler import StepLabeler, StepsConfig, make_judge_client

REJECTED = "rejected"
NAMESPACE = "steps"

log = logging.getLogger("rewardmill")


class LabelStepChunks(beam.DoFn):
    """Models load in `setup` (one policy for continuations, one judge client when the method needs it); each
    chunk is labeled in rounds. Counters (namespace `steps`): rollouts, rejects, continuations generated. `total`:
    the rollouts selected, for the progress line's ETA (a budget may leave some out: the line then ends short)."""

    def __init__(
        self,
        name: str,
        config: StepsConfig,
        model_dir: str,
        backend: str = "transformers",
        device: str = "cpu",
        vllm_kwargs: dict | None = None,
        cache_dir: str | None = None,
        total: int | None = None,
    ):
        self.name, self.config, self.model_dir, self.total = name, config, model_dir, total
        self.backend, self.device, self.vllm_kwargs, self.cache_dir = (
            backend,
            device,
            dict(vllm_kwargs or {}),
            cache_dir,
        )
        self.labeler = None
        self.progress = None

    def setup(self):
        cfg = self.config
        continuer = None
        if cfg.uses_continuations:
            if self.backend == "vllm":
                inner = VLLMContinuer(self.model_dir, cfg.continuation, cfg.k, self.vllm_kwargs)
            else:
                inner = TransformersContinuer(self.model_dir, cfg.continuation, cfg.k, self.device)
            cache = f"{self.cache_dir}/continuations" if self.cache_dir else None
            continuer = CachedContinuer(inner, cache, model_identity(self.model_dir))
        judge = (
            make_judge_client(cfg, f"{self.cache_dir}/calls" if self.cache_dir else None) if cfg.uses_judge else None
        )
        self.labeler = StepLabeler(self.name, cfg, continuer, judge)
        self.progress = Progress(f"steps@{self.name}", self.total, unit="rollout")

    def process(self, chunk: list[dict]):
        continuer = self.labeler.continuer
        before = continuer.generated if continuer is not None else 0
        with timings.timed("steps"):
            rows, rejects = self.labeler.label_chunk(chunk)
        if continuer is not None:  # cache misses x k: what this run really generated
            beam.metrics.Metrics.counter(NAMESPACE, "continuations_generated").inc(continuer.generated - before)
        labeled = len({r["rollout_id"] for r in rows})
        beam.metrics.Metrics.counter(NAMESPACE, "rollouts_labeled").inc(labeled)
        beam.metrics.Metrics.counter(NAMESPACE, "rollouts_rejected").inc(len(rejects))
        self.progress.update(len(chunk))
        yield from rows
        for rollout, reason, detail in rejects:
            yield beam.pvalue.TaggedOutput(
                REJECTED, reject(f"steps@{self.name}", rollout["rollout_id"], reason, detail)
            )

    def teardown(self):
        if self.labeler is not None:
            for part in (self.labeler.continuer, self.labeler.judge_client):
                if part is not None:
                    part.close()
