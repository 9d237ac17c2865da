"""What every policy backend's RunInference handler shares: pre-formed batches in, (prompt row, Sample) pairs out,
each batch through the rollouts cache, progress with tokens. A backend implements `load_model` and `_generate` (n
samples per prompt), and `_generate_turns` (one assistant turn per conversation) to run environments: with
`rollouts.environment` set, a batch's prompts become multi-turn episodes (transforms/environments/episodes.py), every
live trajectory's next turn in one `_generate_turns` call."""

import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from apache_beam.ml.inference.base import ModelHandler

from rewardmill.transforms.environments.contract import TemplateAwareEnvironment, has_hook
from rewardmill.transforms.io import timings
from rewardmill.transforms.io.progress import Progress
from rewardmill.transforms.sampling.cache import RolloutCache
from rewardmill.transforms.sampling.params import Sample, SamplingParams
from rewardmill.transforms.sampling.reasoning import (
    ReasoningTags,
    count_reasoning,
    single_turn_columns,
    split_reasoning,
)


class PolicyHandler(ModelHandler):
    """Element = one batch of prompt rows -> list of (prompt row, Sample). Batches are formed upstream in a
    deterministic order, so Beam's own batching is off (one element per call): generation depends only on the
    data, never on bundle boundaries."""

    sampling: SamplingParams  # every backend sets it

    def __init__(
        self,
        cache: RolloutCache,
        total_prompts: int | None,
        label: str | None = None,
        environment=None,
        reasoning: ReasoningTags | None = None,
    ):
        super().__init__()
        self.cache = cache
        self.total_prompts = total_prompts
        self.label = label  # a pool member's name
        self.environment = environment  # EnvironmentParams, or None: one turn per sample
        self.reasoning = reasoning  # the tags of a leading reasoning trace, or None: the text is the answer
        self._progress = None
        self._env = None  # the environment, built on the worker on first use

    def _generate(self, model, prompts: list[dict[str, Any]]) -> list[list[Sample]]:
        raise NotImplementedError

    def _generate_turns(self, model, requests: list) -> list[Sample]:
        """One assistant turn per TurnRequest (conversation, seed, tools), in order."""
        raise NotImplementedError(f"{type(self).__name__} cannot run environments yet")

    @staticmethod
    def _turn_inputs(requests: list) -> tuple[list, list[int], list | None, list[int]]:
        """TurnRequests as the backends' turn generators take them: (conversations, seeds, tools, turns_from). One
        environment offers the same tools to every request."""
        tools = requests[0].tools if requests else None
        return [r.messages for r in requests], [r.seed for r in requests], tools, [r.turns_from for r in requests]

    def _chat_tokenizer(self, model):
        """The tokenizer whose chat template formats the policy's turns here; None where the server formats them."""
        return None

    def _token_counter(self, model) -> Callable[[str], int] | None:
        """Counts a text's tokens with the policy's tokenizer (reasoning_tokens); None where there is none here."""
        return None

    def run_inference(self, batch: Sequence[list[dict[str, Any]]], model, inference_args=None) -> Iterable:
        if self._progress is None:
            what = f"rollouts[{self.label}]" if self.label else "rollouts"
            self._progress = Progress(what, self.total_prompts, unit="prompt")
        for prompts in batch:
            samples = self.cache.sample(prompts, lambda todo: self._sample(model, todo))
            if self.reasoning is not None:
                samples = self._with_reasoning(model, samples)
            elif self.sampling.keep_tokens:
                samples = [[self._one_turn(s, None) for s in per] for per in samples]
            self._progress.update(len(prompts), sum(s.n_tokens for per in samples for s in per))
            yield [(prompt, s) for prompt, per in zip(prompts, samples, strict=True) for s in per]

    def _sample(self, model, prompts: list[dict[str, Any]]) -> list[list[Sample]]:
        if self.environment is None:
            return self._timed_generate(model, prompts)
        from rewardmill.transforms.environments.rollouts import run_batch

        if self._env is None:
            cls, config = self.environment.resolve()
            self._env = cls(config)
            if has_hook(self._env, TemplateAwareEnvironment):
                from rewardmill.transforms.sampling.transformers_generate import renders_tools

                tokenizer = self._chat_tokenizer(model)
                self._env.use_template(None if tokenizer is None else renders_tools(tokenizer))
        split = None if self.reasoning is None else functools.partial(split_reasoning, tags=self.reasoning)
        turns = self.cache.turns(self._timed_turns(model))  # a batch killed mid-episode replays its finished turns
        return run_batch(self._env, self.environment.limits(), prompts, self.sampling, turns, split)

    def _with_reasoning(self, model, samples: list[list[Sample]]) -> list[list[Sample]]:
        """Each sample with its reasoning apart (ROLLOUT_V3 columns) and its reasoning tokens counted. A one-turn
        sample is split here, after the cache (which keeps the text as sampled: the tags are no part of a sample's
        identity); an episode's turns were split as they were sampled (the environment reads only the answer)."""
        count = self._token_counter(model)
        out = []
        for per in samples:
            done = []
            for s in per:
                if s.trajectory is None:
                    s = self._one_turn(s, split_reasoning(s.completion, self.reasoning))
                done.append(dataclasses.replace(s, trajectory=count_reasoning(s.trajectory, count)))
            out.append(done)
        return out

    @staticmethod
    def _one_turn(sample: Sample, split) -> Sample:
        """A one-turn sample as a trajectory of one assistant turn (ROLLOUT_V3 columns): its answer apart from its
        trace (`split`; None: reasoning is off), its token ids with keep_tokens. An episode's sample is one already."""
        if sample.trajectory is not None:
            return sample
        columns = single_turn_columns(sample, split)
        return dataclasses.replace(sample, completion=columns.pop("completion"), trajectory=columns)

    def _timed_generate(self, model, prompts: list[dict[str, Any]]) -> list[list[Sample]]:
        with timings.timed("generate"):
            return self._generate(model, prompts)

    def _timed_turns(self, model):
        def generate(requests: list) -> list[Sample]:
            with timings.timed("generate"):
                return self._generate_turns(model, requests)

        return generate
