"""A finished trajectory as ROLLOUT_V3's trajectory columns (schemas/rollout.py, schemas/trajectory.py)."""

import json
from dataclasses import asdict, is_dataclass
from typing import Any

from rewardmill.transforms.environments.episodes import Trajectory
from rewardmill.transforms.sampling.params import token_fields

TURN_FIELDS = ("role", "content", "reasoning", "tool_calls", "tool_call_id", "name", "n_tokens", "finish_reason")


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def environment_column(environment) -> dict[str, str]:
    """{name, version, config}: what ran the episode, the config as canonical JSON."""
    config = environment.config if hasattr(environment, "config") else None
    plain = asdict(config) if is_dataclass(config) else (config or {})
    return {"name": environment.name, "version": str(environment.version), "config": canonical_json(plain)}


def turn_column(message: dict[str, Any]) -> dict[str, Any]:
    """One TURN struct: the message's TRL fields, its accounting, its step info as JSON; tool-call arguments as a
    JSON string (a dict is serialized)."""
    turn = {k: message.get(k) for k in TURN_FIELDS}
    if turn["tool_calls"] is not None:
        turn["tool_calls"] = [
            {
                "id": call.get("id"),
                "type": call.get("type", "function"),
                "function": {
                    "name": call["function"].get("name"),
                    "arguments": _arguments(call["function"].get("arguments")),
                },
            }
            for call in turn["tool_calls"]
        ]
    if turn["content"] is not None and not isinstance(turn["content"], str):
        turn["content"] = canonical_json(turn["content"])
    info = message.get("step_info")
    turn["info"] = canonical_json(info) if info else None
    return {**turn, **token_fields(message.get("tokens"))}


def _arguments(arguments: Any) -> str | None:
    if arguments is None or isinstance(arguments, str):
        return arguments
    return canonical_json(arguments)


def trajectory_columns(
    trajectory: Trajectory, environment, tools: list[dict[str, Any]] | None, prompt_messages: list | None = None
) -> dict[str, Any]:
    """The V3 columns of one trajectory (the V2 ones, `completion` and the token accounting, come from it too).
    `prompt_messages`: the prompt as fed, when the environment added a system message (None otherwise)."""
    final = trajectory.assistant_turns[-1] if trajectory.assistant_turns else {}
    return {
        "completion": trajectory.completion,
        "n_tokens": trajectory.n_tokens,
        "finish_reason": trajectory.finish_reason,
        "logprob_sum": trajectory.logprob_sum,
        "reasoning": final.get("reasoning"),
        "reasoning_status": final.get("reasoning_status"),  # None: rollouts.reasoning is off
        "reasoning_tokens": None,  # counted by the handler, which has the tokenizer
        "turns": [turn_column(m) for m in trajectory.turns],
        "tools": canonical_json(tools) if tools else None,
        "environment": environment_column(environment),
        "stop_reason": trajectory.stop_reason,
        "env_reward": trajectory.reward,
        "env_info": canonical_json(trajectory.info) if trajectory.info else None,
        "prompt_messages": prompt_messages,
    }
