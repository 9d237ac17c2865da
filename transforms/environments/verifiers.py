"""`verifiers`: a Prime Intellect verifiers environment (an installed module exporting a `vf.Taskset`) runs its
episodes inside the rollouts stage, on any backend.

The prompts come from the same taskset (prompts source kind `verifiers`), each carrying its task. An episode follows
verifiers' chat harness (the `null` harness of verifiers 0.4): the task's system prompt and prompt open it; each
assistant turn either calls tools, whose results come back as tool messages, or answers, which ends the episode; the
task's `@vf.stop` conditions are checked before every further turn; `rollouts.environment.max_turns` caps the turns.
The tools are the taskset's toolsets, served as in-memory MCP servers under the names verifiers advertises
(`<server>_<tool>`). The policy calls them in the chat template's own tool format where it has one, else in the text
protocol (transforms/environments/tool_calls.py), as `python_tool` does.

At the end the task's own rubric scores the episode (`Task.score`, as verifiers' rollouts do): every reward function's
score and weight go into the trajectory's info (`rewards`), and the weighted sum verifiers calls the trace's reward
is `env_reward` (it may exceed 1 when the weights do). The `verifiers` labeler turns each function into a label.

Run here, tool code runs in the rollouts worker: a toolset that executes the policy's code must sandbox it itself,
as it would in verifiers' subprocess runtime. Tasks that need a verifiers runtime (a container, reward functions
that take `runtime`, toolsets with per-task state) are refused when the stage starts, naming what.
"""

import json
from dataclasses import dataclass, field, replace
from typing import Any

from rewardmill.transforms.environments.contract import StepResult
from rewardmill.transforms.environments.tool_calls import assistant_turn, protocol_prompt
from rewardmill.transforms.sources import vf_tasks


@dataclass(frozen=True)
class VerifiersConfig:
    id: str  # the environment module (its taskset), as `vf.load_taskset` resolves it
    args: dict[str, Any] = field(default_factory=dict)  # its TasksetConfig fields, e.g. {split: test, task: {...}}
    # true: the text protocol for tool calls (a system message); false: the chat template's own tool format; null: the
    # template's own when it renders tools, else the text protocol
    system_prompt: bool | None = None
    # Filled in when the params load, never written: the environment's code and the library, so the rollout ids and
    # the cache change with them. A value that differs from what is installed is an error.
    module: dict[str, str | None] | None = None
    library: str | None = None

    def __post_init__(self):
        if not self.id:
            raise ValueError("id must name a verifiers environment module")
        installed, library = vf_tasks.module_identity(self.id), vf_tasks.library_version()
        for key, have, want in (("module", self.module, installed), ("library", self.library, library)):
            if have is not None and have != want:
                raise ValueError(f"{key} {have!r} is not what is installed ({want!r}); leave it out of params")
        object.__setattr__(self, "module", installed)
        object.__setattr__(self, "library", library)


class VerifiersEnvironment:
    name = "verifiers"
    version = "1"
    Config = VerifiersConfig

    def __init__(self, config: VerifiersConfig):
        self.config = config if config.system_prompt is not None else replace(config, system_prompt=True)
        self._auto = config.system_prompt is None
        self._taskset = vf_tasks.load_taskset(config.id, config.args)
        vf_tasks.check_offline(self._taskset)
        self._tools = vf_tasks.ToolServers(self._taskset)
        self._tasks: dict[str, Any] = {}  # the whole record (canonical JSON) -> its task, rebuilt and checked once

    def _task(self, record: dict[str, Any]):
        key = json.dumps(record, sort_keys=True)  # the data too: an edited record is rebuilt, and its hash refused
        if key not in self._tasks:
            self._tasks[key] = vf_tasks.task_from_record(self._taskset, record)
        return self._tasks[key]

    def use_template(self, renders_tools: bool | None) -> None:
        if self._auto:
            self.config = replace(self.config, system_prompt=not renders_tools)

    def tools(self) -> list[dict[str, Any]]:
        return list(self._tools.schemas)

    def system_message(self) -> dict[str, str] | None:
        if self.config.system_prompt and self._tools.schemas:
            return {"role": "system", "content": protocol_prompt(self._tools.schemas)}
        return None

    def parse(self, text: str, turn: int) -> dict[str, Any]:
        if not self._tools.schemas:
            return {"role": "assistant", "content": text}
        return assistant_turn(text, turn, self._tools.names(), self.config.system_prompt)

    def reset(self, prompt: dict[str, Any]) -> dict[str, Any]:
        record = _task_record(prompt)
        task = self._task(record)
        return {"task": record, "prompt": vf_tasks.prompt_messages(task.data), "turns": []}

    def step(self, state: dict[str, Any], assistant: dict[str, Any]) -> tuple[dict[str, Any], StepResult]:
        task = self._task(state["task"])
        calls, errors = assistant.get("tool_calls") or [], assistant.get("tool_errors") or []
        plain = {k: assistant[k] for k in ("role", "content", "reasoning", "tool_calls") if assistant.get(k)}
        turns = [*state["turns"], {"role": "assistant", "content": assistant.get("content") or "", **plain}]
        if not calls and not errors:  # an answer: the harness ends, the rubric scores
            return self._finish(task, {**state, "turns": turns}, "agent_completed")
        messages = [_tool_message(e["id"], None, f"error: {e['error']}") for e in errors]
        failed = len(errors)
        for call in calls:
            text, is_error = self._tools.call(call["function"]["name"], _arguments(call["function"]["arguments"]))
            failed += is_error
            messages.append(_tool_message(call["id"], call["function"]["name"], text))
        state = {**state, "turns": [*turns, *messages]}
        info = {"calls": len(calls), "tool_errors": failed}
        trace = vf_tasks.trace_of(task, state["prompt"], state["turns"])
        if stop := vf_tasks.stop_condition(task, trace):
            state, result = self._finish(task, state, stop)
            return state, StepResult(messages=messages, done=True, reward=result.reward, info={**info, **result.info})
        return state, StepResult(messages=messages, info=info)

    def _finish(self, task, state: dict[str, Any], stop: str) -> tuple[dict[str, Any], StepResult]:
        rewards = vf_tasks.score(task, vf_tasks.trace_of(task, state["prompt"], state["turns"]))
        total = sum(r["score"] * r["weight"] for r in rewards.values())
        info = {"stop": stop, "rewards": rewards, "reward": total}
        return state, StepResult(done=True, reward=total, info=info)


def _task_record(prompt: dict[str, Any]) -> dict[str, Any]:
    metadata = prompt.get("metadata")
    metadata = json.loads(metadata) if isinstance(metadata, str) else metadata or {}
    if vf_tasks.METADATA_KEY not in metadata:
        raise ValueError("the prompt has no verifiers task in its metadata (prompts source kind `verifiers`)")
    return metadata[vf_tasks.METADATA_KEY]["task"]


def _arguments(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return {}
    return arguments if isinstance(arguments, dict) else {}


def _tool_message(call_id: str, name: str | None, content: str) -> dict[str, Any]:
    message = {"role": "tool", "tool_call_id": call_id, "content": content}
    return {**message, "name": name} if name else message
