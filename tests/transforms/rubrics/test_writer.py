"""RubricWriter's logic per prompt: which rollouts it contrasts, what it asks, what it rejects and why, and the refine
round. The writer's replies are scripted here: the 135M default cannot be made to write a rubric good enough to reach
each path (tests/pipelines/test_rubrics_stage.py runs the stage on it). The rank labeler is the real math_answer."""

import json
import pickle

import pytest

from rewardmill.transforms.judges.client import JudgeResponse
from rewardmill.transforms.rubrics.params import RefineParams, RubricsParams
from rewardmill.transforms.rubrics.writer import REJECT, RUBRIC, RubricWriter, Scored, contrast, runner_up
from tests.transforms.labelers.scripted import ScriptedClient

QUESTION = "What is 6 + 8?"
RANK = {"labeler": "math_answer", "tasks": ["math"]}


def prompt(pid: str, reference: str | None = "14") -> dict:
    return {
        "prompt_id": pid,
        "messages": [{"role": "user", "content": QUESTION}],
        "reference": reference,
        "task": "math",
    }


def rollout(pid: str, i: int, answer: str) -> dict:
    return {
        "rollout_id": f"{pid}-r{i}",
        "prompt_id": pid,
        "messages": [{"role": "user", "content": QUESTION}],
        "completion": f"The answer is \\boxed{{{answer}}}.",
        "reference": "14",
        "task": "math",
    }


def writer(client, **params) -> RubricWriter:
    w = RubricWriter("demo", RubricsParams(**params))
    w._client = client
    return w


def text_of(request) -> str:
    return request.messages[-1]["content"]


@pytest.mark.parametrize(
    ("scores", "margin", "expected"),
    [
        ([1.0, 0.0], 0.0, ("a", "b")),  # best vs worst
        ([1.0, 1.0, 0.0, 0.0], 0.0, ("a", "c")),  # ties: lowest rollout id on each side
        ([0.5, 0.5], 0.0, None),  # no contrast
        ([0.6, 0.5], 0.2, None),  # apart, but not by more than the margin
        ([1.0], 0.0, None),  # one scored rollout
    ],
)
def test_contrast(scores, margin, expected):
    scored = sorted((Scored(chr(97 + i), s, "") for i, s in enumerate(scores)), key=lambda s: (-s.score, s.rollout_id))
    got = contrast(scored, margin)
    assert (got if got is None else tuple(s.rollout_id for s in got)) == expected


def test_runner_up_is_the_best_one_scored_lower():
    scored = [Scored("a", 1.0, ""), Scored("b", 1.0, ""), Scored("c", 0.5, ""), Scored("d", 0.0, "")]
    assert [s.rollout_id for s in runner_up(scored)] == ["a", "c"]
    assert runner_up(scored[:2]) is None and runner_up([]) is None


def test_reference_mode_writes_a_rubric_or_rejects_with_its_reason():
    def answer(request):
        content = text_of(request)
        if "The correct answer: 15" in content:
            return JudgeResponse((), error="APIConnectionError: refused")
        if "The correct answer: 16" in content:
            return "16"  # no list: nothing readable
        return "1. [hard] (weight 5) States that the sum is 14\n2. [principle] Shows the addition step by step"

    client = ScriptedClient(answer)
    w = writer(client, n_criteria=2)
    items = [(prompt("p1"), []), (prompt("p2", None), []), (prompt("p3", "15"), []), (prompt("p4", "16"), [])]
    out = w.write(items)
    assert (
        len(client.calls) == 1 and len(client.calls[0]) == 3
    )  # one batch; the prompt without a reference asks nothing
    assert "Question: What is 6 + 8?" in text_of(client.calls[0][0]) and "The correct answer: 14" in text_of(
        client.calls[0][0]
    )
    (kind, row), *rejects = out
    assert kind == RUBRIC and row["prompt_id"] == "p1" and row["judge"] == "scripted" and row["refined"] == 0
    assert row["criteria"] == [
        {"criterion": "States that the sum is 14", "weight": 5.0, "kind": "hard"},
        {"criterion": "Shows the addition step by step", "weight": 1.0, "kind": "principle"},
    ]
    assert json.loads(row["evidence"]) == {"from": "reference"} and len(json.loads(row["raw"])) == 1
    assert [(k, r["row_id"], r["reason"]) for k, r in rejects] == [
        (REJECT, "p2", "no_reference"),
        (REJECT, "p3", "writer_call_failed"),
        (REJECT, "p4", "too_few_criteria"),
    ]
    assert "APIConnectionError" in rejects[1][1]["detail"] and "'16'" in rejects[2][1]["detail"]
    assert w.write(items) == out  # the same replies, the same rows


def test_contrastive_mode_shows_the_preferred_and_rejected_rollouts():
    client = ScriptedClient(lambda r: "1. States that the sum is 14\n2. Does not say 15")
    w = writer(client, mode="contrastive", rank_by=RANK)
    tied = [rollout("p2", 0, "15"), rollout("p2", 1, "15")]
    items = [
        (prompt("p1"), [rollout("p1", 0, "15"), rollout("p1", 1, "14"), rollout("p1", 2, "13")]),
        (prompt("p2"), tied),
    ]
    (kind, row), (rejected, why) = w.write(items)
    assert kind == RUBRIC and rejected == REJECT and why["reason"] == "no_contrast"
    shown = text_of(client.calls[0][0])
    assert (
        "Preferred answer: The answer is \\boxed{14}." in shown
        and "Rejected answer: The answer is \\boxed{15}." in shown
    )
    evidence = json.loads(row["evidence"])
    assert evidence["preferred"] == {"rollout_id": "p1-r1", "score": 1.0}
    assert evidence["rejected"] == {"rollout_id": "p1-r0", "score": 0.0}  # the worst, lowest id first
    w.close()


def test_refine_rewrites_the_criteria_that_do_not_separate_the_best_from_the_runner_up():
    def answer(request):
        content = text_of(request)
        if "Principle (criterion)" in content:  # a yes/no check of one criterion on one rollout
            best = "\\boxed{14}" in content
            return "Yes" if "sum is 14" in content and best else "No" if "sum is 14" in content else "Yes"
        if "Rewrite the checklist" in content:
            return "1. States that the sum is 14\n2. Writes the sum as the single number 14 and nothing else"
        return "1. States that the sum is 14\n2. Writes a final answer"

    client = ScriptedClient(answer)
    w = writer(client, rank_by=RANK, refine=RefineParams(rounds=1))
    items = [(prompt("p1"), [rollout("p1", 0, "15"), rollout("p1", 1, "14")])]
    [(kind, row)] = w.write(items)
    assert kind == RUBRIC and row["refined"] == 1
    assert [c["criterion"] for c in row["criteria"]][1] == "Writes the sum as the single number 14 and nothing else"
    refine = json.loads(row["evidence"])["refine"]
    assert refine["weak"] == [2] and refine["votes"] == [[True, True], [False, True]]
    assert (refine["best"]["rollout_id"], refine["runner_up"]["rollout_id"]) == ("p1-r1", "p1-r0")
    rewrite = [r for r in client.calls[-1]][0]
    assert (
        "Points 2 are met equally" in text_of(rewrite) and "1. [hard]" not in text_of(rewrite).split("Checklist:")[0]
    )
    assert len(json.loads(row["raw"])) == 2  # the first reply and the rewrite


def test_config_checks_and_pickles():
    with pytest.raises(ValueError, match="rank_by"):
        RubricsParams(mode="contrastive")
    with pytest.raises(ValueError, match="min_criteria"):
        RubricsParams(min_criteria=3, max_criteria=2)
    with pytest.raises(ValueError, match="unknown labeler|not registered|math_answr"):
        RubricsParams(mode="contrastive", rank_by={"labeler": "math_answr"})
    w = RubricWriter("demo", RubricsParams())
    assert pickle.loads(pickle.dumps(w)).params == w.params
