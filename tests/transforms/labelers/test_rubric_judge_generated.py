"""rubric_judge against a generated rubric set (`rubrics: NAME`): each criterion graded on its own, hard rules must
hold, and a prompt without a rubric abstains without a call (or falls back, when asked). Replies are scripted."""

import json

import pytest

from rewardmill.transforms.labelers.contract import GENERATED_RUBRIC
from rewardmill.transforms.labelers.rubric_judge import RubricJudge, RubricJudgeConfig, hard_failures
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
    ("mode", "got", "score", "hard_failed"),
    [
        ("principles", ("Yes", "No"), 0.75, []),  # the rule holds: weighted share (3 of 4)
        ("principles", ("No", "Yes"), 0.0, [1]),  # the rule fails: 0 whatever the principles say
        ("principles", ("maybe", "Yes"), 1.0, []),  # the rule unread: scored on what was read, coverage 1/4
        ("prometheus", ("[RESULT] 5", "[RESULT] 1"), 0.75, []),  # grades 1.0 and 0.0, weights 3 and 1
        ("prometheus", ("[RESULT] 2", "[RESULT] 5"), 0.0, [1]),  # a rule graded 2 of 5 fails
    ],
)
def test_to_label_scores_each_criterion_and_enforces_hard_rules(mode, got, score, hard_failed):
    j = judge(mode=mode)
    plan = j.plan(None, "math", GENERATED)
    label = j.to_label(plan, replies(*got))
    raw = json.loads(label.raw)
    assert label.score == pytest.approx(score) and raw["hard_failed"] == hard_failed
    assert raw["source"] == "generated" and raw["kinds"] == ["hard", "principle"] and len(raw["criterion_scores"]) == 2
    assert ("hard rule 1 failed" in label.rationale) == bool(hard_failed)


def test_a_prompt_without_a_rubric_abstains_without_a_call_or_falls_back():
    j = judge(mode="principles")
    client = j._clients[j.config.backend] = ScriptedClient(lambda r: "Yes")
    rows = [
        (MESSAGES, "6 + 8 = 14", "14", None, "math", GENERATED),
        (MESSAGES, "6 + 8 = 14", "14", None, "math", None),
    ]
    graded, missing = j.label_many(rows)
    assert graded.score == 1.0 and sum(map(len, client.calls)) == 2  # two criteria; nothing for the other prompt
    assert missing.score is None and missing.verdict == "abstain" and "no rubric for this prompt" in missing.rationale
    fallback = judge(mode="principles", missing_rubric="fallback")
    fallback._clients[fallback.config.backend] = ScriptedClient(
        lambda r: "accuracy: yes\ncompleteness: yes\nclarity: no"
    )
    label = fallback.label(*rows[1])
    assert json.loads(label.raw)["source"] == "params" and label.score == 0.75
    with pytest.raises(ValueError, match="missing_rubric"):
        RubricJudgeConfig(missing_rubric="skip")
