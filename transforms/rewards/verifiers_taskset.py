"""An exported `rl` config as a Prime Intellect verifiers taskset (verifiers 0.4, `verifiers.v1`), its rubric the
project's labelers: what a verifiers user trains or evaluates on, with the scorers that labeled the dataset.

    from rewardmill.rewards.verifiers_taskset import ExportedConfig, ExportedTaskset

    taskset = ExportedTaskset(ExportedConfig(export="export", task={"labelers": ["math_answer"]}))
    tasks = list(taskset)  # vf.Task objects, scored by Task.score as every verifiers rollout is

(verifiers' loader resolves a taskset id to a top-level module, so this one is built directly, as above). Each row
of the config's split is one task: its prompt, and the columns the labelers read (`reference`, `tests`,
`constraints`, `task`, `prompt_id`). One reward function, `labels`, returns a score per labeler (verifiers records
each under the labeler's params key, weight 1), computed by `rewardmill.rewards.from_params`: the labelers' own
configs, sandbox and label cache, and a prompt's `metadata` from `prompts` (reasoning_gym, verifiers) by its id.
A labeler that cannot label a completion (another task) records no score for it.
"""

from typing import Any

import verifiers.v1 as vf

from rewardmill.rewards.functions import from_params

COLUMNS = ("prompt_id", "task", "reference", "tests", "constraints")  # what the labelers read of a row


class ExportedData(vf.TaskData):
    prompt_id: str
    task: str
    reference: str | None = None
    tests: str | None = None
    constraints: str | None = None


class ExportedTaskConfig(vf.TaskConfig):
    params: str = "params.yaml"  # the project's params (its `labelers:` entries)
    labelers: list[str] | None = None  # params keys; None: assemble.aggregate.gates
    prompts: str | None = "data/prompts"  # the prompts folder, for labelers that read a prompt's metadata
    cache: bool = True  # the label stages' cache


class ExportedTask(vf.Task[ExportedData, vf.State, ExportedTaskConfig]):
    @vf.reward(weight=1.0)
    async def labels(self, trace: vf.Trace) -> dict[str, float]:
        opening = 1 if isinstance(self.data.prompt, str) else len(self.data.prompt or [])
        opening += self.data.system_prompt is not None
        completion = [m.model_dump(mode="json", exclude_none=True) for m in trace.messages[opening:]]
        prompt = [m.model_dump(mode="json", exclude_none=True) for m in trace.messages[:opening]]
        row = {c: [getattr(self.data, c)] for c in COLUMNS}
        scores = {}
        for reward in _rewards(self.config):
            value = reward([prompt], [completion], **row)[0]
            if value is not None:
                scores[reward.name] = float(value)
        return scores


_FUNCTIONS: dict[tuple, list] = {}


def _rewards(config: ExportedTaskConfig) -> list:
    """The reward functions of `config`, built once per process (each keeps its labeler and sandbox)."""
    key = (config.params, tuple(config.labelers or ()), config.prompts, config.cache)
    if key not in _FUNCTIONS:
        _FUNCTIONS[key] = from_params(config.params, config.labelers, cache=config.cache, prompts=config.prompts)
    return _FUNCTIONS[key]


class ExportedConfig(vf.TasksetConfig):
    export: str = "export"  # the export folder (or a Hub repo id, with network)
    config: str = "rl"
    split: str = "train"
    task: ExportedTaskConfig = ExportedTaskConfig()


class ExportedTaskset(vf.Taskset[ExportedTask, ExportedConfig]):
    def load(self) -> list[ExportedTask]:
        from datasets import load_dataset

        rows = load_dataset(self.config.export, self.config.config, split=self.config.split)
        return [ExportedTask(_data(i, row), self.config.task) for i, row in enumerate(rows)]


def _data(index: int, row: dict[str, Any]) -> ExportedData:
    prompt = [{"role": m["role"], "content": m["content"]} for m in row["prompt"]]
    system = prompt[0]["content"] if prompt and prompt[0]["role"] == "system" else None
    return ExportedData(
        idx=index,
        id=row["prompt_id"],
        prompt=prompt[1:] if system is not None else prompt,
        system_prompt=system,
        **{c: row.get(c) for c in COLUMNS},
    )


__all__ = ["ExportedTaskset"]
