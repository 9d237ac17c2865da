"""The labeler contract: what the label stage, the planner, the audit and the GRPO reward functions may call on a
labeler, declared as Protocols instead of probed for.

A labeler is any class with the `Labeler` members; nothing is subclassed, so a labeler from another package (entry
point group `rewardmill.labelers`) only has to have them. Each optional hook is one small Protocol; a labeler opts in
by defining the method, and a subclass opts out of an inherited one by setting it to None (`label_many = None`).
The stages ask through `has_hook`, which takes a class or an instance alike: some hooks are asked of the class before
any labeler is built (`label_group`, `groups`, `summarize`, `normalize_run`), the others of the built labeler.
"""

import dataclasses
import functools
import inspect
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from rewardmill.transforms.errors import UserError

if TYPE_CHECKING:  # base.py imports this module; polars is only needed by the one hook that takes a frame
    import polars as pl

    from rewardmill.transforms.labelers.base import Label


# Prompt columns the rollouts do not carry: a labeler whose `reads` names one gets it joined from the prompts by
# prompt_id (pipelines/label.py; dvc.yaml's label stages pass --prompts).
PROMPT_ONLY_COLUMNS = ("metadata",)
# A generated rubric (a rubrics@NAME stage's criteria for the row's prompt, each {criterion, weight, kind}; None where
# the stage wrote none), joined by the label stage for a labeler that reads it (RubricReadingLabeler).
GENERATED_RUBRIC = "generated_rubric"


@runtime_checkable
class Labeler(Protocol):
    """What every labeler has. The stage builds it once per worker as `cls(config)` (config: a `Config` instance)
    and calls `label` once per row, unless it has `label_many` or `label_group`.

    `name`: its registry key.   `version`: bump it when its labels change (the label cache keys on it).
    `reads`: the rollout columns it reads, in `label`'s argument order; a class-level default, which an instance may
    narrow or compute in `__init__` (tiers, appeals).   `Config`: a frozen dataclass of its params.yaml settings.
    """

    name: str
    version: str
    reads: tuple[str, ...]
    Config: type

    def label(self, *values: Any) -> "Label | list[Label]":
        """One row's values of `reads`, in order -> its Label (or one per aspect). Score None = cannot label, with
        the reason in `rationale`; an exception becomes an `error` label for that row alone."""
        ...


@runtime_checkable
class RubricReadingLabeler(Protocol):
    """Grades against a generated rubric set: `rubric_set` names the rubrics@NAME stage whose rubrics the label stage
    joins into the GENERATED_RUBRIC column by prompt_id (None: the labeler reads none, and the column is not in
    `reads`)."""

    rubric_set: str | None


@runtime_checkable
class TaskRoutedLabeler(Protocol):
    """Task routing: the row tasks the labeler handles (None or absent: every task). Read before labeling, of the
    class (GRPO reward functions, the audit) or of the instance (the label stage; an instance may set it in
    `__init__`); params `labelers.<key>.tasks` overrides it. A row of another task is counted `not_applicable`."""

    tasks: tuple[str, ...] | None


@runtime_checkable
class BatchLabeler(Protocol):
    """Labels a batch at once (a judge's concurrent calls, one forward pass of a reward model)."""

    def label_many(self, rows: list[tuple]) -> "list[Label | list[Label]]":
        """Called with the `reads` values of more than one row (a batch of up to `batch_size`) -> one result per
        row, in order. When it raises, the stage labels the rows one by one with `label` instead."""
        ...


@runtime_checkable
class GroupLabeler(Protocol):
    """Labels the rollouts of one prompt together (pairwise judges, self-consistency votes)."""

    def label_group(self, rows: list[tuple]) -> "list[Label | list[Label]]":
        """Called instead of `label` with the `reads` values of every rollout of one prompt (sorted by rollout_id)
        -> one result per row, in order. When it raises, every row of the group gets an `error` label."""
        ...


@runtime_checkable
class GroupChoosingLabeler(Protocol):
    """A group labeler that groups only in some configs (a reward model only in pairwise mode)."""

    @staticmethod
    def groups(config: Any) -> bool:
        """Asked of the class, with the stage's Config, before the graph is built: True = use `label_group`."""
        ...


@runtime_checkable
class SummarizingLabeler(Protocol):
    """Adds its own dataset statistics to the label stage's metrics file (swap consistency, panel agreement)."""

    @classmethod
    def summarize(cls, labels: list[dict]) -> dict:
        """Called on the class once the stage is done, with every LABEL_V1 row it wrote (as dicts) -> a plain dict
        of statistics, written under `labeler` in the stage's metrics."""
        ...


@runtime_checkable
class RunNormalizingLabeler(Protocol):
    """Scores that depend on the whole run (a reward model's z-scored logits)."""

    @classmethod
    def normalize_run(cls, labels: "pl.DataFrame", config: Any) -> "pl.DataFrame":
        """Called on the class once every label exists, with all LABEL_V1 rows of the stage as one frame and the
        Config -> the frame with new values: the same rows in the same order (the stage checks it)."""
        ...


@runtime_checkable
class CallCachingLabeler(Protocol):
    """A labeler that calls a model: its calls are cached by content and counted by the planner."""

    def set_call_cache(self, directory: str) -> None:
        """Called once right after the labeler is built, when the stage has a label cache, with the folder for the
        model-call cache beside it. Having it also marks the labeler as model-based for `rewardmill plan`."""
        ...


@runtime_checkable
class UsageReportingLabeler(Protocol):
    """A labeler that reports what its model calls cost."""

    def usage(self) -> dict[str, int] | None:
        """Called after each batch and at teardown -> running totals so far (requests, tokens, retries...), or
        None before the first call. The stage turns the increments into Beam counters (namespace `judge`)."""
        ...


@runtime_checkable
class TearDownLabeler(Protocol):
    """A labeler that holds resources (clients, sandboxes, worker processes)."""

    def teardown(self) -> None:
        """Called once when the labeler is done (the DoFn's teardown, the end of a plan, an audit or a reward
        function's `close`) -> None. It releases what the labeler opened; nothing is labeled after it."""
        ...


@runtime_checkable
class ModelNamingConfig(Protocol):
    """A labeler Config (or a part of one) that names a model whose content its text does not pin down."""

    def model_identity(self) -> str:
        """Called on the config instance when the label cache's namespace is computed -> a string that changes
        when the model behind the config changes (a local folder's fingerprint)."""
        ...


HOOKS: tuple[type, ...] = (
    BatchLabeler,
    GroupLabeler,
    GroupChoosingLabeler,
    SummarizingLabeler,
    RunNormalizingLabeler,
    CallCachingLabeler,
    UsageReportingLabeler,
    TearDownLabeler,
)


class NotALabeler(UserError, TypeError):
    """A class that lacks what the `Labeler` Protocol requires (an entry point's, say): names what is missing."""


@functools.cache
def members(protocol: type) -> tuple[str, ...]:
    """The names a Protocol declares, attributes then methods, in declaration order."""
    names = [*inspect.get_annotations(protocol), *vars(protocol)]
    return tuple(dict.fromkeys(n for n in names if not n.startswith("_")))


@functools.cache
def _methods(protocol: type) -> frozenset[str]:
    return frozenset(n for n, v in vars(protocol).items() if callable(v) or isinstance(v, classmethod | staticmethod))


def missing(subject: Any, protocol: type) -> list[str]:
    """The members of `protocol` that `subject` (a class or an instance) lacks: an attribute it does not have, or a
    method it does not have as a callable (None included). Unlike `isinstance`, this works on a class too and
    honours `hook = None` on a subclass whatever the Python version; it is the one place that looks members up."""
    methods = _methods(protocol)
    has = {n: callable(getattr(subject, n, None)) if n in methods else hasattr(subject, n) for n in members(protocol)}
    return [n for n, present in has.items() if not present]


def has_hook(subject: Any, hook: type) -> bool:
    """Whether `subject` (a labeler class or instance) has every method of the hook Protocol `hook`."""
    return not missing(subject, hook)


def declared_tasks(subject: Any) -> tuple[str, ...] | None:
    """The tasks `subject` (a labeler class or instance) declares it handles (TaskRoutedLabeler), None for all."""
    if missing(subject, TaskRoutedLabeler):
        return None
    tasks = subject.tasks
    return tuple(tasks) if tasks is not None else None


def usage_of(labeler: Any) -> dict[str, int] | None:
    """The labeler's call totals so far (UsageReportingLabeler), None when it reports none."""
    return labeler.usage() if has_hook(labeler, UsageReportingLabeler) else None


def tear_down(labeler: Any) -> None:
    """Release what the labeler holds (TearDownLabeler); nothing for a labeler without `teardown`."""
    if has_hook(labeler, TearDownLabeler):
        labeler.teardown()


def check_labeler(cls: Any, where: str) -> Any:
    """`cls` when it is a labeler class (every `Labeler` member, `Config` a dataclass), else NotALabeler naming
    `where` (an entry point, say) and what is missing."""
    return check_plugin(cls, Labeler, where, NotALabeler, "labeler", "transforms/labelers/contract.py")


def check_plugin(cls: Any, protocol: type, where: str, error: type[Exception], kind: str, contract: str) -> Any:
    """`cls` when it is a plug-in class of `protocol` (every member, `Config` a dataclass), else `error` naming
    `where`, what is missing and the `contract` file that declares it. Labelers and environments are checked here."""
    if not isinstance(cls, type):
        raise error(f"{where}: {cls!r} is not a class; a {kind} is a class with {list(members(protocol))}")
    lacking = missing(cls, protocol)
    if lacking:
        raise error(
            f"{where}: {cls.__module__}.{cls.__qualname__} is not a {kind}: it has no {', '.join(lacking)} "
            f"(a {kind} declares {', '.join(members(protocol))}; see {contract})"
        )
    if not (isinstance(cls.Config, type) and dataclasses.is_dataclass(cls.Config)):
        raise error(f"{where}: {cls.__qualname__}.Config must be a dataclass of its settings")
    return cls


def find_plugin(key: str, builtins: dict[str, Any], group: str, installed, check, kind: str, unknown: type) -> Any:
    """The class registered as `key`: a built-in (they win on a name clash), else the entry point of that name among
    `installed()` (the group's entry points; read only when `key` is not built in), passed through
    `check(cls, where)`; else `unknown` naming every known key. Labelers and environments are looked up here."""
    if key in builtins:
        return builtins[key]
    eps = list(installed())
    for ep in eps:
        if ep.name == key:
            return check(ep.load(), f"{kind} entry point {ep.name!r} ({ep.value}, group {group})")
    known = sorted({*builtins, *(ep.name for ep in eps)})
    raise unknown(f"unknown {kind} {key!r}; known: {known}")
