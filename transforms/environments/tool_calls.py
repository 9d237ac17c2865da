"""Tool calls in a policy's text, for chat templates without a tool format (the default SmolLM2's among them): the
documented text protocol is one JSON object per call between `<tool_call>` and `</tool_call>`,

    <tool_call>{"name": "python", "arguments": {"code": "print(6 * 7)"}}</tool_call>

the format Qwen2.5's and Hermes' templates render and their models emit. `parse_tool_calls` turns an assistant text
into the message TRL's format has (`content` = the text outside the calls, `tool_calls` = the parsed calls, with ids
`call_<turn>_<k>`), and lists what could not be parsed. A malformed call is never an exception: the environment
answers it with a tool error message, and it is counted.
"""

import json
from dataclasses import dataclass, field
from typing import Any

from rewardmill.schemas.trajectory import TOOL_CALL_CLOSE, TOOL_CALL_OPEN

OPEN, CLOSE = TOOL_CALL_OPEN, TOOL_CALL_CLOSE
MAX_CALLS = 8  # calls per assistant turn; more are refused as errors (a policy looping on calls)


@dataclass
class ParsedTurn:
    message: dict[str, Any]  # {"role": "assistant", "content": ..., "tool_calls": [...] or absent}
    errors: list[dict[str, str]] = field(default_factory=list)  # {"id", "error"} per call that could not be parsed


def protocol_prompt(tools: list[dict[str, Any]]) -> str:
    """The system message that teaches the text protocol, with the tools' JSON schemas."""
    schemas = "\n".join(json.dumps(t["function"], sort_keys=True) for t in tools)
    return (
        "You can call tools. To call one, write a JSON object with its name and arguments between "
        f"{OPEN} and {CLOSE}, for example:\n"
        f'{OPEN}{{"name": "python", "arguments": {{"code": "print(6 * 7)"}}}}{CLOSE}\n'
        "The result comes back in the next message. When you are done, give your final answer without a tool call.\n"
        f"Tools:\n{schemas}"
    )


def parse_tool_calls(text: str, turn: int, known: set[str]) -> ParsedTurn:
    """The assistant message of `text` (its `turn`-th, for call ids) and the calls that could not be parsed: JSON
    that does not parse, not an object, no string `name`, a tool not in `known`, arguments that are not an object,
    an unclosed tag, more than MAX_CALLS calls."""
    calls, errors, outside = [], [], []
    rest = text
    while OPEN in rest:
        before, after = rest.split(OPEN, 1)
        outside.append(before)
        call_id = f"call_{turn}_{len(calls) + len(errors)}"
        if CLOSE not in after:
            errors.append({"id": call_id, "error": f"{OPEN} without {CLOSE}"})
            rest = ""
            break
        body, rest = after.split(CLOSE, 1)
        if len(calls) + len(errors) >= MAX_CALLS:
            errors.append({"id": call_id, "error": f"more than {MAX_CALLS} tool calls in one turn"})
            continue
        call, error = _parse_one(body, known)
        if error:
            errors.append({"id": call_id, "error": error})
        else:
            calls.append({"id": call_id, "type": "function", "function": call})
    outside.append(rest)
    content = "".join(outside).strip()
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return ParsedTurn(message, errors)


def assistant_turn(text: str, turn: int, known: set[str], text_protocol: bool) -> dict[str, Any]:
    """The assistant message an environment's `parse` gives the stage for a sampled `text`: the parsed calls in
    `tool_calls`, the ones that could not be parsed in `tool_errors` (for `step`, not the conversation). In the text
    protocol, for a template without a tool format: it renders only `content`, so the content is what the policy
    wrote, calls included (malformed ones too), or its next turn would follow a tool result it never asked for, and
    a trainer would learn turns without their calls. `tool_calls` still holds the parsed calls, for the environment
    and for trainers whose template has a tool format. Else the content is the text outside the calls."""
    parsed = parse_tool_calls(text, turn, known)
    message = {**parsed.message, "content": text.strip()} if text_protocol else parsed.message
    return {**message, "tool_errors": parsed.errors} if parsed.errors else message


def _parse_one(body: str, known: set[str]) -> tuple[dict[str, Any] | None, str | None]:
    try:
        value = json.loads(body)
    except ValueError as exc:
        return None, f"the call is not JSON ({exc.msg} at char {exc.pos})"
    if not isinstance(value, dict):
        return None, f"the call is a JSON {type(value).__name__}, not an object with name and arguments"
    name = value.get("name")
    if not isinstance(name, str):
        return None, "the call has no string `name`"
    if name not in known:
        return None, f"unknown tool {name[:80]!r}; tools: {sorted(known)}"
    arguments = value.get("arguments", {})
    if isinstance(arguments, str):  # the OpenAI wire format: arguments as a JSON string
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None, "`arguments` is a string that is not JSON"
    if not isinstance(arguments, dict):
        return None, "`arguments` is not an object"
    return {"name": name, "arguments": arguments}, None
