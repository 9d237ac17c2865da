"""A trajectory's turn-level process row: one TRL stepwise (PRM_V1) row whose steps are its assistant turns, labeled
from the environment's own per-turn records (transforms/labelers/turns.py: no model, no continuation).

Step k is what the policy saw since its previous turn (tool results, feedback: `[tool python] ...`, `[user] ...`)
followed by its turn k (its answer and its tool calls in the text protocol's form). The observation goes before the
turn it informs, never after the turn it judges: a step that ended in "That is not correct" would hand a PRM its
label. Step 0 is the first turn alone (the prompt is TRL's `prompt`).

Labels are per turn, not Qwen's prefix convention: in a multi-turn episode a later turn can recover from an earlier
wrong one (feedback's second attempt), so each turn keeps its own label, and nothing is cut after the first bad turn.
`first_error_step` is still the first bad turn (-1: none), and every turn before it is good. `soft_labels` are the
checked answers' 1.0 / 0.0 and None for turns the environment did not check.
"""

from typing import Any

from rewardmill.schemas.step import TURNS_METHOD
from rewardmill.transforms.labelers.turns import first_error, render_turn, turn_signals
from rewardmill.transforms.steps.prm_rows import Rejected

LABELER = "turns"  # the PRM row's `labeler`: the environment's records, read as the `turns` labeler reads them


def observation(message: dict[str, Any]) -> str:
    """A tool result or a feedback message as it precedes the next step."""
    if message.get("role") == "tool":
        return f"[tool {message.get('name') or ''}] {message.get('content') or ''}".replace("[tool ]", "[tool]")
    return f"[{message.get('role')}] {message.get('content') or ''}"


def turn_steps(turns: list[dict[str, Any]]) -> list[str]:
    """One step text per assistant turn: the observations since the previous one, then the turn."""
    steps, seen = [], []
    for message in turns:
        if message.get("role") == "assistant":
            steps.append("\n".join([*seen, render_turn(message)]))
            seen = []
        else:
            seen.append(observation(message))
    return steps


def build_turn_prm_row(rollout: dict[str, Any]) -> tuple[dict | None, Rejected | None]:
    """A ROLLOUT_V3 trajectory (with its prompt's fields: prompt_id, messages, task, split) -> (PRM_V1 row, None), or
    (None, Rejected) when it has no assistant turn, or its prompt no user message."""
    signals = turn_signals(rollout.get("turns"))
    if not signals:
        return None, Rejected("no_steps", f"rollout {rollout['rollout_id']} has no assistant turn")
    user = [m["content"] for m in rollout["messages"] if m["role"] == "user"]
    if not user:
        return None, Rejected("no_user_message", f"prompt {rollout['prompt_id']} has no user message")
    labels = [s.ok for s in signals]
    soft = [s.score for s in signals]
    values = [float(ok) if score is None else score for score, ok in zip(soft, labels, strict=True)]
    return {
        "prompt_id": rollout["prompt_id"],
        "rollout_id": rollout["rollout_id"],
        "prompt": user[-1],
        "completions": turn_steps(rollout["turns"]),
        "labels": labels,
        "soft_labels": soft,
        "first_error_step": first_error(signals),
        "method": TURNS_METHOD,
        "labeler": LABELER,
        "min_score": min(values),
        "last_score": values[-1],
        "task": rollout.get("task"),
        "split": rollout["split"],
    }, None
