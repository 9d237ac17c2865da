import json
import pickle

import pytest

from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.judges.client import BackendConfig, Completion, JudgeResponse, TokenLogprob
from rewardmill.transforms.labelers import get_labeler_class
from rewardmill.transforms.labelers.judge_base import question_of
from rewardmill.transforms.labelers.pointwise_judge import PointwiseJudge, PointwiseJudgeConfig

MESSAGES = [{"role": "user", "content": "What is 2 + 3?"}]


def response(*texts: str, logprobs=None, error=None) -> JudgeResponse:
    return JudgeResponse(tuple(Completion(t, "stop", logprobs) for t in texts), error=error)


@pytest.mark.parametrize(
    ("resp", "verdict", "score"),
    [
        (response("Score: 5\nReason: right."), "correct", 1.0),  # top of the scale
        (response("Score: 1\nReason: wrong."), "incorrect", 0.0),  # bottom
        (response("**Score:** 3"), "correct", 0.5),  # markdown; midpoint passes at threshold 0.5
        (response("I think it is fine"), "abstain", None),  # no score: abstain, never a silent 0
        (response(""), "abstain", None),  # empty reply
        (response(error="InternalServerError: 500"), "error", None),  # call failed beyond retries
    ],
)
def test_to_label_table(resp, verdict, score):
    label = PointwiseJudge().to_label(resp)
    assert (label.verdict, label.score) == (verdict, score)
    assert label.rationale
    if verdict != "error":
        assert json.loads(label.raw)["texts"] == [c.text for c in resp.completions]  # raw text kept
    else:
        assert label.reject_reason == "judge_call_failed"  # the stage sends it to _rejects


def test_geval_expected_score_and_confidence_from_logprobs():
    # p(4) = 0.75, p(5) = 0.25 at the score position -> expected 4.25 -> (4.25 - 1) / 4
    top = {"4": -0.2876820724517809, "5": -1.3862943611198906}
    lp = (TokenLogprob("Score", -0.01, {"Score": -0.01}), TokenLogprob("4", top["4"], top))
    label = PointwiseJudge().to_label(response("Score: 4", logprobs=lp))
    assert label.score == pytest.approx(0.8125)
    assert 0 < label.confidence < 1 and "G-Eval" in label.rationale


def test_self_consistency_over_samples():
    judge = PointwiseJudge(PointwiseJudgeConfig(samples=4))
    label = judge.to_label(response("Score: 4", "Score: 4", "Score: 2", "nonsense"))
    assert label.score == pytest.approx((10 / 3 - 1) / 4)
    assert label.confidence == pytest.approx(2 / 3)  # 2 of the 3 readable samples agree


def test_question_is_the_last_user_turn():
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    assert question_of(msgs) == "b" and question_of([]) == ""


def test_config_from_params_and_bad_values():
    cfg = from_dict(PointwiseJudgeConfig, {"backend": {"kind": "openai", "model": "m"}, "samples": 3}, "judge")
    assert cfg.backend == BackendConfig(kind="openai", model="m") and cfg.samples == 3
    with pytest.raises(ConfigError, match="samples"):
        from_dict(PointwiseJudgeConfig, {"samples": 0}, "judge")
    with pytest.raises(ConfigError, match="unknown key"):
        from_dict(PointwiseJudgeConfig, {"backend": {"url": "x"}}, "judge")


def test_registered_and_pickles():
    assert get_labeler_class("pointwise_judge") is PointwiseJudge
    judge = pickle.loads(pickle.dumps(PointwiseJudge(PointwiseJudgeConfig(criteria="c"))))
    assert judge.config.criteria == "c" and judge._clients == {}


def test_real_default_model_judges_and_reruns_from_the_call_cache(policy_dir, tmp_path):
    """The real 135M model as judge: every row gets a label (a score or an abstain with the text kept)."""
    config = PointwiseJudgeConfig(backend=BackendConfig(model=str(policy_dir), batch_size=4), max_tokens=12)
    rows = [(MESSAGES, "2 + 3 = 5"), (MESSAGES, "2 + 3 = 7"), (MESSAGES, "")]
    judge = PointwiseJudge(config)
    judge.set_call_cache(str(tmp_path / "calls"))
    first = judge.label_many(rows)
    judge.teardown()
    assert len(first) == 3 and all(lab.verdict in ("correct", "incorrect", "abstain") for lab in first)
    assert all(json.loads(lab.raw)["texts"][0] is not None for lab in first[:2])
    assert (first[2].score, first[2].verdict, first[2].raw) == (0.0, "incorrect", None)  # no answer: no call
    again = PointwiseJudge(config)
    again.set_call_cache(str(tmp_path / "calls"))
    assert again.label_many(rows) == first  # same bytes from the cache, no model loaded
    # the client is guard(cache(model))
    assert again.usage()["cache_hits"] == 2 and again.client.inner.inner._policy is None
