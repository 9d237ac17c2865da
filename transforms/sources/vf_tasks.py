"""Prime Intellect's verifiers (PyPI 0.4.x, its `verifiers.v1` stack) as the prompts, rollouts and label stages see it.

A verifiers environment is an installed module exporting a `Taskset` (`vf.load_taskset`): its tasks carry a
`TaskData` row (the prompt, an optional system prompt, the task's own fields such as `answer`), and the task class
declares the rubric (`@vf.reward(weight=...)` methods, plus reward functions plugged through its config), stop
conditions (`@vf.stop`) and tools (`vf.Toolset`s, MCP servers). This module is the one place that talks to the
library:

- `load_taskset(id, args)`: the taskset as `vf.load_taskset` builds it from `{id, **args}` (its own config class
  validates the args and names a bad one);
- `task_record` / `task_from_record`: a task as JSON (its class, key, content hash and wire data) and back, so a prompt
  row carries its task and the rollouts and label stages rebuild the very same one (the hash is checked);
- `prompt_messages`: the conversation the chat harness opens with (the task's system prompt as a system message, then
  the prompt);
- `trace_of` + `score`: a conversation as a `vf.Trace` (prompt nodes, then the sampled turns) scored by the task's
  own `Task.score`, which is what verifiers' rollouts call: every reward function's score and weight;
- `ToolServers`: the taskset's and task's toolsets as the MCP servers verifiers would start, reached in memory
  (`mcp.Client`): the tool schemas the harness would advertise (`<server>_<tool>`) and the calls' results as its chat
  harness renders them.
"""

import asyncio
import hashlib
import inspect
import json
from functools import cache
from importlib.metadata import packages_distributions, version
from pathlib import Path
from typing import Any

METADATA_KEY = "verifiers"  # the prompt's metadata entry that holds its task


def _vf():
    try:
        import verifiers.v1 as vf
    except ImportError as exc:  # the extra is not installed
        raise ImportError(
            "verifiers environments need the verifiers package: pip install 'verifiers==0.4.0' (the `environments` "
            "extra)"
        ) from exc
    return vf


def load_taskset(env_id: str, args: dict[str, Any]):
    """The taskset `env_id` with its config from `args` (its TasksetConfig fields: a split, a size, `task: {...}`)."""
    vf = _vf()
    from verifiers.v1.utils.loaders import taskset_config_type

    config = taskset_config_type(env_id).model_validate({**args, "id": env_id})
    return vf.load_taskset(config)


def library_version() -> str:
    return version("verifiers")


@cache
def module_identity(env_id: str) -> dict[str, str | None]:
    """What identifies the environment's code: its module, the installed distribution's version (None for a module on
    the path that no distribution installed) and a sha256 of its source files, so an edit changes the rollout ids."""
    from verifiers.v1.utils.loaders import import_taskset

    module = import_taskset(env_id)
    top = module.__name__.split(".")[0]
    dists = packages_distributions().get(top, [])
    files = _source_files(Path(module.__file__))
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(files[0].parent)).encode() + b"\0" + path.read_bytes() + b"\0")
    return {
        "module": module.__name__,
        "version": version(dists[0]) if dists else None,
        "source_sha256": digest.hexdigest(),
    }


def _source_files(path: Path) -> list[Path]:
    """A package's .py files (sorted, the __init__ first) or a lone module."""
    if path.name != "__init__.py":
        return [path]
    return [path, *sorted(p for p in path.parent.rglob("*.py") if p != path and "__pycache__" not in p.parts)]


def tasks(taskset, limit: int | None):
    """The taskset's tasks in its order (its system-prompt override applied), the first `limit` when given; an
    infinite taskset needs a limit."""
    if limit is None and not taskset.bounded:
        raise ValueError("the taskset is infinite (a generator): set `limit`")
    return list(taskset.take(limit) if limit is not None else taskset)


def task_record(task) -> dict[str, Any]:
    """A task as JSON: its class name, stable key, content hash and wire data."""
    return {
        "type": type(task).__name__,
        "key": task.key,
        "hash": task.hash,
        "data": task.data.model_dump(mode="json", exclude_none=True),
    }


def task_from_record(taskset, record: dict[str, Any]):
    """The task a `task_record` describes, built by the taskset's task class with the taskset's task config; raises
    when the data no longer hashes the same (another version of the environment, or edited data)."""
    cls = type(taskset).task_type()
    if record.get("type") != cls.__name__:
        raise ValueError(f"the prompt's task is a {record.get('type')!r}; this taskset builds {cls.__name__!r}")
    task = cls(cls.data_type().model_validate(record["data"]), taskset.config.task)
    if task.hash != record["hash"]:
        raise ValueError(f"task {record.get('key')!r}: its data hashes to {task.hash[:12]}, not {record['hash'][:12]}")
    return task


def prompt_messages(data) -> list[dict[str, Any]]:
    """The messages a chat harness opens with: the system prompt (a system message), then the prompt (a user message,
    or the task's own messages)."""
    messages = [] if data.system_prompt is None else [{"role": "system", "content": data.system_prompt}]
    if isinstance(data.prompt, str):
        messages.append({"role": "user", "content": data.prompt})
    elif data.prompt is not None:
        messages.extend(_plain_message(m.model_dump(mode="json", exclude_none=True)) for m in data.prompt)
    return messages


def _plain_message(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if isinstance(content, list):  # text parts joined: PROMPT_V1 messages are text
        content = "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return {"role": message["role"], "content": content or ""}


def trace_of(task, prompt: list[dict[str, Any]], turns: list[dict[str, Any]]):
    """A `vf.Trace` of the task: the prompt messages (not sampled), then the episode's turns (assistant ones sampled),
    in one branch, as verifiers' chat harness records a rollout."""
    from verifiers.v1.configs.agent import AgentConfig
    from verifiers.v1.graph import MessageNode
    from verifiers.v1.trace import AgentInfo, Trace, TraceTask

    messages = [(m, False) for m in prompt] + [(t, t["role"] == "assistant") for t in turns]
    nodes = [
        MessageNode(parent=None if i == 0 else i - 1, message=_vf_message(m), sampled=sampled)
        for i, (m, sampled) in enumerate(messages)
    ]
    task_info = TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash)
    return Trace(task=task_info, agent=AgentInfo(config=AgentConfig()), nodes=nodes)


def _vf_message(message: dict[str, Any]):
    from verifiers.v1.types import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage

    role, content = message["role"], message.get("content")
    if role == "system":
        return SystemMessage(content=content or "")
    if role == "user":
        return UserMessage(content=content or "")
    if role == "tool":
        return ToolMessage(
            tool_call_id=message.get("tool_call_id") or "", content=content or "", name=message.get("name")
        )
    calls = [
        ToolCall(
            id=c.get("id") or "", name=c["function"]["name"], arguments=_arguments(c["function"].get("arguments"))
        )
        for c in message.get("tool_calls") or []
    ]
    return AssistantMessage(content=content, reasoning_content=message.get("reasoning"), tool_calls=calls or None)


def _arguments(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments or {}, sort_keys=True)


def score(task, trace) -> dict[str, dict[str, float]]:
    """The task's rubric on the trace, as `Task.score` computes it in a verifiers rollout: reward name -> {score,
    weight} (a reward function returning a mapping gives several names)."""
    asyncio.run(task.score(trace))
    return {name: {"score": r.score, "weight": r.weight} for name, r in sorted(trace.rewards.items()) if r is not None}


def stop_condition(task, trace) -> str | None:
    """The first of the task's `@vf.stop` hooks on the trace that fires (verifiers checks them before each model
    call), by name; None when none does."""

    async def first():
        for fn in task.hooks("stop"):
            result = fn(trace)
            if inspect.isawaitable(result):
                result = await result
            if not isinstance(result, bool):
                raise TypeError(f"@stop {fn.__name__} returned {type(result).__name__}, not bool")
            if result:
                return fn.__name__
        return None

    return asyncio.run(first())


def check_offline(taskset) -> None:
    """Raise for what needs a verifiers runtime (a container or sandbox) that in-process episodes do not have: a
    reward or stop function that takes the `runtime`, a task that needs a container, a toolset with per-task state."""
    cls = type(taskset).task_type()
    if cls.NEEDS_CONTAINER:
        raise ValueError(f"task {cls.__name__} needs a container runtime; run it with verifiers' own eval")
    probe = cls(cls.data_type().model_construct(), taskset.config.task)
    for attr in ("reward", "stop", "metric"):
        for fn in probe.hooks(attr):
            param = inspect.signature(fn).parameters.get("runtime")
            if param is not None and param.default is inspect.Parameter.empty:
                raise ValueError(f"@{attr} {fn.__name__} needs a verifiers runtime (a sandbox): not supported here")


class ToolServers:
    """The taskset's and its task class's toolsets as in-memory MCP servers: `schemas` as the chat harness advertises
    them (`<server>_<tool>`, the MCP input schema as `parameters`), `call(name, arguments)` the result text as the
    harness renders it (an MCP tool error comes back as its text, with is_error)."""

    def __init__(self, taskset):
        self._servers: dict[str, Any] = {}
        self._dispatch: dict[str, tuple[str, str]] = {}
        self.schemas: list[dict[str, Any]] = []
        cls = type(taskset).task_type()
        toolsets = [*type(taskset).toolsets(taskset.config), *cls.toolsets(taskset.config.task)]
        if toolsets:
            asyncio.run(self._start(toolsets))

    async def _start(self, toolsets) -> None:
        from mcp.client.client import Client
        from mcp.server.mcpserver import MCPServer
        from verifiers.v1.mcp.server import ServerBase
        from verifiers.v1.state import State

        for toolset in toolsets:
            if toolset._state_cls is not State or type(toolset).setup_task is not ServerBase.setup_task:
                raise ValueError(f"toolset {type(toolset).__name__} keeps per-task state: not supported here")
            await toolset.setup()
            server = MCPServer(toolset.server_name or type(toolset).__name__)
            toolset.register(server)
            name = toolset.server_name
            self._servers[name] = server
            async with Client(server) as client:
                listed = await client.list_tools()
            for tool in listed.tools:
                full = f"{name}_{tool.name}" if name else tool.name
                if full in self._dispatch:
                    raise ValueError(f"duplicate tool name {full!r} across the toolsets")
                self._dispatch[full] = (name, tool.name)
                self.schemas.append(
                    {
                        "type": "function",
                        "function": {
                            "name": full,
                            "description": tool.description or "",
                            "parameters": tool.input_schema,
                        },
                    }
                )

    def names(self) -> set[str]:
        return set(self._dispatch)

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """(result text, is_error) of one call; an unknown tool is an error result, never an exception."""
        if name not in self._dispatch:
            return f"unknown tool {name[:80]!r}; tools: {sorted(self._dispatch)}", True
        server_name, raw = self._dispatch[name]
        return asyncio.run(self._call(self._servers[server_name], raw, arguments))

    @staticmethod
    async def _call(server, raw: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        from mcp.client.client import Client

        async with Client(server) as client:
            result = await client.call_tool(raw, arguments)
        texts = [block.text if block.type == "text" else str(block) for block in result.content]
        return "\n".join(texts) if texts else str(result.content), bool(result.is_error)
