"""Recorded agent transcripts (JSON Lines) as prompts with their trajectories, to label without re-sampling.

One line is one transcript, in OpenAI chat format (`{"messages": [...], "tools": [...]}`: assistant messages with
`tool_calls`, `tool` messages with the `tool_call_id` they answer) or ShareGPT (`{"conversations": [{"from": "human",
"value": ...}, ...]}`, with `gpt`, `system`, `function_call` and `observation` turns). A line may also carry
`reference`, `task` and `metadata` of its own.

The prompt is the transcript's opening messages (system and user) up to the first assistant message; the rest is
the trajectory. Transcripts with the same opening are the same prompt: one prompt per opening, in the order of first
appearance, with every transcript of it kept, in file order, in `metadata.traces` (`line`, `turns`, `tools`), and the
file's name and sha256 in `metadata.recorded`. The rollouts stage's `recorded` backend turns each into a rollout, so
pairs are built only within a prompt's own traces.

A line that cannot be a trajectory is that line's reject, with its reason: `bad_json` (not JSON, not an object),
`bad_transcript` (no message list, a message that is not an object, an unknown role or ShareGPT speaker, content that
is not text), `bad_tool_call` (a call without a function name, arguments that are not JSON, a tool result that
answers no earlier call), `no_answer` (no assistant message, or the transcript ends on a tool result or a user turn:
there is no final answer to label). Lines whose `reference` or `task` differ from the first transcript of their
prompt are rejected too (`conflicting_prompt`): one prompt has one reference.
"""

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rewardmill.schemas.prompt import METADATA_RECORDED, METADATA_TRACES
from rewardmill.transforms.sources.files import jsonl_objects
from rewardmill.transforms.sources.normalize import RecordError

METADATA_KEY, SOURCE_KEY = METADATA_TRACES, METADATA_RECORDED
FORMATS = ("openai", "sharegpt")
SHAREGPT_ROLES = {
    "system": "system",
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "function_call": "assistant",
    "observation": "tool",
    "tool": "tool",
}
OPENING_ROLES = ("system", "user")


class TranscriptError(ValueError):
    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


def file_digest(path: str) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def generate(source: str, path: str, fmt: str, task: str) -> Iterator[tuple[str, dict[str, Any] | RecordError]]:
    """(row id, record) per prompt (its transcripts grouped), then (row id `path:line`, RecordError) per bad line."""
    recorded = {"file": Path(path).name, "sha256": file_digest(path), "format": fmt}
    groups: dict[str, dict[str, Any]] = {}
    bad: list[tuple[str, RecordError]] = []
    for lineno, raw in jsonl_objects(path):
        row_id = f"{path}:{lineno}"
        if isinstance(raw, RecordError):
            bad.append((row_id, raw))
            continue
        try:
            opening, turns, tools = split(raw, fmt)
        except TranscriptError as exc:
            bad.append((row_id, RecordError(exc.reason, f"line {lineno}: {exc}"[:500])))
            continue
        key = json.dumps(opening, sort_keys=True, ensure_ascii=False)
        reference = raw.get("reference")
        line_task = raw.get("task") or task
        group = groups.setdefault(key, {"opening": opening, "reference": reference, "task": line_task, "traces": []})
        if (group["reference"], group["task"]) != (reference, line_task):
            why = f"line {lineno}: reference/task differ from the first transcript of the same prompt"
            bad.append((row_id, RecordError("conflicting_prompt", why)))
            continue
        group["traces"].append({"line": lineno, "turns": turns, "tools": tools})
    for i, group in enumerate(groups.values()):
        lines = ",".join(str(t["line"]) for t in group["traces"])
        yield (
            f"{source}:{i}",
            {
                "messages": group["opening"],
                "reference": None if group["reference"] is None else str(group["reference"]),
                "task": group["task"],
                "metadata": {SOURCE_KEY: {**recorded, "lines": lines}, METADATA_KEY: group["traces"]},
            },
        )
    yield from bad


def split(raw: dict[str, Any], fmt: str) -> tuple[list[dict], list[dict], list | None]:
    """A transcript -> (opening messages, trajectory turns in TURN shape, tools or None); TranscriptError when it
    cannot be a labeled trajectory."""
    messages = _openai(raw) if fmt == "openai" else _sharegpt(raw)
    first = next((i for i, m in enumerate(messages) if m["role"] not in OPENING_ROLES), len(messages))
    opening, rest = messages[:first], messages[first:]
    if not opening or opening[-1]["role"] != "user":
        raise TranscriptError("bad_transcript", "the transcript must open with a user message (after any system one)")
    if not rest or rest[0]["role"] != "assistant":
        raise TranscriptError("no_answer", "no assistant message after the opening")
    if rest[-1]["role"] != "assistant" or rest[-1].get("tool_calls"):
        raise TranscriptError("no_answer", f"the transcript ends on a {rest[-1]['role']} turn, not a final answer")
    _check_calls(rest)
    tools = raw.get("tools")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        raise TranscriptError("bad_transcript", "`tools` is not a list of tool schemas")
    return [{"role": m["role"], "content": m["content"] or ""} for m in opening], rest, tools or None


def _openai(raw: dict[str, Any]) -> list[dict]:
    messages = raw.get("messages")
    if not isinstance(messages, list) or not messages:
        raise TranscriptError("bad_transcript", "no `messages` list")
    return [_message(m, i) for i, m in enumerate(messages)]


def _message(m: Any, i: int) -> dict:
    if not isinstance(m, dict):
        raise TranscriptError("bad_transcript", f"message {i} is not an object")
    role = m.get("role")
    if role not in ("system", "user", "assistant", "tool"):
        raise TranscriptError("bad_transcript", f"message {i}: unknown role {str(role)[:40]!r}")
    content = _text(m.get("content"), i)
    turn: dict[str, Any] = {"role": role, "content": content}
    if role == "assistant":
        if m.get("reasoning_content") or m.get("reasoning"):
            turn["reasoning"] = _text(m.get("reasoning_content") or m.get("reasoning"), i)
        if m.get("tool_calls"):
            turn["tool_calls"] = _calls(m["tool_calls"], i)
    if role == "tool":
        turn.update(tool_call_id=m.get("tool_call_id"), name=m.get("name"))
    return turn


def _text(content: Any, i: int) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    raise TranscriptError("bad_transcript", f"message {i}: content is not text")


def _calls(calls: Any, i: int) -> list[dict]:
    if not isinstance(calls, list):
        raise TranscriptError("bad_tool_call", f"message {i}: tool_calls is not a list")
    out = []
    for k, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
            raise TranscriptError("bad_tool_call", f"message {i} call {k}: no function name")
        arguments = function.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments or "{}")
            except ValueError:
                raise TranscriptError("bad_tool_call", f"message {i} call {k}: arguments are not JSON") from None
        if not isinstance(arguments, dict):
            raise TranscriptError("bad_tool_call", f"message {i} call {k}: arguments are not an object")
        call_id = call.get("id") or f"call_{i}_{k}"
        out.append(
            {"id": str(call_id), "type": "function", "function": {"name": function["name"], "arguments": arguments}}
        )
    return out


def _sharegpt(raw: dict[str, Any]) -> list[dict]:
    turns = raw.get("conversations")
    if not isinstance(turns, list) or not turns:
        raise TranscriptError("bad_transcript", "no `conversations` list")
    messages, pending = [], []
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict) or not isinstance(turn.get("value"), str):
            raise TranscriptError("bad_transcript", f"turn {i} is not an object with a text `value`")
        speaker = turn.get("from")
        role = SHAREGPT_ROLES.get(speaker)
        if role is None:
            raise TranscriptError("bad_transcript", f"turn {i}: unknown speaker {str(speaker)[:40]!r}")
        if speaker == "function_call":  # the call as JSON {"name", "arguments"}: an assistant turn of one call
            try:
                call = json.loads(turn["value"])
            except ValueError:
                raise TranscriptError("bad_tool_call", f"turn {i}: the function call is not JSON") from None
            calls = _calls([{"id": f"call_{i}_0", "function": call if isinstance(call, dict) else None}], i)
            pending = [c["id"] for c in calls]
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        elif role == "tool":
            messages.append(
                {"role": "tool", "content": turn["value"], "tool_call_id": pending.pop(0) if pending else None}
            )
        else:
            messages.append({"role": role, "content": turn["value"]})
    return messages


def _check_calls(turns: list[dict]) -> None:
    """Every tool result answers a call made before it (by id)."""
    open_ids: set[str] = set()
    for i, turn in enumerate(turns):
        for call in turn.get("tool_calls") or []:
            open_ids.add(call["id"])
        if turn["role"] == "tool" and turn.get("tool_call_id") not in open_ids:
            raise TranscriptError("bad_tool_call", f"turn {i}: a tool result that answers no earlier call")
