"""The viewer's page model: texts, numbers and messages made safe for JSON, each kind's row, filters and counts."""

import json
import math

import pytest

from rewardmill.transforms.view.model import (
    ConfigRows,
    RejectSummary,
    Source,
    kind_of,
    messages,
    number,
    options,
    page_model,
    pair_row,
    prm_row,
    text,
    with_turn_labels,
)
from tests.transforms.validation.rows import _id, label_row, rl_row, sft_row
from tests.transforms.validation.rows import pair_row as pair
from tests.transforms.validation.rows import prm_row as prm


@pytest.mark.parametrize(
    "schema, kind",
    [
        ("pair_v2", "pair"),
        ("prm_v1", "prm"),
        ("rl_v1", "rl"),
        ("sft_v1", "sft"),
        ("pair_v3", "pair"),  # a later version keeps its layout
        ("reward_v1", "other"),  # no layout: columns as text
        ("unversioned", "other"),
        ("", "other"),
    ],
)
def test_kind_of(schema, kind):
    assert kind_of(schema) == kind


@pytest.mark.parametrize(
    "value, limit, expected",
    [
        (None, 5, None),  # null stays null
        ("short", 5, "short"),
        ("too long", 3, "too\n… [5 more characters not shown]"),
        (12, 5, "12"),  # non-strings as text
        ("", 5, ""),
    ],
)
def test_text(value, limit, expected):
    assert text(value, limit) == expected


@pytest.mark.parametrize(
    "value, expected",
    [
        (0.5, 0.5),
        (3, 3),
        (float("nan"), None),  # JSON has no NaN: JSON.parse would fail on the page
        (float("inf"), None),
        (-math.inf, None),
        (True, None),  # a bool is not a score
        ("0.5", None),
        (None, None),
    ],
)
def test_number(value, expected):
    assert number(value) == expected


@pytest.mark.parametrize(
    "value, expected",
    [
        ([{"role": "user", "content": "hi"}], [{"role": "user", "content": "hi"}]),
        ("bare text", [{"role": "", "content": "bare text"}]),  # a plain string: one message without a role
        ([{"role": None, "content": None}], [{"role": "", "content": ""}]),  # malformed fields: empty, not "None"
        ([{"role": "user", "content": "a"}, "junk", 3], [{"role": "user", "content": "a"}]),  # non-messages dropped
        (None, []),
        (42, []),
    ],
)
def test_messages(value, expected):
    assert messages(value) == expected


CALL = {"id": "c0", "type": "function", "function": {"name": "python", "arguments": '{"code": "print(1)"}'}}


def test_multi_turn_messages_keep_their_calls_results_reasoning_and_turn_labels():
    shown = messages(
        [
            {"role": "assistant", "content": None, "reasoning": "think", "tool_calls": [CALL], "name": None},
            {"role": "tool", "content": "1", "tool_call_id": "c0", "name": "python"},
            {"role": "assistant", "content": "1", "tool_calls": [{"function": {"name": "x", "arguments": {"a": 1}}}]},
        ]
    )
    call = {"id": "c0", "name": "python", "arguments": '{"code": "print(1)"}'}
    assert shown[0] == {"role": "assistant", "content": "", "reasoning": "think", "tool_calls": [call]}
    assert shown[1] == {"role": "tool", "content": "1", "tool_call_id": "c0", "name": "python"}
    assert shown[2]["tool_calls"] == [{"id": None, "name": "x", "arguments": '{"a": 1}'}]  # a dict argument as JSON
    clean = {"tool_errors": 0, "tool_failures": 0}
    raw = json.dumps(
        {"turns": [{"ok": True, "verdict": None, **clean}, {"ok": False, "verdict": "incorrect", **clean}]}
    )
    labeled = with_turn_labels(shown, [{"aspect": "progress", "raw": None}, {"aspect": "turns", "raw": raw}])
    assert [m.get("turn", {}).get("ok") for m in labeled] == [True, None, False]  # assistant turns, in order
    assert with_turn_labels(shown, [{"aspect": "turns", "raw": "not json"}]) == shown  # no usable label: as it was


def test_pair_row_puts_each_rollouts_labels_on_its_side():
    row = pair(0)
    chosen, rejected = row["chosen_rollout_id"], row["rejected_rollout_id"]
    stale = {**label_row(0, "correct", 1.0), "labeler_version": "0", "rationale": "old judge"}  # not in label_sources
    labels = {chosen: [label_row(0, "correct", 1.0), stale], rejected: [label_row(1, "incorrect", 0.0)]}
    out = pair_row(row, labels)
    assert out["id"] == row["pair_id"] and out["pair_type"] == "best_vs_worst" and out["margin"] == 0.75
    assert out["prompt"] == [{"role": "user", "content": "What is 2 + 3?"}]
    assert out["chosen"]["messages"] == [{"role": "assistant", "content": "5"}]
    assert [(la["source"], la["verdict"], la["used"]) for la in out["chosen"]["labels"]] == [
        ("math_answer@0", "correct", False),  # shown, marked as not behind this pair
        ("math_answer@1", "correct", True),
    ]
    assert [la["verdict"] for la in out["rejected"]["labels"]] == ["incorrect"]
    assert out["rejected"]["correct"] is False and out["rejected"]["scores"][0] == {
        "name": "math_answer/correctness",
        "score": 0.0,
    }
    assert pair_row(row, {})["chosen"]["labels"] == []  # no label folder: the pair alone


@pytest.mark.parametrize(
    "labels, soft, expected",
    [
        ([True, True, False], [1.0, 0.5, 0.0], [(True, 1.0), (True, 0.5), (False, 0.0)]),
        ([True], [float("nan")], [(True, None), (None, None), (None, None)]),  # short lists: the rest unknown
        (None, None, [(None, None)] * 3),  # malformed: no labels at all
    ],
)
def test_prm_steps_carry_hard_and_soft_labels(labels, soft, expected):
    out = prm_row(prm(1, labels=labels, soft_labels=soft))
    assert [(s["label"], s["soft"]) for s in out["steps"]] == expected
    assert [s["text"] for s in out["steps"]] == ["2 + 3 = 5.", "So x = 5.", "The answer is 5."]
    assert out["id"] == f"mc/{_id('rollout', 1)}" and out["first_error_step"] == 2


def test_options_order():
    rows = [{"difficulty": d} for d in ("unsolved", "easy", "weird", "hard", "easy")] + [{"difficulty": None}]
    assert options(rows, "difficulty") == ["easy", "hard", "unsolved", "weird"]  # known order, then the rest
    assert options([{"split": "train"}, {"split": "test"}], "split") == ["test", "train"]
    assert options([{}], "pair_type") == []


def test_page_model_counts_filters_and_is_json():
    source = Source(
        kind="datasets",
        title="t",
        folder="data/datasets",
        configs=[
            ConfigRows("rl", "rl_v1", 10, [rl_row(0, 2, 2, 2), rl_row(2, 2, 2, 0)]),
            ConfigRows("pairs", "pair_v2", 3, [pair(0), pair(2)]),
            ConfigRows("sft", "sft_v1", 1, [sft_row(0)]),
            ConfigRows("misc", "reward_v1", 1, [{"rollout_id": "r", "scores": [1.5, float("nan")]}]),
        ],
        rejects=[RejectSummary("pairs", 2, [{"reason": "tie", "count": 2, "examples": [{"row_id": "x"}]}])],
        notes=["n"],
    )
    model = page_model(source, max_rows=2)
    assert [c["name"] for c in model["configs"]] == ["misc", "pairs", "rl", "sft"]  # sorted
    rl = model["configs"][2]
    assert (rl["total"], rl["shown"], rl["left_out"]) == (10, 2, 8)
    assert rl["filters"] == {"difficulty": ["easy", "unsolved"], "split": ["test", "train"]}
    assert model["configs"][1]["filters"] == {"pair_type": ["best_vs_worst"], "split": ["test", "train"]}
    assert model["configs"][0]["rows"][0]["fields"] == [["rollout_id", "r"], ["scores", "[1.5, NaN]"]]
    assert model["rejects"][0]["reasons"][0]["examples"] == [
        {"row_id": "x", "stage": None, "detail": None, "payload": None}
    ]
    assert model["labels"] == "none" and model["max_rows"] == 2 and model["notes"] == ["n"]
    assert json.loads(json.dumps(model, allow_nan=False)) == model  # plain JSON, no NaN
    assert page_model(source, 2) == model
    assert page_model(Source("export", "t", None, []), 5)["rejects"] is None  # an export has none
