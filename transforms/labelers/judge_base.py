"""What every model-based labeler (judge) shares: a lazily built client, the call cache, usage and teardown.

A judge labeler keeps its settings in `self.config`, whose `backend` field is a BackendConfig. The client is built
on first use (so the labeler pickles to Beam workers without a model inside) and dropped again when pickled.

Judges read the answer, not the reasoning (`judged_answer`), and an answer with no substance gets score 0.0 without
a judge call (`no_answer_label`): a "master key" such as ":" or "Let's solve this step by step." is never credited
and never outranks a sincere wrong answer. Every client is guarded against special-token strings (backends.py).
"""

from dataclasses import replace

from rewardmill.transforms.judges.backends import make_client
from rewardmill.transforms.judges.client import JudgeClient, JudgeResponse
from rewardmill.transforms.judges.guarded_client import unguarded
from rewardmill.transforms.judges.untrusted import NO_SUBSTANCE, has_substance
from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.reasoning import answer_text

JUDGE_CALL_FAILED = "judge_call_failed"


def question_of(messages) -> str:
    """The last user turn: what the completion answers."""
    users = [m["content"] for m in messages or () if m.get("role") == "user"]
    return users[-1] if users else ""


def call_failed(response_error: str, aspect: str) -> Label:
    """The label for a row whose judge call failed beyond its retry budget: the stage sends it to _rejects."""
    reason = f"judge call failed: {response_error}"[:500]
    return Label(None, 0.0, "error", reason, aspect=aspect, reject_reason=JUDGE_CALL_FAILED)


def judged_answer(completion) -> str:
    """What a judge reads of a completion: the answer after a leading reasoning block ("" for an unclosed one)."""
    return answer_text(completion) if isinstance(completion, str) else ""


def no_answer_label(aspect: str) -> Label:
    """The label of an answer with no substance: the lowest score, decided without asking the judge."""
    return Label(0.0, 1.0, "incorrect", NO_SUBSTANCE, raw=None, aspect=aspect)


def first_error(responses: list[JudgeResponse]) -> str | None:
    return next((r.error for r in responses if r.error), None)


class JudgeLabeler:
    """Mixin: `client` (one per labeler instance; `clients` for extra backends), `set_call_cache`, `usage`,
    `teardown`. Subclasses set `self.config` (with a `backend`) and call `super().__init__()`."""

    # False only to measure what the defenses change (bench/judge_probes.py): requests go out unguarded, and answers
    # with no substance are judged like any other.
    defended: bool = True

    def __init__(self):
        self._clients: dict = {}

    def screens_out(self, answer: str, question: str = "") -> bool:
        """Whether an answer is labeled `no_answer_label` instead of judged. Given the row's `question`
        (`question_of(messages)`), an answer that only restates it is screened out too."""
        return self.defended and not has_substance(answer, question)

    def __getstate__(self):  # clients hold models and connections; a copy opens its own when first used
        return {**self.__dict__, "_clients": {}}

    @property
    def client(self) -> JudgeClient:
        return self.client_for(self.config.backend)

    def client_for(self, backend) -> JudgeClient:
        """The client for `backend` (built once per distinct backend config; the call cache folder is shared)."""
        if backend.cache_dir is None and self.config.backend.cache_dir is not None:
            backend = replace(backend, cache_dir=self.config.backend.cache_dir)
        if backend not in self._clients:
            client = make_client(backend)
            self._clients[backend] = client if self.defended else unguarded(client)
        return self._clients[backend]

    def set_call_cache(self, directory: str) -> None:
        """Called by the label stage: every judge call is cached by content hash under `directory`."""
        if self.config.backend.cache_dir is None:
            self.config = replace(self.config, backend=replace(self.config.backend, cache_dir=directory))

    def usage(self) -> dict[str, int] | None:
        """Calls and tokens so far, summed over this labeler's clients; None before the first call."""
        if not self._clients:
            return None
        total: dict[str, int] = {}
        for client in self._clients.values():
            for key, value in client.usage().items():
                total[key] = total.get(key, 0) + value
        return total

    def teardown(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients = {}
