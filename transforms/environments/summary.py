"""What a rollouts stage's episodes did, for its manifest: how they stopped, how many turns they took, what their
tools did, and the environment's reward. Read back from the written ROLLOUT_V3 rows (pure over them), so the record
is the output's, whatever the runner or the cache did.

A policy's misbehaviour and a tool's failure are outcomes the episodes record, never a crash of the stage: this is
where they are counted (a malformed or unknown tool call is a `tool_errors`, a hang a `timeouts`, a tool that died a
`crashes`, output cut to the limit a `truncated`).
"""

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

from rewardmill.transforms.environments.episodes import STOP_REASONS

TOOL_COUNTS = ("tool_errors", "timeouts", "crashes", "truncated")  # keys of python_tool's step info, summed
DIGITS = 6
EPISODE_COLUMNS = ["stop_reason", "turns", "env_reward"]  # what the summary reads of a row


def episode_summary(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """{trajectories, by_stop_reason (every reason named), assistant_turns {mean, max, by_count}, tool_calls,
    tools {tool_errors, timeouts, crashes, truncated}, env_reward {mean, n}} over ROLLOUT_V3 rows."""
    stops = dict.fromkeys(STOP_REASONS, 0)
    turn_counts: Counter[int] = Counter()
    tools = dict.fromkeys(TOOL_COUNTS, 0)
    calls = 0
    rewards = []
    n = 0
    for row in rows:
        n += 1
        stops[row["stop_reason"]] = stops.get(row["stop_reason"], 0) + 1
        assistant = [t for t in row["turns"] or () if t["role"] == "assistant"]
        turn_counts[len(assistant)] += 1
        for turn in assistant:
            calls += len(turn.get("tool_calls") or ())
            info = json.loads(turn["info"]) if turn.get("info") else {}
            for key in TOOL_COUNTS:
                value = info.get(key)
                tools[key] += value if isinstance(value, int) and not isinstance(value, bool) else 0
        if row.get("env_reward") is not None:
            rewards.append(float(row["env_reward"]))
    total_turns = sum(k * v for k, v in turn_counts.items())
    return {
        "trajectories": n,
        "by_stop_reason": stops,
        "assistant_turns": {
            "mean": round(total_turns / n, DIGITS) if n else None,
            "max": max(turn_counts, default=0),
            "by_count": {str(k): turn_counts[k] for k in sorted(turn_counts)},
        },
        "tool_calls": calls,
        "tools": tools,
        "env_reward": {"mean": round(sum(rewards) / len(rewards), DIGITS) if rewards else None, "n": len(rewards)},
    }
