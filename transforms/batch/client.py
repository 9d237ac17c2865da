"""BatchJudgeClient: a judge client whose `complete` sends its requests as provider batches and waits for them.

Each request's `custom_id` is its call cache key (call_cache.call_key), so a batch's results go into the cache under
the keys the stage looks up, and a rerun knows which requests a recorded batch carries. One `complete`:

1. adopts the batches of earlier runs (ledger.py) that last carried any of the requests, and polls them: a run
   killed while a batch was in flight collects it instead of submitting again;
2. submits the rest, `max_requests` per batch, recording each submission before it is sent and its batch id once
   the provider answers (ledger.py: a run killed between the two is recovered by the token in the batch's metadata);
3. polls every open batch with a doubling wait (`poll_seconds` up to `max_poll_seconds`), logging its progress;
4. reads the results back by custom_id; a request that failed or expired (or that an expired or cancelled batch
   never ran) is resubmitted in a new batch, at most `max_resubmits` times, and then comes back with its error.

Past `max_wait_seconds` it raises BatchPending naming the batches: the stage stops, and its rerun polls them again.
Only cacheable requests (greedy or seeded) are batched: an unseeded sample has no stable id to find again.
"""

import logging
import time

from rewardmill.transforms.batch.ledger import Entry, Ledger
from rewardmill.transforms.batch.provider import BatchProvider, BatchState, provider_for
from rewardmill.transforms.judges.call_cache import call_key, is_cacheable
from rewardmill.transforms.judges.client import BackendConfig, JudgeRequest, JudgeResponse
from rewardmill.transforms.judges.openai_client import (
    chat_body,
    endpoint_model_id,
    redact,
    resolve_api_key,
    response_of,
)

log = logging.getLogger("rewardmill")
MAX_STATE_ERRORS = 5  # consecutive failed status checks before a poll gives up
TOKEN_KEY = "rewardmill_submission"  # the batch metadata key carrying a submission's ledger token


class BatchPending(RuntimeError):
    """Batches still running when the wait ran out; a rerun polls them again."""


class BatchJudgeClient:
    def __init__(self, config: BackendConfig, provider: BatchProvider | None = None, sleep=time.sleep):
        if config.batch is None:
            raise ValueError("BatchJudgeClient needs a backend with a `batch:` block")
        if not config.cache_dir:
            raise ValueError("batch calls need the call cache: run the stage with --cache")
        self.config, self.batch = config, config.batch
        self.model_id = endpoint_model_id(config)
        self.ledger = Ledger(config.cache_dir, self.model_id)
        self._provider = provider
        self._sleep = sleep
        self._usage = {"batches": 0, "batch_requests": 0, "batch_resubmitted": 0, "batch_adopted": 0,
                       "batch_failures": 0, "prompt_tokens": 0, "completion_tokens": 0}  # fmt: skip

    @property
    def provider(self) -> BatchProvider:
        if self._provider is None:
            base_url = self.config.base_url or "https://api.openai.com/v1"
            key = resolve_api_key(self.config)
            self._provider = provider_for(self.batch.provider, base_url, key, self.config.request_timeout)
        return self._provider

    def usage(self) -> dict[str, int]:
        return dict(self._usage)

    def close(self) -> None:
        pass

    def complete(self, requests: list[JudgeRequest]) -> list[JudgeResponse]:
        keys = [call_key(self.model_id, r) if is_cacheable(r) else None for r in requests]
        todo = {k: r for k, r in zip(keys, requests, strict=True) if k is not None}
        answers: dict[str, JudgeResponse] = {}
        failed: dict[str, str] = {}
        self._recover_intents()
        sent: dict[str, int] = {}  # custom id -> batches that carried it so far (earlier runs' included)
        for entry in self.ledger.entries():
            for custom_id in entry.ids:
                if custom_id in todo:
                    sent[custom_id] = sent.get(custom_id, 0) + 1
        start = time.monotonic()
        adopted = self.ledger.latest(set(todo))
        if adopted:
            self._usage["batch_adopted"] += len(adopted)
            log.info("batch: polling %d batch(es) an earlier run submitted (%s)", len(adopted), self.ledger.path)
        self._finish(adopted, todo, answers, failed, start)
        while pending := [k for k in todo if k not in answers and sent.get(k, 0) <= self.batch.max_resubmits]:
            attempt = max(sent.get(k, 0) for k in pending)
            entries = []
            for lo in range(0, len(pending), self.batch.max_requests):
                chunk = pending[lo : lo + self.batch.max_requests]
                entries.append(self._submit(chunk, todo, attempt))
                for k in chunk:
                    sent[k] = sent.get(k, 0) + 1
            self._usage["batch_resubmitted" if attempt else "batch_requests"] += len(pending)
            self._finish(entries, todo, answers, failed, start)
        out = []
        for key in keys:
            if key is None:
                out.append(JudgeResponse((), error="not batched: unseeded sampling has no stable custom_id"))
            elif key in answers:
                out.append(answers[key])
            else:
                out.append(JudgeResponse((), error=failed.get(key, "the batch returned no result for it")))
        self._usage["batch_failures"] += sum(1 for k in todo if k not in answers)
        return out

    def _recover_intents(self) -> None:
        """Submissions an earlier run recorded but never saw answered: adopt the batch the provider holds under the
        intent's token, or drop the intent when the provider created none (its requests are then submitted)."""
        for intent in self.ledger.intents():
            batch_id = self.provider.find(TOKEN_KEY, intent.token, intent.submitted_at)
            if batch_id is None:
                log.info("batch: an earlier run's submission never became a batch; its requests go again")
                self.ledger.drop(intent)
            else:
                log.info("batch %s: found the batch an earlier run submitted but never recorded", batch_id)
                self.ledger.confirm(intent, batch_id)

    def _submit(self, chunk: list[str], todo: dict[str, JudgeRequest], attempt: int) -> Entry:
        lines = [self.provider.line(k, chat_body(self.config.model, todo[k])) for k in chunk]
        intent = self.ledger.intend(chunk, attempt)  # before the provider hears of it: a kill at any point is found
        metadata = {"source": "rewardmill", "attempt": str(attempt), TOKEN_KEY: intent.token}
        batch_id = self.provider.submit(lines, self.batch.completion_window, metadata)
        entry = self.ledger.confirm(intent, batch_id)  # recorded before any wait
        self._usage["batches"] += 1
        log.info("batch %s: submitted %d requests (attempt %d)", batch_id, len(chunk), attempt)
        return entry

    def _finish(self, entries: list[Entry], todo, answers: dict, failed: dict, start: float) -> None:
        """Wait for every batch in `entries`, then read their results into `answers` (or `failed`)."""
        for entry in entries:
            state = self._wait(entry, start)
            mine = {k for k in entry.ids if k in todo and k not in answers}
            if state.status == "failed" and not (state.output_file or state.error_file):
                why = "; ".join(state.errors) or "the batch failed"
                failed.update({k: f"batch {entry.id} failed: {why}" for k in mine})
                continue
            for result in self.provider.results(state):
                if result.custom_id not in mine:
                    continue
                if result.body is not None:
                    response = response_of(result.body, todo[result.custom_id].sampling)
                    answers[result.custom_id] = response
                    failed.pop(result.custom_id, None)
                    self._usage["prompt_tokens"] += response.prompt_tokens
                    self._usage["completion_tokens"] += response.completion_tokens
                else:
                    failed[result.custom_id] = redact(result.error or "error", self.config.api_key_env)
            for k in mine - set(answers):
                failed.setdefault(k, f"batch {entry.id} {state.status} without running it")

    def _wait(self, entry: Entry, start: float) -> BatchState:
        wait, errors = self.batch.poll_seconds, 0
        while True:
            try:
                state = self.provider.state(entry.id)
                errors = 0
            except Exception as exc:  # a status check that failed says nothing about the batch: check again
                errors += 1
                if errors >= MAX_STATE_ERRORS:
                    raise BatchPending(
                        f"batch {entry.id}: {errors} status checks failed ({redact(str(exc), self.config.api_key_env)}"
                        f"); rerun to poll it again ({self.ledger.path})"
                    ) from None
                state = None
            if state is not None and state.done:
                log.info("batch %s: %s %s", entry.id, state.status, state.counts)
                return state
            waited = time.monotonic() - start
            if waited + wait > self.batch.max_wait_seconds:
                status = state.status if state else "unknown"
                raise BatchPending(
                    f"batch {entry.id} is still {status} after {waited:.0f} s (batch.max_wait_seconds "
                    f"{self.batch.max_wait_seconds:g}); rerun the stage to poll it again: it is recorded in "
                    f"{self.ledger.path}, so nothing is resubmitted"
                )
            if state is not None:
                log.info("batch %s: %s %s, waited %.0f s", entry.id, state.status, state.counts, waited)
            self._sleep(wait)
            wait = min(wait * 2, self.batch.max_poll_seconds)
