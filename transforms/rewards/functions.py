"""A labeler behind TRL's reward-function signature, configured from params.yaml like its label stage.

In, per call (from `GRPOTrainer`): `prompts` and `completions` (conversational: lists of {role, content};
standard: strings), `completion_ids`, and every other dataset column as a list keyword argument (`reference`,
`tests`, `constraints`, `task`, ...); TRL also passes `trainer_state`, `log_extra` and `log_metric`. Out: one float
per completion, the label's `score`, or None where the labeler cannot label it (a task it does not handle, no
reference, a sandbox that could not run, a timeout): TRL turns None into NaN and leaves it out of the reward sum.

Each function keeps its labeler's configuration, sandbox and label cache: the cache key is the label stage's own
(labeler class, version, config and the values of the columns it reads), so rewards already computed by
`dvc repro` are served from the cache and labels computed online are there for the next `dvc repro`.
"""

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rewardmill.schemas.label import is_part
from rewardmill.transforms.config import ConfigError, cache_root, from_dict, read_params
from rewardmill.transforms.io import storage
from rewardmill.transforms.labelers.base import Label, as_labels, uses_groups
from rewardmill.transforms.labelers.cache import (
    LabelCache,
    call_cache_dir,
    label_group_with_cache,
    label_with_cache,
    record_key,
)
from rewardmill.transforms.labelers.contract import (
    PROMPT_ONLY_COLUMNS,
    CallCachingLabeler,
    declared_tasks,
    has_hook,
    tear_down,
)
from rewardmill.transforms.labelers.params import LabelerParams, resolve

# Columns the call itself provides; everything else a labeler reads must be a dataset column.
PROVIDED = ("completion", "messages", "n_tokens", "turns")


class MissingColumns(ValueError):
    """A labeler reads columns the GRPO dataset does not have."""


def completion_text(completion: Any) -> str:
    """The text a labeler reads as `completion`: a string as is; of a conversational completion, the final answer:
    the assistant messages after the last message of another role (a tool result, feedback), their contents joined
    (a content may be a list of parts, whose text parts count). So a multi-turn completion (TRL's tool calling:
    assistant, tool, assistant) is judged by its last answer, as a rollout's `completion` is, never by an answer an
    earlier turn gave and a later one took back."""
    if isinstance(completion, str):
        return completion
    messages = list(completion or [])
    last_other = max((i for i, m in enumerate(messages) if m.get("role", "assistant") != "assistant"), default=-1)
    texts = []
    for message in messages[last_other + 1 :]:
        content = message.get("content") or ""
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content if part.get("type", "text") == "text")
        texts.append(content)
    return "".join(texts)


def completion_turns(completion: Any) -> list[dict] | None:
    """A conversational completion as the `turns` trajectory labelers read (every message after the prompt); None
    for a string (a single turn)."""
    return None if isinstance(completion, str) else [dict(m) for m in completion or []]


def prompt_messages(prompt: Any) -> list[dict]:
    """The rollouts' `messages` column from a prompt: conversational as is, a string as one user turn."""
    return [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)


def labeler_inputs(
    reads: Sequence[str],
    prompts: list,
    completions: list,
    completion_ids: list | None,
    columns: dict[str, list],
) -> list[tuple]:
    """One tuple of the `reads` values per completion (pure). MissingColumns when a column is in neither."""
    missing = [c for c in reads if c not in columns and c not in PROVIDED]
    if "n_tokens" in reads and "n_tokens" not in columns and completion_ids is None:
        missing.append("n_tokens")
    if missing:
        raise MissingColumns(missing)
    provided = {
        "completion": lambda i: completion_text(completions[i]),
        "messages": lambda i: prompt_messages(prompts[i]),
        "n_tokens": lambda i: len(completion_ids[i]),
        "turns": lambda i: completion_turns(completions[i]),
    }
    return [tuple(columns[c][i] if c in columns else provided[c](i) for c in reads) for i in range(len(completions))]


def reward_of(result: Label | list[Label] | None) -> float | None:
    """A label's score as a reward; one label per aspect (a multi-head reward model) gives the mean of their scores,
    and parts of an aspect (a rubric's criteria) are left out, as the aspect sums them up; None when nothing was
    scored or the call failed."""
    if result is None:
        return None
    scores = [
        one.score
        for one in as_labels(result)
        if one.score is not None and one.reject_reason is None and not is_part(one.aspect)
    ]
    return sum(scores) / len(scores) if scores else None


class LabelerReward:
    """One labeler of params `labelers.<name>` as a TRL reward function (its `__name__` is `name`, which TRL logs
    as `rewards/<name>/mean`). Picklable: the labeler, its sandbox and its cache are built on first call."""

    def __init__(
        self,
        name: str,
        params: LabelerParams,
        cache_dir: str | None = None,
        flush_every: int = 64,
        prompts: str | None = None,
    ):
        labeler_cls, config = resolve(name, params)  # a bad config fails here, before training starts
        self.__name__ = name
        self.params = params
        self.labeler_cls = labeler_cls
        self.config = config
        self.cache_dir = cache_dir
        self.flush_every = flush_every
        # the prompts folder (data/prompts) whose prompt-only columns (metadata) a labeler reads, joined by prompt_id
        # as the label stage joins them from --prompts; None: the dataset must carry them
        self.prompts = prompts
        self._labeler = None
        self._cache = None
        self._joined: dict[str, dict] | None = None

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("_labeler", "_cache", "_joined")}

    def __setstate__(self, state):
        self.__dict__.update(state, _labeler=None, _cache=None, _joined=None)

    def _with_prompt_columns(self, columns: dict[str, list]) -> dict[str, list]:
        """`columns` with the prompt-only columns the labeler reads and the dataset lacks, looked up by `prompt_id`
        in the prompts folder (when one was given)."""
        wanted = [c for c in self.labeler.reads if c in PROMPT_ONLY_COLUMNS and c not in columns]
        if not wanted or self.prompts is None or "prompt_id" not in columns:
            return columns
        if self._joined is None:
            self._joined = prompt_columns(self.prompts, list(PROMPT_ONLY_COLUMNS))
        missing = sorted({pid for pid in columns["prompt_id"] if pid not in self._joined})
        if missing:
            raise MissingColumns(
                f"reward function {self.name!r}: prompts {missing[:3]} are not in {self.prompts} (train on the `rl` "
                "rows of the same run as the prompts folder)"
            )
        return {**columns, **{c: [self._joined[pid][c] for pid in columns["prompt_id"]] for c in wanted}}

    @property
    def name(self) -> str:
        return self.__name__

    @property
    def labeler(self):
        if self._labeler is None:
            self._labeler = self.labeler_cls(self.config)
            if self.cache_dir:
                self._cache = LabelCache(self.cache_dir, self.labeler_cls, self.config, self.flush_every)
                if has_hook(self._labeler, CallCachingLabeler):
                    self._labeler.set_call_cache(call_cache_dir(self.cache_dir))
        return self._labeler

    @property
    def tasks(self) -> tuple[str, ...] | None:
        tasks = self.params.tasks if self.params.tasks is not None else declared_tasks(self.labeler_cls)
        return tuple(tasks) if tasks else None

    def check_columns(self, columns: Iterable[str]) -> None:
        """MissingColumns naming the columns this labeler reads that `columns` (a dataset's) lacks."""
        columns = set(columns)
        missing = [c for c in self.labeler.reads if c not in columns and c not in PROVIDED]
        if missing:
            raise self._missing(missing, columns)

    def __call__(self, prompts, completions, completion_ids=None, **columns) -> list[float | None]:
        log_metric, log_extra = columns.pop("log_metric", None), columns.pop("log_extra", None)
        columns.pop("trainer_state", None)
        columns.pop("environments", None)
        labels = self.labels(prompts, completions, completion_ids, columns)
        rewards = [reward_of(label) for label in labels]
        if log_metric is not None:
            log_metric(f"{self.name}/scored", sum(r is not None for r in rewards) / max(len(rewards), 1))
        if log_extra is not None:
            verdicts = [",".join(one.verdict for one in as_labels(x)) if x else "not_applicable" for x in labels]
            log_extra(f"{self.name}_verdict", verdicts)
        return rewards

    def labels(self, prompts, completions, completion_ids=None, columns: dict | None = None) -> list[Label | None]:
        """The label of each completion (None: its task is not one this labeler handles), through the label stage's
        own cached labeling (cache.label_with_cache, or label_group_with_cache for group labelers)."""
        labeler = self.labeler
        columns = self._with_prompt_columns(columns or {})
        try:
            values = labeler_inputs(labeler.reads, prompts, completions, completion_ids, columns)
        except MissingColumns as exc:
            raise self._missing(exc.args[0], columns) from None
        tasks = self.tasks
        routed = columns.get("task") if tasks else None  # rows without a task column are all labeled
        applies = [routed is None or routed[i] is None or routed[i] in tasks for i in range(len(values))]
        labels: list[Label | None] = [None] * len(values)
        if uses_groups(self.labeler_cls, self.config):
            # A labeler that compares a prompt's completions (self_consistency, pairwise judges) sees the batch's
            # completions of each prompt together: GRPO's group of `num_generations`.
            groups: dict[str, list[int]] = {}
            for i in (i for i, ok in enumerate(applies) if ok):
                groups.setdefault(record_key((prompt_messages(prompts[i]),)), []).append(i)
            for members in groups.values():
                found = label_group_with_cache(labeler, self._cache, [values[i] for i in members])
                for i, label in zip(members, found, strict=True):
                    labels[i] = label
        else:
            todo = [i for i, ok in enumerate(applies) if ok]
            for i, label in zip(todo, label_with_cache(labeler, self._cache, [values[i] for i in todo]), strict=True):
                labels[i] = label
        if self._cache is not None:
            self._cache.flush()
        return labels

    def _missing(self, missing: list[str], columns) -> MissingColumns:
        return MissingColumns(
            f"reward function {self.name!r} (labeler {self.params.labeler!r}) reads {missing}, which the dataset "
            f"does not have (its columns: {sorted(columns)}). Train on a dataset with those columns (rewardmill's "
            f"`rl` config has reference, tests, constraints and task; a prompt's `metadata` comes from the prompts "
            f"folder: from_params(..., prompts='data/prompts')), add them with `ds.map`, or pick another labeler."
        )

    def close(self) -> None:
        """Flush the cache and stop the labeler's helpers (sandboxes, verifier processes)."""
        if self._cache is not None:
            self._cache.flush()
        if self._labeler is not None:
            tear_down(self._labeler)
        self._labeler = None


def from_params(
    params: str | Path | dict = "params.yaml",
    names: Sequence[str] | None = None,
    *,
    cache: bool | str = True,
    prompts: str | None = None,
) -> list[LabelerReward]:
    """One reward function per name under params `labelers:` (the label stages' keys), each with its config.

    `names` None: the rule verifiers of `assemble.aggregate.gates`. `cache` True: the label stages' cache
    (`<cache.root>/labels`, relative to the params file's folder); a path or URL: that folder; False: none.
    `prompts`: the prompts folder (relative to the params file's folder, as `data/prompts`) for labelers that read
    a prompt's metadata (reasoning_gym, verifiers), joined by the rows' `prompt_id` as the label stage joins them.
    A name that is not in params, or a bad config, fails here with the params key in the message."""
    if isinstance(params, dict):
        data, root = params, Path.cwd()
    else:
        path = Path(params)
        data, root = read_params(path), path.resolve().parent
    labelers = data.get("labelers") or {}
    if names is None:
        names = ((data.get("assemble") or {}).get("aggregate") or {}).get("gates") or []
        if not names:
            raise ConfigError("params.yaml: no reward names given and 'assemble.aggregate.gates' is empty")
    if isinstance(names, str):
        names = [names]
    unknown = [n for n in names if n not in labelers]
    if unknown:
        raise ConfigError(f"params.yaml: {unknown} not under 'labelers'; known: {sorted(labelers)}")
    cache_dir = None
    if cache is True:
        where = cache_root(data)
        cache_dir = storage.join(where if storage.is_url(where) else str(root / where), "labels")
    elif cache:
        cache_dir = str(cache)
    if prompts is not None and not storage.is_url(prompts):
        prompts = str(root / prompts)
    return [
        LabelerReward(
            name, from_dict(LabelerParams, labelers[name] or {}, f"labelers.{name}"), cache_dir, prompts=prompts
        )
        for name in names
    ]


def prompt_columns(prompts_dir: str, names: list[str]) -> dict[str, dict]:
    """prompt_id -> {name: value} of the prompts folder's `names` columns."""
    import io

    import pyarrow.parquet as pq

    out = {}
    for path in storage.matching(prompts_dir, "part-*.parquet"):
        for row in pq.read_table(io.BytesIO(storage.read_bytes(path)), columns=["prompt_id", *names]).to_pylist():
            out[row.pop("prompt_id")] = row
    if not out:
        raise MissingColumns(f"{prompts_dir}: no prompts (part-*.parquet) to join a prompt's metadata from")
    return out
