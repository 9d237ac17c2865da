"""Count the judge calls a labeler would make, without making them.

While `counting_calls(...)` is active, every judge client a labeler builds (transforms/judges/backends.make_client,
inner judges included) is a `PlanningClient`. A request the call cache answers comes back as the cached response (so
what a labeler does next is what the run would do). A request already counted in this plan (by this stage or an
earlier one: the stages share the call cache) counts as cached, since the run sends it once. Any other request is
charged to the current prompt and answered with an error, which ends that row's labeling the way a failed call
would. So calls a labeler makes only after reading an answer (a panel's reflection round) are not counted.
"""

import dataclasses
from contextlib import contextmanager

from rewardmill.transforms.judges import backends
from rewardmill.transforms.judges.call_cache import CachedJudgeClient, call_key, is_cacheable
from rewardmill.transforms.judges.client import BackendConfig, JudgeRequest, JudgeResponse
from rewardmill.transforms.planning.spend import Prices, StagePlan, priced
from rewardmill.transforms.planning.tokens import TokenCounter

NOT_SENT = "not sent: rewardmill plan"


class CallRecorder:
    """Where planned calls go: the stage plan, the prompt being planned, prices and the token counter."""

    def __init__(self, plan: StagePlan, prices: Prices, tokens: TokenCounter, seen: set[str] | None = None):
        self.plan, self.prices, self.tokens = plan, prices, tokens
        self.group = ""
        # keys already planned, by this stage or an earlier one of the same plan (the stages share the caches)
        self.seen: set[str] = set() if seen is None else seen

    def charge(self, config: BackendConfig, request: JudgeRequest, key: str | None = None) -> None:
        """Price one call the run would send; `key` is its call cache key (None: not cacheable)."""
        tokens_in = self.tokens.chat(config.model, request.messages)
        tokens_out = request.sampling.max_tokens * max(1, request.sampling.n)
        # a backend with `batch:` sends through the provider's batch API, at its discount (docs/batch.md)
        price = self.prices.price(config.kind, config.model, config.batch.discount if config.batch else 1.0)
        self.plan.charge(self.group, priced(price, config.model, 1, tokens_in, tokens_out))

    def answered(self, config: BackendConfig, request: JudgeRequest, key: str, response: JudgeResponse) -> None:
        """A call the call cache answers: the run sends nothing for it."""
        self.plan.cached += 1

    reads_label_cache = True  # rows the label cache answers whole are not replayed (the run does not label them)


class SpendRecorder(CallRecorder):
    """Charges what the call cache answered, once per call, for a built stage's `spend` (transforms/planning/spent.py
    says what counts)."""

    reads_label_cache = False  # every row's calls, however the run got its label

    def __init__(self, plan: StagePlan, prices: Prices, tokens: TokenCounter):
        super().__init__(plan, prices, tokens, seen=set())
        self.charged: set[str] = set()
        self.estimated = 0
        self.uncached = 0

    def answered(self, config: BackendConfig, request: JudgeRequest, key: str, response: JudgeResponse) -> None:
        if key in self.charged:
            return
        self.charged.add(key)
        if response.prompt_tokens is None or response.completion_tokens is None:  # a server that reports no usage
            self.estimated += 1
            super().charge(config, request, key)
            return
        price = self.prices.price(config.kind, config.model, config.batch.discount if config.batch else 1.0)
        spend = priced(price, config.model, 1, response.prompt_tokens, response.completion_tokens)
        self.plan.charge(self.group, spend)

    def charge(self, config: BackendConfig, request: JudgeRequest, key: str | None = None) -> None:
        if key is not None:  # cacheable, not in the cache: no answer was kept, so none was paid for here
            self.uncached += 1
            return
        self.estimated += 1  # unseeded sampling: sent every time, never cached
        super().charge(config, request, key)


class PlanningClient:
    """A JudgeClient that sends nothing (see the module docstring); `model_id` and the cache are the real client's."""

    def __init__(self, config: BackendConfig, recorder: CallRecorder):
        real = backends.build_client(config)  # builds lazily: no model is loaded, no connection opened
        self.model_id = real.model_id
        self._store = real._store if isinstance(real, CachedJudgeClient) else None
        self.config, self.recorder = config, recorder

    def complete(self, requests: list[JudgeRequest]) -> list[JudgeResponse]:
        return [self._one(request) for request in requests]

    def _one(self, request: JudgeRequest) -> JudgeResponse:
        key = call_key(self.model_id, request) if is_cacheable(request) else None
        hit = self._store.get(key) if key is not None and self._store is not None else None
        if hit is not None:
            self.recorder.answered(self.config, request, key, hit)
            return dataclasses.replace(hit, cached=True)
        if key is not None and key in self.recorder.seen:
            self.recorder.plan.cached += 1
            return JudgeResponse((), error=NOT_SENT)
        if key is not None:
            self.recorder.seen.add(key)
        self.recorder.charge(self.config, request, key)
        return JudgeResponse((), error=NOT_SENT)

    def usage(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        pass


@contextmanager
def counting_calls(recorder: CallRecorder):
    """Every judge client built inside is a PlanningClient on `recorder`."""
    previous = backends.planning_factory
    backends.planning_factory = lambda config: PlanningClient(config, recorder)
    try:
        yield recorder
    finally:
        backends.planning_factory = previous
