"""Prompts from reasoning-gym's procedural task generators (PyPI `reasoning-gym`, the `environments` extra).

Each task's entries are generated with the seed, count and config the params give, and each becomes one prompt: the
question as the user turn (after an optional system prompt; reasoning-gym's "default" asks for the answer between
`<answer>` tags, which its scorers expect), the entry's answer as `reference`, task `reasoning`, and in `metadata`
the entry's identity and its own metadata under `reasoning_gym` (task, package version, seed, index, config,
metadata), which the `reasoning_gym` labeler hands back to the task's scorer. An entry whose metadata is not JSON
(Parquet keeps JSON) is that row's reject (`bad_metadata`), named by task and index."""

import functools
import json
from collections.abc import Iterator
from typing import Any

from rewardmill.transforms.sources.normalize import RecordError

TASK = "reasoning"
METADATA_KEY = "reasoning_gym"


@functools.cache  # the labeler asks for it on every row: one metadata lookup per process
def package_version() -> str:
    from importlib.metadata import version

    return version("reasoning-gym")


def system_text(system_prompt: str | None) -> str | None:
    """A key of reasoning-gym's SYSTEM_PROMPTS (default, simple, direct, ...), any other text as it is, or None."""
    if system_prompt is None:
        return None
    from reasoning_gym.utils import SYSTEM_PROMPTS

    return SYSTEM_PROMPTS.get(system_prompt, system_prompt)


def check_tasks(tasks: dict[str, dict[str, Any]]) -> None:
    """Every task name is one reasoning-gym registers, and its config builds: raise naming the first that does not."""
    try:
        from reasoning_gym.factory import DATASETS
    except ImportError as exc:  # the extra is not installed
        raise ImportError(
            "prompts.sources kind reasoning_gym needs the reasoning-gym package: pip install 'reasoning-gym==0.1.25' "
            "(the `environments` extra)"
        ) from exc
    for name, spec in tasks.items():
        if name not in DATASETS:
            close = sorted(t for t in DATASETS if t.startswith(name[:3]))[:5]
            raise ValueError(f"reasoning-gym has no task {name!r}" + (f"; similar: {close}" if close else ""))
        make(name, spec, size=1)


def make(name: str, spec: dict[str, Any], size: int | None = None):
    """The task's dataset as reasoning-gym builds it: `create_dataset(name, seed=..., size=..., **config)`."""
    from reasoning_gym import create_dataset

    return create_dataset(name, seed=spec["seed"], size=spec["count"] if size is None else size, **spec["config"])


def generate(
    source: str, tasks: dict[str, dict[str, Any]], system_prompt: str | None
) -> Iterator[tuple[str, dict[str, Any] | RecordError]]:
    """(row id, record) per entry of every task, tasks in name order; a bad entry as (row id, RecordError)."""
    version = package_version()
    system = system_text(system_prompt)
    for name in sorted(tasks):
        spec = tasks[name]
        dataset = make(name, spec)
        for index in range(spec["count"]):
            row_id = f"{source}:{name}:{index}"
            entry = dataset[index]
            identity = {"task": name, "version": version, "seed": spec["seed"], "index": index}
            try:
                kept = json.loads(json.dumps(entry["metadata"], sort_keys=True))
            except (TypeError, ValueError) as exc:
                yield row_id, RecordError("bad_metadata", f"task {name} entry {index}: metadata is not JSON ({exc})")
                continue
            messages = [{"role": "user", "content": entry["question"]}]
            yield (
                row_id,
                {
                    "messages": [{"role": "system", "content": system}, *messages] if system else messages,
                    "reference": str(entry["answer"]),
                    "task": TASK,
                    "metadata": {METADATA_KEY: {**identity, "config": spec["config"], "metadata": kept}},
                },
            )
