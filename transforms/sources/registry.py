"""Prompt source kinds selectable in params `prompts.sources`; each kind validates its own keys, and `check()` finds
what a run would fail on (a missing file) before any record is read."""

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rewardmill.transforms.config import from_dict
from rewardmill.transforms.errors import UserError
from rewardmill.transforms.sources import arithmetic, code_basics, files, humaneval, reasoning_gym, traces, verifiers
from rewardmill.transforms.sources.normalize import RecordError


class PromptSource(Protocol):
    """What the prompts stage needs of a source kind."""

    name: str
    task: str  # the task of a record that names none (a params key where a kind lets users choose it)

    def check(self) -> None:
        """Raise what reading would fail on at once (a missing file), before the pipeline is built."""

    def records(self) -> Iterator[tuple[str, dict[str, Any] | RecordError]]:
        """(row_id, record) or (row_id, RecordError): a bad row is that row's reject."""


@dataclass(frozen=True)
class ArithmeticSource:
    name: str
    kind: str = "arithmetic"
    count: int = 64  # how many problems
    seed: int = 0
    levels: tuple[int, ...] = (1, 2, 3, 4)  # difficulty levels, cycled
    task = "math"  # not a params key: every problem is a math task

    def check(self) -> None:
        """Nothing to check: built in."""

    def records(self) -> Iterator[tuple[str, dict[str, Any] | RecordError]]:
        for i, record in enumerate(arithmetic.generate(self.count, self.seed, self.levels)):
            yield f"{self.name}:{i}", record


@dataclass(frozen=True)
class FileSource:
    name: str
    path: str
    kind: str = "file"
    task: str = "math"  # default task when rows carry none
    columns: dict = field(default_factory=dict)  # prompt field -> file column

    def __post_init__(self):
        files.check_mapping(self.columns)

    def check(self) -> None:
        """The file exists and a reader takes its suffix."""
        files.check_file(self.path)

    def records(self):
        yield from files.read_file(self.path, self.columns)


@dataclass(frozen=True)
class HFDatasetSource:
    name: str
    dataset: str  # hub id (needs network) or local path
    kind: str = "hf"
    config: str | None = None
    split: str = "train"
    task: str = "math"
    limit: int | None = None
    columns: dict = field(default_factory=dict)

    def __post_init__(self):
        files.check_mapping(self.columns)

    def check(self) -> None:
        """Nothing before reading: `datasets` resolves a hub id or a local path itself (and names what it misses)."""

    def records(self):
        yield from files.read_hf(self.dataset, self.config, self.split, self.columns, self.limit)


@dataclass(frozen=True)
class HumanEvalSource:
    name: str
    kind: str = "humaneval"
    limit: int | None = None  # the first N of HumanEval's 164 problems; None = all
    task = "code"  # not a params key: every record is a code task

    def __post_init__(self):
        _check_limit(self.limit)

    def check(self) -> None:
        """Nothing to check: built in."""

    def records(self):
        for record in humaneval.generate(self.limit):
            yield f"{self.name}:{record['metadata']['task_id']}", record


@dataclass(frozen=True)
class CodeBasicsSource:
    name: str
    kind: str = "code_basics"
    limit: int | None = None  # the first N built-in tasks; None = all
    task = "code"  # not a params key: every record is a code task

    def __post_init__(self):
        _check_limit(self.limit)

    def check(self) -> None:
        """Nothing to check: built in."""

    def records(self):
        for record in code_basics.generate(self.limit):
            yield f"{self.name}:{record['metadata']['name']}", record


@dataclass(frozen=True)
class ReasoningGymSource:
    name: str
    kind: str = "reasoning_gym"
    # task name -> {count, seed, config}: `count` entries of reasoning_gym.create_dataset(task, seed=..., **config)
    tasks: dict = field(default_factory=dict)
    system_prompt: str | None = "default"  # a reasoning-gym SYSTEM_PROMPTS key, any other text, or null
    task = reasoning_gym.TASK  # not a params key

    def __post_init__(self):
        if not self.tasks:
            raise ValueError("tasks must name at least one reasoning-gym task, e.g. {leg_counting: {count: 8}}")
        specs = {}
        for task, spec in self.tasks.items():
            spec = dict(spec or {})
            unknown = set(spec) - {"count", "seed", "config"}
            if unknown:
                raise ValueError(f"tasks.{task}: unknown keys {sorted(unknown)} (count, seed, config)")
            count, seed, config = spec.get("count", 8), spec.get("seed", 0), spec.get("config") or {}
            if not isinstance(count, int) or count < 0 or not isinstance(seed, int) or not isinstance(config, dict):
                raise ValueError(f"tasks.{task}: count must be an int >= 0, seed an int, config a mapping")
            specs[task] = {"count": count, "seed": seed, "config": config}
        object.__setattr__(self, "tasks", specs)

    def check(self) -> None:
        """The package is installed, each task exists and its config builds."""
        reasoning_gym.check_tasks(self.tasks)

    def records(self):
        yield from reasoning_gym.generate(self.name, self.tasks, self.system_prompt)


@dataclass(frozen=True)
class VerifiersSource:
    name: str
    id: str  # the environment module (its taskset), as verifiers resolves it
    kind: str = "verifiers"
    args: dict = field(default_factory=dict)  # its TasksetConfig fields (the same as rollouts.environment.config.args)
    limit: int | None = None  # the first N tasks; None = all (an infinite taskset needs a limit)
    task = verifiers.TASK  # not a params key

    def __post_init__(self):
        _check_limit(self.limit)
        if not self.id:
            raise ValueError("id must name a verifiers environment module")

    def check(self) -> None:
        """The package is installed, the module resolves and its config takes the args."""
        verifiers.check(self.id, self.args)

    def records(self):
        yield from verifiers.generate(self.name, self.id, self.args, self.limit)


@dataclass(frozen=True)
class TracesSource:
    name: str
    path: str  # a JSON Lines file of recorded transcripts, one per line
    kind: str = "traces"
    format: str = "openai"  # openai (messages with tool_calls) | sharegpt (conversations with from/value)
    task: str = "open"  # the task of a transcript that names none

    def __post_init__(self):
        if self.format not in traces.FORMATS:
            raise ValueError(f"format must be one of {traces.FORMATS}, got {self.format!r}")

    def check(self) -> None:
        """The file exists."""
        if not Path(self.path).is_file():
            raise FileNotFoundError(f"{self.path}: no such traces file")

    def records(self):
        yield from traces.generate(self.name, self.path, self.format, self.task)


def _check_limit(limit: int | None) -> None:
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or null, got {limit}")


SOURCE_KINDS = {
    "arithmetic": ArithmeticSource,
    "file": FileSource,
    "hf": HFDatasetSource,
    "humaneval": HumanEvalSource,
    "code_basics": CodeBasicsSource,
    "reasoning_gym": ReasoningGymSource,
    "traces": TracesSource,
    "verifiers": VerifiersSource,
}


def parse_source(raw: Any, where: str) -> PromptSource:
    if not isinstance(raw, dict) or "kind" not in raw:
        raise ValueError(f"params.yaml: '{where}' must be a mapping with a 'kind' in {sorted(SOURCE_KINDS)}")
    if raw["kind"] not in SOURCE_KINDS:
        raise ValueError(f"params.yaml: '{where}.kind' {raw['kind']!r} unknown; known: {sorted(SOURCE_KINDS)}")
    return from_dict(SOURCE_KINDS[raw["kind"]], raw, where)


class SourceError(UserError):
    """A prompt source that cannot be read at all (a missing file): names the params entry and the path."""


def check_sources(sources: list[PromptSource], params: str) -> None:
    """Each source's check(), its error naming the params file (when given) and entry: what reading would fail on,
    before any pipeline."""
    for i, source in enumerate(sources):
        try:
            source.check()
        except (OSError, ImportError, ValueError, files.SourceFileError) as exc:  # a bad task or config too
            where = f"{params}: " if params else ""
            raise SourceError(f"{where}prompts.sources[{i}] ({source.name}): {exc}") from exc


def default_task(source: PromptSource) -> str:
    """The task of the source's records that name none."""
    return source.task
