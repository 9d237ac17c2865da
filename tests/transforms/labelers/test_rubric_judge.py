import json
import math
import pickle

import pytest

from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.judges.client import BackendConfig, Completion, JudgeResponse, TokenLogprob
from rewardmill.transforms.judges.rubric import Principle, Rubric
from rewardmill.transforms.labelers import get_labeler_class
from rewardmill.transforms.labelers.rubric_judge import (
    DEFAULT_RUBRIC,
    Plan,
    RubricJudge,
    RubricJudgeConfig,
    criterion_rubric,
)
from tests.transforms.judges.conftest import one_torch_thread  # noqa: F401  (autouse: generate on one thread)
from tests.transforms.labelers.scripted import ScriptedClient, replies

MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]
FAIL = JudgeResponse((), error="InternalServerError: 500")
QA_RUBRIC = {"criteria": "Is the city right?", **{f"score{s}_description": f"level {s}" for s in range(1, 6)}}
QA_PRINCIPLES = [{"name": "names the city", "text": "The response names the capital."}]
PROMPT_RUBRIC = [{"criterion": "Names Paris", "weight": 1.0}, {"criterion": "Is one sentence", "weight": 3.0}]


def as_row(i: int, label) -> dict:
    keys = ("score", "confidence", "verdict", "rationale", "raw")
    return {"rollout_id": f"r{i}", **{k: getattr(label, k) for k in keys}}


PROMETHEUS = RubricJudge()
PRINCIPLES = RubricJudge(RubricJudgeConfig(mode="principles"))
PARAMS_PLAN = PROMETHEUS.plan(None, "qa")  # the built-in rubric: one call
PROMPT_PLAN = PROMETHEUS.plan(PROMPT_RUBRIC, "qa")  # two criteria, weights 1 and 3: two calls
PRINCIPLES_PLAN = PRINCIPLES.plan(None, "qa")  # accuracy (weight 2), completeness, clarity


@pytest.mark.parametrize(
    ("judge", "plan", "got", "verdict", "score", "confidence"),
    [
        (PROMETHEUS, PARAMS_PLAN, ("Feedback: right. [RESULT] 5",), "correct", 1.0, 0.5),  # text-only: half conf.
        (PROMETHEUS, PARAMS_PLAN, ("Feedback: wrong city. [RESULT] 1",), "incorrect", 0.0, 0.5),  # bottom
        (PROMETHEUS, PARAMS_PLAN, ("**Score:** 3",), "correct", 0.5, 0.5),  # markdown; midpoint passes at 0.5
        (PROMETHEUS, PARAMS_PLAN, ("It is a fine answer.",), "abstain", None, 0.0),  # malformed: no grade
        (PROMETHEUS, PARAMS_PLAN, ("[RESULT] 7",), "abstain", None, 0.0),  # malformed: off the 1-5 scale
        (PROMETHEUS, PARAMS_PLAN, (FAIL,), "error", None, 0.0),  # the call failed: rejected, retried next run
        (PROMETHEUS, PROMPT_PLAN, ("[RESULT] 5", "[RESULT] 1"), "incorrect", 0.25, 0.5),  # weighted: (1*1 + 3*0)/4
        (PROMETHEUS, PROMPT_PLAN, ("[RESULT] 5", FAIL), "correct", 1.0, 0.125),  # partial failure: coverage 1/4
        (PROMETHEUS, PROMPT_PLAN, ("nonsense", "[RESULT] 2"), "incorrect", 0.25, 0.375),  # one unreadable grade
        (PROMETHEUS, PROMPT_PLAN, (FAIL, FAIL), "error", None, 0.0),  # every call failed
        (PRINCIPLES, PRINCIPLES_PLAN, ("accuracy: yes\ncompleteness: yes\nclarity: no",), "correct", 0.75, 1.0),
        (PRINCIPLES, PRINCIPLES_PLAN, ("- **Accuracy**: no\ncompleteness: yes",), "incorrect", 1 / 3, 0.75),  # 2 of 3
        (PRINCIPLES, PRINCIPLES_PLAN, ("I cannot tell.",), "abstain", None, 0.0),  # malformed: nothing parsed
        (PRINCIPLES, PRINCIPLES_PLAN, (FAIL,), "error", None, 0.0),  # the call failed
    ],
)
def test_to_label_table(judge, plan, got, verdict, score, confidence):
    label = judge.to_label(plan, replies(*got))
    assert label.verdict == verdict and label.confidence == confidence
    assert label.score == (pytest.approx(score) if score is not None else None)
    assert label.rationale and len(label.rationale) <= 500
    if verdict == "error":
        assert label.reject_reason == "judge_call_failed"  # the stage sends it to _rejects
        return
    raw = json.loads(label.raw)
    assert raw["texts"] == [r.text for r in replies(*got)] and raw["errors"] == [r.error for r in replies(*got)]
    assert raw["mode"] == judge.config.mode and raw["source"] == plan.source and 0 <= raw["coverage"] <= 1
    if judge is PROMETHEUS:
        assert len(raw["grades"]) == len(plan.rubrics)
    else:
        assert list(raw["results"]) == ["accuracy", "completeness", "clarity"]


UNUSABLE = [{"criterion": " ", "weight": 1.0}, {"criterion": "x", "weight": 0.0}, {"weight": 1.0}]  # no text / weight
CONFIG = {"task_rubrics": {"qa": QA_RUBRIC}, "task_principles": {"qa": QA_PRINCIPLES}}


@pytest.mark.parametrize(
    ("mode", "rubric", "task", "extra", "source", "criteria"),
    [
        ("prometheus", PROMPT_RUBRIC, "qa", {}, "prompt", ["Names Paris", "Is one sentence"]),  # prompt wins
        ("prometheus", None, "qa", {}, "task", ["Is the city right?"]),  # no prompt rubric: the task's
        ("prometheus", [], "math", {}, "params", [DEFAULT_RUBRIC["criteria"]]),  # neither: params (built-in)
        ("prometheus", UNUSABLE, "qa", {}, "task", ["Is the city right?"]),  # unusable criteria only: as if none
        ("prometheus", PROMPT_RUBRIC, "qa", {"use_prompt_rubric": False}, "task", ["Is the city right?"]),
        ("prometheus", None, None, {"rubric": None}, "params", [DEFAULT_RUBRIC["criteria"]]),  # None = built-in
        ("principles", PROMPT_RUBRIC, "qa", {}, "prompt", ["criterion 1", "criterion 2"]),  # named by position
        ("principles", None, "qa", {}, "task", ["names the city"]),
        ("principles", None, "math", {}, "params", ["accuracy", "completeness", "clarity"]),
    ],
)
def test_rubric_precedence_prompt_task_params(mode, rubric, task, extra, source, criteria):
    config = from_dict(RubricJudgeConfig, {**CONFIG, "mode": mode, **extra}, "rubric")
    plan = RubricJudge(config).plan(rubric, task)
    assert plan.source == source
    if mode == "prometheus":
        assert [r.criteria for r in plan.rubrics] == criteria and len(plan.weights) == len(criteria)
    else:
        assert [p.name for p in plan.principles] == criteria


def test_prompt_rubric_weights_and_generic_criterion_rubric():
    plan = PROMETHEUS.plan([{"criterion": "Names Paris", "weight": None}, {"criterion": "Short", "weight": 2}], "qa")
    assert plan.weights == (1.0, 2.0) and plan.rubrics[0] == criterion_rubric("Names Paris")
    assert "does not meet the criterion at all" in plan.rubrics[0].descriptions[1]
    principles = PRINCIPLES.plan([{"criterion": "Names Paris", "weight": 2.0}], None).principles
    assert principles == (Principle("criterion 1", "Names Paris", 2.0),)


@pytest.mark.parametrize(
    ("extra", "reference", "shown"),
    [
        ({}, "Paris", True),  # the reference is Prometheus' score-5 answer
        ({}, None, False),  # no reference
        ({}, "", False),  # a blank reference is none
        ({"use_reference": False}, "Paris", False),  # turned off
    ],
)
def test_prometheus_requests_and_reference(extra, reference, shown):
    judge = RubricJudge(RubricJudgeConfig(**extra))
    requests = judge.requests(PROMPT_PLAN, MESSAGES, "Paris.", reference)
    assert len(requests) == 2 and all(r.sampling.temperature == 0 for r in requests)  # one greedy call a criterion
    assert all(("Reference Answer (Score 5):\nParis" in r.messages[1]["content"]) == shown for r in requests)
    assert "[Is one sentence]" in requests[1].messages[1]["content"]


def test_label_many_sends_the_batch_in_one_call():
    judge = RubricJudge()
    client = judge._clients[judge.config.backend] = ScriptedClient(
        lambda r: "[RESULT] 5" if "[Names Paris]" in r.messages[1]["content"] else "[RESULT] 3"
    )
    rows = [(MESSAGES, "Paris.", "Paris", PROMPT_RUBRIC, "qa"), (MESSAGES, "Lyon.", None, None, "qa")]
    first, second = judge.label_many(rows)
    assert [len(c) for c in client.calls] == [3]  # 2 criteria + 1 rubric, one call
    assert first.score == pytest.approx((1.0 + 3 * 0.5) / 4) and second.score == 0.5
    assert judge.label(MESSAGES, "Lyon.", None, None, "qa") == second


def test_config_from_params_and_bad_values():
    params = {"mode": "principles", "principles": [{"name": "polite", "text": "Is polite.", "weight": 2}], **CONFIG}
    cfg = from_dict(RubricJudgeConfig, params, "rubric")
    assert cfg.principles == ({"name": "polite", "text": "Is polite.", "weight": 2},)
    assert Rubric.from_dict(cfg.task_rubrics["qa"]).descriptions[3] == "level 3"
    bad = [
        ({"mode": "likert"}, "must be one of"),  # unknown mode
        ({"rubrik": {}}, "unknown key"),  # typo in a key
        ({"rubric": {"criteria": "c", "descriptions": {1: "a", 2: "b"}}}, "exactly the scores"),  # scores missing
        ({"task_rubrics": {"qa": {"criteria": "c", "score6_description": "x"}}}, "task_rubrics.qa"),
        ({"principles": [{"name": "a", "text": "t", "wieght": 2}]}, "wieght"),  # typo inside a principle
        ({"principles": [{"name": "a", "text": "t"}, {"name": "A", "text": "u"}]}, "distinct"),  # same name
        ({"principles": []}, "non-empty"),
        ({"task_principles": {"qa": [{"name": "a", "text": "t", "weight": -1}]}}, "task_principles.qa"),
        ({"pass_threshold": 1.5}, "pass_threshold"),
    ]
    for values, error in bad:
        with pytest.raises(ConfigError, match=error):
            from_dict(RubricJudgeConfig, values, "rubric")


def test_registered_and_pickles():
    assert get_labeler_class("rubric_judge") is RubricJudge
    judge = RubricJudge(RubricJudgeConfig(mode="principles", task_principles={"qa": tuple(QA_PRINCIPLES)}))
    judge._clients = {judge.config.backend: ScriptedClient(lambda r: "x")}
    copy = pickle.loads(pickle.dumps(judge))
    assert copy.config == judge.config and copy._clients == {}
    assert copy.plan(None, "qa") == Plan("task", principles=(Principle("names the city", QA_PRINCIPLES[0]["text"]),))


def yes_no(text: str, yes: float, no: float) -> JudgeResponse:
    """A reply whose first token carries P("Yes") = yes and P("No") = no among its alternatives."""
    first = TokenLogprob(text.split()[0], math.log(max(yes, no)), {"Yes": math.log(yes), "No": math.log(no)})
    return JudgeResponse((Completion(text, "length", (first,)),))


EACH = RubricJudge(RubricJudgeConfig(mode="principles", principle_calls="each"))


@pytest.mark.parametrize(
    ("got", "results", "score", "coverage"),
    [
        # one call per principle (accuracy weight 2, completeness, clarity); P(yes) decides whatever the text says
        ((("The", 0.8, 0.1), ("The", 0.2, 0.7), ("Yes.", 0.9, 0.05)), [True, False, True], 0.75, 1.0),
        # no logprobs for a reply: its text decides; an unreadable one is left out (coverage < 1)
        ((("No", 0.1, 0.8), "Yes.", "maybe"), [False, True, None], 0.333333, 0.75),
        ((FAIL, FAIL, "No"), [None, None, False], 0.0, 0.25),  # failed calls count as unread principles
    ],
)
def test_principles_one_call_each(got, results, score, coverage):
    requests = EACH.requests(PRINCIPLES_PLAN, MESSAGES, "Paris.", None)
    assert len(requests) == 3 and all(r.sampling.top_logprobs == 20 and r.sampling.max_tokens == 4 for r in requests)
    assert "Principle (accuracy)" in requests[0].messages[-1]["content"]
    made = [yes_no(*g) if isinstance(g, tuple) else g for g in got]
    label = EACH.to_label(PRINCIPLES_PLAN, replies(*made))
    raw = json.loads(label.raw)
    assert list(raw["results"].values()) == results
    assert (label.score, raw["coverage"]) == (pytest.approx(score, abs=1e-6), coverage)
    assert set(raw["p_yes"]) == {"accuracy", "completeness", "clarity"}


def test_summarize():
    prometheus = [
        PROMETHEUS.to_label(PARAMS_PLAN, replies("[RESULT] 4")),  # coverage 1
        PROMETHEUS.to_label(PROMPT_PLAN, replies("[RESULT] 5", FAIL)),  # coverage 1/4
        PROMETHEUS.to_label(PARAMS_PLAN, replies("no grade")),  # coverage 0, abstain
    ]
    rows = [as_row(i, label) for i, label in enumerate(prometheus)]
    rows.append(
        {"rollout_id": "r9", "score": None, "confidence": 0.0, "verdict": "error", "rationale": "x", "raw": None}
    )
    summary = RubricJudge.summarize(rows)
    assert summary == {"labels": 4, "mean_coverage": 0.416667, "sources": {"params": 2, "prompt": 1}}
    principles = [
        PRINCIPLES.to_label(PRINCIPLES_PLAN, replies("accuracy: yes\ncompleteness: no\nclarity: yes")),
        PRINCIPLES.to_label(PRINCIPLES_PLAN, replies("accuracy: yes\ncompleteness: yes")),  # clarity unread
        PRINCIPLES.to_label(PRINCIPLES.plan(PROMPT_RUBRIC, "qa"), replies("criterion 1: yes\ncriterion 2: no")),
    ]
    summary = RubricJudge.summarize([as_row(i, label) for i, label in enumerate(principles)])
    assert json.loads(json.dumps(summary)) == summary  # JSON-able for the metrics file
    assert summary["principle_satisfaction"] == {"accuracy": 1.0, "clarity": 1.0, "completeness": 0.5}
    assert summary["prompt_criteria_satisfaction"] == 0.5 and summary["sources"] == {"params": 2, "prompt": 1}
    assert summary["mean_coverage"] == 0.916667  # (1 + 3/4 + 1) / 3
    assert RubricJudge.summarize([]) == {"labels": 0, "mean_coverage": None, "sources": {}}


def test_real_default_model_judges_and_reruns_from_the_call_cache(policy_dir, tmp_path):
    """The real 135M model grades by Prometheus: every row gets a label (a grade or an abstain with the text kept)."""
    config = RubricJudgeConfig(backend=BackendConfig(model=str(policy_dir), batch_size=4), max_tokens=12)
    rows = [
        (MESSAGES, "The capital of France is Paris.", "Paris", [{"criterion": "Names Paris", "weight": 1.0}], "qa"),
        (MESSAGES, "Lyon.", None, None, "qa"),
    ]
    judge = RubricJudge(config)
    judge.set_call_cache(str(tmp_path / "calls"))
    first = judge.label_many(rows)
    judge.teardown()
    assert len(first) == 2 and all(lab.verdict in ("correct", "incorrect", "abstain") for lab in first)
    assert [json.loads(lab.raw)["source"] for lab in first] == ["prompt", "params"]
    assert all(json.loads(lab.raw)["texts"][0] is not None for lab in first)
    again = RubricJudge(config)
    again.set_call_cache(str(tmp_path / "calls"))
    assert again.label_many(rows) == first  # same bytes from the cache, no model loaded
    assert again.usage()["cache_hits"] == 2 and again.client.inner.inner._policy is None  # guard(cache(model))
