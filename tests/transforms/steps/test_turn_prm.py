"""Turn-level process rows from trajectories: steps are assistant turns with the observations before them, labels
per turn from the environment's records, and rows that pass the PRM suite's rules and load as TRL stepwise rows."""

import json

import pyarrow as pa

from rewardmill.schemas import PRM_V1
from rewardmill.transforms.steps.turn_prm import build_turn_prm_row, turn_steps
from rewardmill.transforms.validation.prm_suite import prm_helper_columns

CALL = {"id": "call_0_0", "type": "function", "function": {"name": "python", "arguments": '{"code": "print(6*7)"}'}}


def rollout(turns, messages=None):
    return {
        "rollout_id": "r0",
        "prompt_id": "p0",
        "messages": messages or [{"role": "system", "content": "be brief"}, {"role": "user", "content": "6*7?"}],
        "task": "math",
        "split": "train",
        "turns": turns,
    }


def assistant(content=None, tool_calls=None, **info):
    return {"role": "assistant", "content": content, "tool_calls": tool_calls, "info": json.dumps(info)}


FEEDBACK = [
    assistant("41", attempt=1, verdict="incorrect"),
    {"role": "user", "content": "That is not correct. Try again."},
    assistant("42", attempt=2, verdict="correct"),
]
TOOL = [
    assistant(None, [CALL], calls=1, tool_errors=0),
    {"role": "tool", "content": "42", "tool_call_id": "call_0_0", "name": "python"},
    assistant("42", calls=1, verdict="correct"),
]


def test_a_recovered_feedback_episode_keeps_each_turns_label():
    row, rejected = build_turn_prm_row(rollout(FEEDBACK))
    assert rejected is None
    assert row["completions"] == ["41", "[user] That is not correct. Try again.\n42"]  # the feedback before, not after
    assert (row["labels"], row["soft_labels"], row["first_error_step"]) == ([False, True], [0.0, 1.0], 0)
    assert (row["method"], row["labeler"], row["prompt"], row["min_score"], row["last_score"]) == (
        "turns", "turns", "6*7?", 0.0, 1.0,
    )  # fmt: skip
    helpers = prm_helper_columns(pa.Table.from_pylist([row], schema=PRM_V1))
    assert all(values == [True] for values in helpers.values()), helpers


def test_a_tool_turn_is_a_step_with_its_call_and_the_result_comes_before_the_answer():
    assert turn_steps(TOOL) == [
        '<tool_call>{"arguments": {"code": "print(6*7)"}, "name": "python"}</tool_call>',
        "[tool python] 42\n42",
    ]
    row, _ = build_turn_prm_row(rollout(TOOL))
    assert (row["labels"], row["soft_labels"], row["first_error_step"]) == ([True, True], [None, 1.0], -1)
    assert pa.Table.from_pylist([row], schema=PRM_V1).num_rows == 1  # the schema takes it as is


def test_what_cannot_make_a_row_is_said():
    _, rejected = build_turn_prm_row(rollout([{"role": "user", "content": "hi"}]))
    assert rejected.reason == "no_steps"
    _, rejected = build_turn_prm_row(rollout(None))  # a single-turn rollout
    assert rejected.reason == "no_steps"
    _, rejected = build_turn_prm_row(rollout(FEEDBACK, messages=[{"role": "system", "content": "x"}]))
    assert rejected.reason == "no_user_message"
