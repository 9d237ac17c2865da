"""rubric_judge against a generated rubric set (`rubrics: NAME`): each criterion graded on its own, hard rules must
hold, and a prompt without a rubric abstains without a call (or falls back, when asked). Replies are scripted."""

import json

import pytest

from rewardmill.schemas.rubric import rubric_id
from rewardmill.transforms.labelers.contract import GENERATED_RUBRIC
from rewardmill.transforms.labelers.rubric_judge import RubricJudge, RubricJudgeConfig, hard_failures
from rewardmill.transforms.rubrics.criteria import Criterion
from rewardmill.transforms.rubrics.criteria import rubric_id as writer_rubric_id
from tests.transforms.labelers.scripted import ScriptedClient, replies

MESSAGES = [{"role": "user", "content": "What is 6 + 8?"}]
GENERATED = [
    {"criterion": "States that the sum is 14", "weight": 3.0, "kind": "hard"},
    {"criterion": "Shows the addition step", "weight": 1.0, "kind": "principle"},
]


def judge(**config) -> RubricJudge:
    return RubricJudge(RubricJudgeConfig(rubrics="demo", **config))


@pytest.mark.parametrize(
    ("kinds", "scores", "failed"),
    [
        (("hard", "principle"), [1.0, 0.0], []),  # a failed principle is graded, not fatal
        (("hard", "principle"), [0.0, 1.0], [1]),  # a failed hard rule
        (("hard", "hard"), [0.25, 0.5], [1]),  # a grade of 2 of 5 fails a rule; the middle (3 of 5) holds
        (("hard", "principle"), [None, 1.0], []),  # an unread rule is not a failure (coverage says so)
    ],
)
def test_hard_failures(kinds, scores, failed):
    assert hard_failures(kinds, scores) == failed


def test_reads_the_generated_column_only_with_a_rubric_set():
    assert GENERATED_RUBRIC in judge().reads and judge().rubric_set == "demo"
    assert GENERATED_RUBRIC not in RubricJudge().reads and RubricJudge().rubric_set is None


def test_generated_rubric_wins_and_each_criterion_is_asked_alone():
    principles = judge(mode="principles")  # principle_calls "all" still asks one criterion per call
    plan = principles.plan([{"criterion": "Names Paris", "weight": 1.0}], "math", GENERATED)
    assert plan.source == "generated" and plan.kinds == ("hard", "principle")
    requests = principles.requests(plan, MESSAGES, "6 + 8 = 14", None)
    assert len(requests) == 2 and "States that the sum is 14" in requests[0].messages[-1]["content"]
    prometheus = judge()
    plan = prometheus.plan(None, "math", GENERATED)
    assert [r.criteria for r in plan.rubrics] == ["States that the sum is 14", "Shows the addition step"]
    assert plan.weights == (3.0, 1.0)


@pytest.mark.parametrize(
    ("mode", "got", "score", "hard_failed", "parts"),
    [
        # the rule holds: weighted share (3 of 4); each criterion's own label
        ("principles", ("Yes", "No"), 0.75, [], [(1.0, "correct"), (0.0, "incorrect")]),
        # the rule fails: 0 whatever the principles say
        ("principles", ("No", "Yes"), 0.0, [1], [(0.0, "incorrect"), (1.0, "correct")]),
        # the rule unread: scored on what was read (coverage 1/4); its own label abstains
        ("principles", ("maybe", "Yes"), 1.0, [], [(None, "abstain"), (1.0, "correct")]),
        # grades 1.0 and 0.0, weights 3 and 1
        ("prometheus", ("[RESULT] 5", "[RESULT] 1"), 0.75, [], [(1.0, "correct"), (0.0, "incorrect")]),
        # a rule graded 2 of 5 fails
        ("prometheus", ("[RESULT] 2", "[RESULT] 5"), 0.0, [1], [(0.25, "incorrect"), (1.0, "correct")]),
        # the middle grade holds a hard rule (>= 0.5) but a principle needs pass_threshold (0.5 too by default)
        ("prometheus", ("[RESULT] 3", "[RESULT] 3"), 0.5, [], [(0.5, "correct"), (0.5, "correct")]),
    ],
)
def test_to_label_scores_each_criterion_and_enforces_hard_rules(mode, got, score, hard_failed, parts):
    j = judge(mode=mode)
    plan = j.plan(None, "math", GENERATED)
    label, *criteria = j.to_label(plan, replies(*got))
    raw = json.loads(label.raw)
    assert label.aspect == "rubric" and label.score == pytest.approx(score) and raw["hard_failed"] == hard_failed
    assert raw["source"] == "generated" and raw["kinds"] == ["hard", "principle"] and len(raw["criterion_scores"]) == 2
    assert ("hard rule 1 failed" in label.rationale) == bool(hard_failed)
    # each criterion is a part of the rubric aspect, named by its place, with its text, kind and rubric version
    assert [c.aspect for c in criteria] == ["rubric:c1", "rubric:c2"]
    assert [(c.score, c.verdict) for c in criteria] == parts
    assert [json.loads(c.raw)["criterion"] for c in criteria] == [g["criterion"] for g in GENERATED]
    assert {json.loads(c.raw)["rubric_id"] for c in criteria} == {raw["rubric_id"]} == {rubric_id(GENERATED)}


def test_the_rubric_id_is_the_one_the_rubrics_stage_writes():
    """The judge reads the version off the joined rows; the writer computes it from its parsed criteria."""
    written = [Criterion(g["criterion"], g["weight"], g["kind"]) for g in GENERATED]
    assert judge().plan(None, "math", GENERATED).rubric_id == writer_rubric_id(written)
    assert judge().plan(None, "math", GENERATED[::-1]).rubric_id != writer_rubric_id(written)
    assert judge().plan([{"criterion": "Names Paris", "weight": 1.0}], "math", None).rubric_id is None


def test_a_prompt_without_a_rubric_abstains_without_a_call_or_falls_back():
    j = judge(mode="principles")
    client = j._clients[j.config.backend] = ScriptedClient(lambda r: "Yes")
    rows = [
        (MESSAGES, "6 + 8 = 14", "14", None, "math", GENERATED),
        (MESSAGES, "6 + 8 = 14", "14", None, "math", None),
    ]
    (graded, *criteria), missing = j.label_many(rows)
    assert (
        graded.score == 1.0 and [c.score for c in criteria] == [1.0, 1.0] and sum(map(len, client.calls)) == 2
    )  # two criteria; nothing for the other prompt
    assert missing.score is None and missing.verdict == "abstain" and "no rubric for this prompt" in missing.rationale
    fallback = judge(mode="principles", missing_rubric="fallback")
    fallback._clients[fallback.config.backend] = ScriptedClient(
        lambda r: "accuracy: yes\ncompleteness: yes\nclarity: no"
    )
    label = fallback.label(*rows[1])
    assert json.loads(label.raw)["source"] == "params" and label.score == 0.75
    with pytest.raises(ValueError, match="missing_rubric"):
        RubricJudgeConfig(missing_rubric="skip")
