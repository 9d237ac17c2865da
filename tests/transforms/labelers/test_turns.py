"""Turn-level signals and labels of trajectories, from the environments' own per-turn records (step info).

The turns are written as the rollouts stage writes them (TURN structs: info is JSON) for each environment's shapes:
python_tool's tool turns and final answer, feedback's attempts; and records that are broken."""

import json
import pickle

import pytest

from rewardmill.transforms.labelers import get_labeler_class
from rewardmill.transforms.labelers.turns import ASPECTS, TurnLabelsVerifier, first_error, render_turn, turn_signals


def assistant(content=None, code=(), **info):
    tool_calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": "python", "arguments": json.dumps({"code": c})}}
        for i, c in enumerate(code)
    ]
    return {"role": "assistant", "content": content, "tool_calls": tool_calls or None, "info": json.dumps(info)}


def tool(text="42"):
    return {"role": "tool", "content": text, "tool_call_id": "call_0", "name": "python"}


def user(text="That is not correct. Try again."):
    return {"role": "user", "content": text}


CLEAN_TOOL_THEN_RIGHT = [assistant(None, ["print(6*7)"], calls=1), tool(), assistant("42", calls=1, verdict="correct")]
MALFORMED_THEN_WRONG = [assistant("<tool_call>{oops", tool_errors=1, calls=0), tool("error: bad"),
                        assistant("41", verdict="incorrect")]  # fmt: skip
HANG_THEN_RIGHT = [assistant(None, ["while True: pass"], calls=1, timeouts=1), tool("[killed]"),
                   assistant("42", verdict="correct")]  # fmt: skip
FEEDBACK_THIRD_TIME = [assistant("40", attempt=1, verdict="incorrect"), user(),
                       assistant("41", attempt=2, verdict="incorrect"), user(),
                       assistant("42", attempt=3, verdict="correct")]  # fmt: skip
FEEDBACK_NEVER = [
    assistant("40", attempt=1, verdict="incorrect"),
    user(),
    assistant("41", attempt=2, verdict="incorrect"),
]
REFUSED = [assistant(None, ["print(1)", "print(2)"], calls=1, tool_errors=1, parse_errors=0), tool("1"),
           tool("error: no more tool calls"), assistant("42", verdict="correct")]  # fmt: skip
NO_VERIFIER = [assistant("a poem", calls=0, verdict=None)]


@pytest.mark.parametrize(
    ("turns", "oks", "first", "scores"),
    [
        (CLEAN_TOOL_THEN_RIGHT, [True, True], -1, {"turns": 1.0, "tool_use": 1.0, "progress": 1.0}),
        (MALFORMED_THEN_WRONG, [False, False], 0, {"turns": 0.0, "tool_use": 0.0, "progress": 0.0}),
        (HANG_THEN_RIGHT, [False, True], 0, {"turns": 0.5, "tool_use": 0.0, "progress": 1.0}),
        (FEEDBACK_THIRD_TIME, [False, False, True], 0, {"turns": 1 / 3, "tool_use": None, "progress": 1 / 3}),
        (FEEDBACK_NEVER, [False, False], 0, {"turns": 0.0, "tool_use": None, "progress": 0.0}),
        (NO_VERIFIER, [True], -1, {"turns": 1.0, "tool_use": None, "progress": None}),
        # two parsed calls, the second refused past max_calls: 2 attempts, not 3 (the refusal is no unparsed call)
        (REFUSED, [False, True], 0, {"turns": 0.5, "tool_use": 0.5, "progress": 1.0}),
    ],
)
def test_signals_and_labels_per_environment_shape(turns, oks, first, scores):
    signals = turn_signals(turns)
    assert [s.ok for s in signals] == oks and first_error(signals) == first
    assert [s.message for s in signals] == [i for i, t in enumerate(turns) if t["role"] == "assistant"]
    labels = {label.aspect: label for label in TurnLabelsVerifier().label(turns)}
    assert list(labels) == list(ASPECTS)
    for aspect, score in scores.items():
        assert labels[aspect].score == pytest.approx(score) if score is not None else labels[aspect].score is None
        assert labels[aspect].verdict == ("abstain" if score is None else labels[aspect].verdict)
    detail = json.loads(labels["turns"].raw)
    assert detail["first_error_turn"] == first and len(detail["turns"]) == len(oks)


@pytest.mark.parametrize(
    "info",
    [
        "not json",  # unreadable info: no signal, not a crash
        "[1, 2]",  # JSON, not an object
        json.dumps({"tool_errors": True, "timeouts": -3, "verdict": "maybe"}),  # bool, negative, unknown verdict
        None,  # no info at all
    ],
)
def test_a_broken_record_gives_no_signal(info):
    turns = [{"role": "assistant", "content": "42", "tool_calls": None, "info": info}]
    (signal,) = turn_signals(turns)
    assert (signal.ok, signal.tool_errors, signal.tool_failures, signal.verdict, signal.score) == (
        True,
        0,
        0,
        None,
        None,
    )


def test_a_single_turn_rollout_abstains_on_every_aspect():
    for turns in (None, []):
        labels = TurnLabelsVerifier().label(turns)
        assert [(lab.aspect, lab.verdict, lab.score) for lab in labels] == [(a, "abstain", None) for a in ASPECTS]


def test_a_tool_only_turn_renders_its_calls():
    text = render_turn(CLEAN_TOOL_THEN_RIGHT[0])
    assert text == '<tool_call>{"arguments": {"code": "print(6*7)"}, "name": "python"}</tool_call>'
    assert render_turn({"role": "assistant", "content": "42", "tool_calls": None}) == "42"
    bad = {"role": "assistant", "content": "x", "tool_calls": [{"function": {"name": "python", "arguments": "{oops"}}]}
    assert render_turn(bad) == 'x\n<tool_call>{"arguments": "{oops", "name": "python"}</tool_call>'


def test_registered_and_pickles():
    assert get_labeler_class("turns") is TurnLabelsVerifier
    assert pickle.loads(pickle.dumps(TurnLabelsVerifier())).reads == ("turns",)
