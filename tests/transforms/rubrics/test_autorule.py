"""AutoRule: the pure pieces (split, merge, agreement) as tables, and the learner's flow with scripted judge replies
(the 135M default cannot explain a preference well enough to reach every path; tests/pipelines/test_rubrics_stage.py
runs it on the real model). The rank labeler is the real math_answer."""

import json

import pytest

from rewardmill.transforms.rubrics.autorule import (
    ALL_PROMPTS,
    AutoRuleParams,
    Candidate,
    agreement,
    best_supported,
    is_heldout,
    merge_rules,
)
from rewardmill.transforms.rubrics.criteria import Criterion
from rewardmill.transforms.rubrics.learner import learn
from rewardmill.transforms.rubrics.params import RubricsParams
from rewardmill.transforms.rubrics.record import rules_record
from rewardmill.transforms.rubrics.writer import REJECT, RUBRIC, RubricWriter
from tests.transforms.labelers.scripted import ScriptedClient
from tests.transforms.rubrics.test_writer import prompt, rollout, text_of


def rules(*texts: str) -> list[Criterion]:
    return [Criterion(t) for t in texts]


@pytest.mark.parametrize(
    ("found", "jaccard", "expected"),
    [
        ([rules("States the final answer clearly"), rules("states the final answer clearly.")], 0.6,
         [("States the final answer clearly", 2)]),  # same words: one rule, two rationales
        ([rules("States the final answer clearly", "Shows each step of the work")],
         0.6, [("States the final answer clearly", 1), ("Shows each step of the work", 1)]),
        ([rules("Gives the final answer as a number"), rules("Gives the final answer as one number")], 0.6,
         [("Gives the final answer as a number", 2)]),  # Jaccard 5/7 = 0.71: alike
        ([rules("Gives the final answer as a number"), rules("Gives the final answer as one number")], 0.8,
         [("Gives the final answer as a number", 1), ("Gives the final answer as one number", 1)]),
        ([rules("Shows the work step by step", "shows the work step by step")], 0.6,
         [("Shows the work step by step", 1)]),  # twice in one rationale: supported once
        ([[], []], 0.6, []),
    ],
)  # fmt: skip
def test_merge_rules(found, jaccard, expected):
    assert [(c.rule, c.support) for c in merge_rules(found, jaccard)] == expected


def test_best_supported_keeps_first_seen_order():
    candidates = [Candidate("a", 1), Candidate("b", 3), Candidate("c", 2), Candidate("d", 3)]
    assert [c.rule for c in best_supported(candidates, 3)] == ["b", "c", "d"]
    assert [c.rule for c in best_supported(candidates, 1)] == ["b"]


@pytest.mark.parametrize(
    ("votes", "agree", "disagree", "undecided", "rate"),
    [
        ([(True, False), (True, False), (False, True)], 2, 1, 0, 2 / 3),
        ([(True, True), (False, False), (None, False)], 0, 0, 3, None),  # holds for both, neither, unread
        ([], 0, 0, 0, None),
    ],
)
def test_agreement(votes, agree, disagree, undecided, rate):
    got = agreement(votes)
    assert (got.agree, got.disagree, got.undecided) == (agree, disagree, undecided)
    assert got.rate == (pytest.approx(rate) if rate is not None else None)


def test_heldout_split_is_a_fixed_function_of_the_id():
    ids = [f"p{i}" for i in range(400)]
    held = [i for i in ids if is_heldout(i, 0.5)]
    assert held == [i for i in ids if is_heldout(i, 0.5)] and 150 < len(held) < 250
    assert set(held) >= {i for i in ids if is_heldout(i, 0.2)}  # a smaller share holds out a subset
    with pytest.raises(ValueError, match="heldout"):
        AutoRuleParams(heldout=1.0)


def test_learn_keeps_the_rules_that_order_the_heldout_pairs_as_the_preference():
    """Five prompts with a right and a wrong rollout. Rationales yield a useful rule ("states 14" style: holds for the
    right answer only) and a useless one (holds for both); only the useful one is kept."""

    def answer(request):
        content = text_of(request)
        if "Explain why the first answer is better" in content:
            return "The better answer gives the correct sum; the worse one adds wrongly."
        if "What general rules does a good answer follow" in content:
            return "1. The answer gives the correct sum\n2. The answer is written in English words"
        if "correct sum" in content:  # the check of the useful rule: holds for the right answer only
            return "Yes" if "\\boxed{14}" in content else "No"
        return "Yes"  # the useless rule holds for every answer

    client = ScriptedClient(answer)
    w = RubricWriter("rules", RubricsParams(mode="autorule", rank_by={"labeler": "math_answer"}))
    w._client = client
    items = [(prompt(f"p{i}"), [rollout(f"p{i}", 0, "14"), rollout(f"p{i}", 1, "15")]) for i in range(5)]
    items.append((prompt("tied"), [rollout("tied", 0, "15"), rollout("tied", 1, "15")]))
    out = learn(w, items)
    (kind, row), *rejects = out
    assert kind == RUBRIC and row["prompt_id"] == ALL_PROMPTS and row["mode"] == "autorule"
    assert [(k, r["row_id"], r["reason"]) for k, r in rejects] == [(REJECT, "tied", "no_contrast")]
    assert row["criteria"] == [{"criterion": "The answer gives the correct sum", "weight": 1.0, "kind": "principle"}]
    evidence = json.loads(row["evidence"])
    heldout = [f"p{i}" for i in range(5) if is_heldout(f"p{i}", 0.5)]
    assert evidence["prompts"] == [f"p{i}" for i in range(5)] and evidence["heldout_pairs"] == len(heldout) > 0
    assert evidence["extraction_pairs"] == 5 - len(heldout) > 0
    useful, useless = evidence["candidates"]
    assert (useful["agree"], useful["disagree"], useful["kept"]) == (len(heldout), 0, True)
    assert (useless["undecided"], useless["agreement"], useless["kept"]) == (len(heldout), None, False)
    assert useful["support"] == useless["support"] == 5 - len(heldout)
    assert rules_record(row) == [
        {"rule": "The answer gives the correct sum", "support": 5 - len(heldout), "agree": len(heldout),
         "disagree": 0, "agreement": 1.0}
    ]  # fmt: skip
    assert learn(w, items) == out  # the same replies, the same rows
