"""What a batch API must offer, and the plain values it exchanges.

A provider turns a request body into its file's line format, submits a file of lines (upload, then create the
batch), reports a batch's state, finds a batch by a metadata value (how a rerun recovers a batch whose creation a
killed run never saw answered), and reads a finished batch's results back by `custom_id` (output and error files
alike; their order is not guaranteed). Adding a provider (Anthropic's message batches, ...) is one file that
implements `BatchProvider` (constructed with base_url, api_key, timeout), registered in PROVIDERS, or installed under
the entry-point group `rewardmill.batch_providers` by another package.
"""

from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Protocol

from rewardmill.transforms.errors import UserError
from rewardmill.transforms.labelers.contract import find_plugin

ENTRY_POINT_GROUP = "rewardmill.batch_providers"

# Statuses after which a batch changes no more (the OpenAI Batch API's names; others map theirs onto these)
TERMINAL = ("completed", "failed", "expired", "cancelled")


@dataclass(frozen=True)
class BatchState:
    """A batch as the provider reports it now."""

    id: str
    status: str  # validating | in_progress | finalizing | completed | failed | expired | cancelling | cancelled
    output_file: str | None = None
    error_file: str | None = None
    counts: dict[str, int] = field(default_factory=dict)  # total, completed, failed
    errors: tuple[str, ...] = ()  # why a whole batch failed (a malformed file)

    @property
    def done(self) -> bool:
        return self.status in TERMINAL


@dataclass(frozen=True)
class BatchResult:
    """One request's outcome: the response body (an OpenAI chat completion) or why there is none."""

    custom_id: str
    body: dict | None
    error: str | None = None


class BatchProvider(Protocol):
    """One provider's batch API. Methods raise on a failed API call (the client retries status checks)."""

    name: str

    def line(self, custom_id: str, body: dict) -> dict:
        """A request's line of the batch file."""
        ...

    def submit(self, lines: list[dict], window: str, metadata: dict[str, str]) -> str:
        """Upload `lines` as a batch file and create the batch, to finish within `window` ("24h"); its id."""
        ...

    def state(self, batch_id: str) -> BatchState: ...

    def find(self, key: str, value: str, since: float) -> str | None:
        """The id of a batch created at or after `since` (unix seconds) whose metadata has `key` = `value`, else
        None. A rerun asks it for the batch a killed run created but never recorded (ledger.py)."""
        ...

    def results(self, state: BatchState) -> list[BatchResult]:
        """A terminal batch's results, from its output and error files (either may be missing)."""
        ...


class UnknownProvider(UserError, KeyError):
    """A backend's batch.provider names no built-in or installed provider."""

    def __str__(self) -> str:
        return str(self.args[0])


def check_provider(cls, where: str):
    """`cls` if it has every BatchProvider method, else a clear error naming what it lacks."""
    if lacking := [m for m in ("line", "submit", "state", "find", "results") if not callable(getattr(cls, m, None))]:
        raise TypeError(f"{where}: a batch provider needs {lacking}")
    return cls


def provider_class(name: str):
    """The provider class registered as `name` (built in, else an installed entry point)."""
    from rewardmill.transforms.batch.openai_provider import OpenAIBatchProvider

    builtins = {"openai": OpenAIBatchProvider}
    installed = lambda: entry_points(group=ENTRY_POINT_GROUP)  # noqa: E731
    return find_plugin(name, builtins, ENTRY_POINT_GROUP, installed, check_provider, "batch provider", UnknownProvider)


def provider_for(name: str, base_url: str, api_key: str, timeout: float) -> BatchProvider:
    return provider_class(name)(base_url, api_key, timeout)
