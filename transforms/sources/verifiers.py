"""Prompts from a Prime Intellect verifiers environment's taskset (PyPI `verifiers`, the `environments` extra).

Each task becomes one prompt: the messages verifiers' chat harness opens with (the task's system prompt, then its
prompt), the task's `answer` as `reference` when it has one, task `environment`, and in `metadata` under `verifiers`
the environment (id, args, module version and source digest, library version) and the task itself (class, key,
content hash and all of its data: `answer`, `info` and the fields of its own). The `verifiers` environment and
labeler rebuild the task from it, so rollouts and labels use the same one. A task whose data is not JSON is that
row's reject (`bad_task`), named by its index.
"""

import json
from collections.abc import Iterator
from typing import Any

from rewardmill.transforms.sources import vf_tasks
from rewardmill.transforms.sources.normalize import RecordError

TASK = "environment"


def check(env_id: str, args: dict[str, Any]) -> None:
    """The module resolves and its config takes `args`."""
    vf_tasks.load_taskset(env_id, args)


def generate(
    source: str, env_id: str, args: dict[str, Any], limit: int | None
) -> Iterator[tuple[str, dict[str, Any] | RecordError]]:
    """(row id, record) per task in the taskset's order; a bad task as (row id, RecordError)."""
    taskset = vf_tasks.load_taskset(env_id, args)
    environment = {
        "id": env_id,
        "args": args,
        "module": vf_tasks.module_identity(env_id),
        "library": vf_tasks.library_version(),
    }
    for index, task in enumerate(vf_tasks.tasks(taskset, limit)):
        row_id = f"{source}:{index}"
        try:
            record = json.loads(json.dumps(vf_tasks.task_record(task), sort_keys=True))
            messages = vf_tasks.prompt_messages(task.data)
        except (TypeError, ValueError) as exc:
            yield row_id, RecordError("bad_task", f"task {index}: {exc}"[:500])
            continue
        answer = record["data"].get("answer")
        yield (
            row_id,
            {
                "messages": messages,
                "reference": None if answer is None else str(answer),
                "task": TASK,
                "metadata": {vf_tasks.METADATA_KEY: {"environment": environment, "task": record}},
            },
        )
