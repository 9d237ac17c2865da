import json
import math
import pickle

import pytest

from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.judges.client import BackendConfig, Completion, JudgeResponse, TokenLogprob
from rewardmill.transforms.labelers import get_labeler_class
from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.reference_judge import ReferenceJudge, ReferenceJudgeConfig

MESSAGES = [{"role": "user", "content": "Simplify 12/36."}]
APPEAL = {"appeal": {"labeler": "math_answer", "config": {"timeout_seconds": 5}}}


def response(text, logprobs=None, error=None) -> JudgeResponse:
    return JudgeResponse(() if error else (Completion(text, "stop", logprobs),), error=error)


def yes_no_logprobs(p_yes: float):
    top = {"Yes": math.log(p_yes), "No": math.log(1 - p_yes)}
    return (TokenLogprob("Yes" if p_yes >= 0.5 else "No", max(top.values()), top),)


class ScriptedClient:
    """Answers every request with one scripted text and records what was asked."""

    model_id = "scripted"

    def __init__(self, text):
        self.text, self.requests = text, []

    def complete(self, requests):
        self.requests += requests
        return [response(self.text) for _ in requests]


@pytest.mark.parametrize(
    ("resp", "verdict", "score", "confidence"),
    [
        (response("Yes"), "correct", 1.0, 0.5),  # text only: flat confidence
        (response("No."), "incorrect", 0.0, 0.5),
        (response("Yes", yes_no_logprobs(0.8)), "correct", 0.8, 0.6),  # P(yes) is the score, |2p - 1| confidence
        (response("No", yes_no_logprobs(0.3)), "incorrect", 0.3, 0.4),
        (response("There is no way to tell"), "abstain", None, 0.0),  # "no" inside a sentence is not a verdict
        (response(None, error="InternalServerError: 500"), "error", None, 0.0),  # beyond retries: rejects
    ],
)
def test_to_label_table(resp, verdict, score, confidence):
    label = ReferenceJudge().to_label("1/3", None, resp)
    assert label.verdict == verdict and label.confidence == pytest.approx(confidence)
    assert label.score == (None if score is None else pytest.approx(score))
    if verdict == "error":
        assert label.reject_reason == "judge_call_failed"
    else:
        assert json.loads(label.raw)["judge"]["text"] == resp.text  # the raw text is kept


def test_rows_without_a_reference_abstain_without_a_call():
    judge = ReferenceJudge()
    judge._clients[judge.config.backend] = client = ScriptedClient("Yes")
    labels = judge.label_many([(MESSAGES, "1/3", None), (MESSAGES, "1/3", "  "), (MESSAGES, "1/3", "1/3")])
    assert [lab.verdict for lab in labels] == ["abstain", "abstain", "correct"] and len(client.requests) == 1


def test_appeal_judges_only_rule_negatives_and_keeps_both_verdicts():
    judge = ReferenceJudge(from_dict(ReferenceJudgeConfig, APPEAL, "reference_judge"))
    assert judge.reads == ("messages", "completion", "reference") and judge.tasks == ("math",)
    judge._clients[judge.config.backend] = client = ScriptedClient("Yes")
    rows = [
        (MESSAGES, "The answer is $\\frac{1}{3}$.", "\\frac{1}{3}"),  # the rule accepts: no call
        (MESSAGES, "It is one third.", "\\frac{1}{3}"),  # the rule misses words; the judge says yes
    ]
    accepted, appealed = judge.label_many(rows)
    assert len(client.requests) == 1 and "one third" in client.requests[0].messages[1]["content"]
    assert accepted.verdict == "correct" and json.loads(accepted.raw)["appealed"] is False
    raw = json.loads(appealed.raw)
    assert raw["appealed"] and raw["rule"]["verdict"] != "correct" and raw["judge"]["parsed"] is True
    assert appealed.verdict == "correct" and appealed.rationale.startswith("rule said")
    stats = ReferenceJudge.summarize(
        [{"raw": lab.raw, "score": lab.score, "verdict": lab.verdict} for lab in (accepted, appealed)]
    )
    assert stats == {"judged": 1, "share_equivalent": 1.0, "appealed": 1, "overturned": 1, "share_overturned": 1.0}


def test_a_judge_that_says_no_upholds_the_rule():
    judge = ReferenceJudge(from_dict(ReferenceJudgeConfig, APPEAL, "reference_judge"))
    judge._clients[judge.config.backend] = ScriptedClient("No")
    label = judge.label(MESSAGES, "It is 4.", "\\frac{1}{3}")
    assert (
        label.verdict == "incorrect"
        and ReferenceJudge.summarize([{"raw": label.raw, "score": label.score, "verdict": label.verdict}])[
            "overturned"
        ]
        == 0
    )


def test_rule_correct_keeps_the_rule_label_unchanged():
    rule = Label(1.0, 1.0, "correct", "matched")
    label = ReferenceJudge().to_label("x", rule, None)
    assert (label.score, label.confidence, label.verdict) == (1.0, 1.0, "correct")


def test_config_errors_and_registry():
    with pytest.raises(ConfigError, match="threshold"):
        from_dict(ReferenceJudgeConfig, {"threshold": 1.0}, "reference_judge")
    with pytest.raises(ConfigError, match="unknown labeler"):
        from_dict(ReferenceJudgeConfig, {"appeal": {"labeler": "nope"}}, "reference_judge")
    with pytest.raises(ConfigError, match="timeout"):
        from_dict(ReferenceJudgeConfig, {"appeal": {"config": {"timeout": 3}}}, "reference_judge")
    assert get_labeler_class("reference_judge") is ReferenceJudge
    judge = pickle.loads(pickle.dumps(ReferenceJudge(from_dict(ReferenceJudgeConfig, APPEAL, "r"))))
    assert judge.rule is not None and judge.config.backend == BackendConfig()


def test_an_appeal_never_overturns_a_hedge():
    judge = ReferenceJudge(from_dict(ReferenceJudgeConfig, APPEAL, "reference_judge"))
    judge._clients[judge.config.backend] = client = ScriptedClient("Yes")  # a judge that would say yes
    label = judge.label(MESSAGES, "The answer is 1/3 or 1/4.", "\\frac{1}{3}")
    assert label.verdict == "incorrect" and "hedged" in label.rationale and not client.requests
    assert json.loads(label.raw)["appealed"] is False
