"""transforms/environments/summary.py: the manifest's record of what a stage's episodes did, from its rows."""

import json

from rewardmill.transforms.environments.summary import episode_summary


def assistant(info: dict | None = None, calls: int = 0) -> dict:
    tool_calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": "python", "arguments": "{}"}} for i in range(calls)
    ]
    return {
        "role": "assistant",
        "content": "x",
        "tool_calls": tool_calls or None,
        "info": json.dumps(info) if info else None,
    }


def row(stop: str, turns: list[dict], reward: float | None) -> dict:
    return {"stop_reason": stop, "turns": turns, "env_reward": reward}


def test_stops_turns_tools_and_rewards_are_counted():
    rows = [
        row("done", [assistant({"verdict": "correct"})], 1.0),  # solved at once
        row("max_turns", [assistant({"tool_errors": 1}, 1), {"role": "tool", "content": "error"}, assistant()], 0.0),
        row("error", [], None),  # an environment that failed at reset: no turn, no reward
        row(
            "done",
            [assistant({"timeouts": 1, "crashes": 0, "truncated": 1}, 2), assistant({"tool_errors": True})],
            1.0,
        ),
    ]
    summary = episode_summary(rows)
    assert summary["trajectories"] == 4
    assert summary["by_stop_reason"] == {"done": 2, "max_turns": 1, "max_tokens": 0, "error": 1}
    assert summary["assistant_turns"] == {"mean": 1.25, "max": 2, "by_count": {"0": 1, "1": 1, "2": 2}}
    assert summary["tool_calls"] == 3
    # a bool is not a count (a step info that says `tool_errors: true` adds nothing rather than 1)
    assert summary["tools"] == {"tool_errors": 1, "timeouts": 1, "crashes": 0, "truncated": 1}
    assert summary["env_reward"] == {"mean": 0.666667, "n": 3}


def test_no_rows_is_a_record_of_nothing():
    summary = episode_summary([])
    assert summary["trajectories"] == 0 and summary["assistant_turns"]["mean"] is None
    assert summary["env_reward"] == {"mean": None, "n": 0} and set(summary["by_stop_reason"].values()) == {0}
