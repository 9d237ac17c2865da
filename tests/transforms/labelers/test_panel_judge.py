import json
import math
import pickle

import pytest

from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.judges.agreement import agreement_metrics
from rewardmill.transforms.judges.client import BackendConfig, Completion, JudgeResponse, TokenLogprob
from rewardmill.transforms.labelers import get_labeler_class
from rewardmill.transforms.labelers.panel_judge import PanelistSpec, PanelJudge, PanelJudgeConfig
from tests.transforms.judges.conftest import one_torch_thread  # noqa: F401  (autouse: generate on one thread)
from tests.transforms.labelers.scripted import ScriptedClient, replies

MESSAGES = [{"role": "user", "content": "What is 2 + 3?"}]
NAMES = ["strict", "lenient", "expert"]
FAIL = JudgeResponse((), error="InternalServerError: 500")


def as_row(i: int, label) -> dict:
    keys = ("score", "confidence", "verdict", "rationale", "raw")
    return {"rollout_id": f"r{i}", **{k: getattr(label, k) for k in keys}}


@pytest.mark.parametrize(
    ("kind", "got", "verdict", "score", "confidence"),
    [
        ("likert", ("Score: 4", "Score: 4", "Score: 4"), "correct", 0.75, 1.0),  # unanimous
        ("likert", ("Score: 5", "**Score:** 5", "Score: 2"), "correct", 1.0, 0.666667),  # 2/3 at threshold 2/3
        ("likert", ("Score: 1", "Score: 1\nReason: wrong", "Score: 3"), "incorrect", 0.0, 0.666667),  # agreed low
        ("likert", ("Score: 1", "Score: 3", "Score: 5"), "abstain", None, 0.0),  # split: 1/3 < 2/3
        ("likert", ("Score: 4", "Score: 2", "no idea"), "abstain", None, 0.0),  # tie for the top: no label
        ("likert", ("Score: 4", "nonsense", ""), "abstain", None, 0.0),  # 1 valid vote < min_valid 2
        ("likert", ("I like it", "", "Score: 9"), "abstain", None, 0.0),  # malformed: nothing readable
        ("likert", ("Score: 4", "Score: 4", FAIL), "correct", 0.75, 1.0),  # partial failure = a missing vote
        ("likert", ("Score: 4", FAIL, FAIL), "abstain", None, 0.0),  # partial failure leaves too few votes
        ("likert", (FAIL, FAIL, FAIL), "error", None, 0.0),  # every call failed: rejected, retried next run
        ("binary", ("Yes", "Yes.", "No"), "correct", 1.0, 0.666667),  # majority yes
        ("binary", ("No", "no", "No, it is 5."), "incorrect", 0.0, 1.0),  # unanimous no
        ("binary", ("Yes", "No", "Maybe"), "abstain", None, 0.0),  # 1-1 tie, one malformed
    ],
)
def test_to_label_table(kind, got, verdict, score, confidence):
    label = PanelJudge(PanelJudgeConfig(kind=kind)).to_label(replies(*got))
    assert (label.verdict, label.score, label.confidence) == (verdict, score, confidence)
    assert label.rationale and len(label.rationale) <= 500
    if verdict == "error":
        assert label.reject_reason == "judge_call_failed" and label.raw is None  # the stage sends it to _rejects
        return
    raw = json.loads(label.raw)
    assert raw["panelists"] == NAMES and raw["accepted"] == (verdict != "abstain")
    (first,) = raw["rounds"]
    assert first["texts"] == [r.text for r in replies(*got)]  # every reply kept, None for a failed call
    assert first["errors"] == [r.error for r in replies(*got)]
    assert len(first["votes"]) == 3


def with_logprobs(text: str, yes: float, no: float) -> JudgeResponse:
    """A reply whose first token carries P("Yes") = yes and P("No") = no among its alternatives."""
    first = TokenLogprob(text.split()[0], math.log(max(yes, no)), {"Yes": math.log(yes), "No": math.log(no)})
    return JudgeResponse((Completion(text, "length", (first,)),))


@pytest.mark.parametrize(
    ("votes_from", "got", "votes", "verdict"),
    [
        # the text says nothing readable, the first token's P(yes) decides each vote
        ("logprobs", (("The", 0.7, 0.2), ("The", 0.6, 0.3), ("77", 0.1, 0.8)), [True, True, False], "correct"),
        ("text", (("The", 0.7, 0.2), ("The", 0.6, 0.3), ("77", 0.1, 0.8)), [None, None, None], "abstain"),
        # P(yes) wins over a reply that starts "No" but puts more mass on "Yes" (the soft score ranks better)
        ("logprobs", (("No", 0.6, 0.4), ("No", 0.2, 0.7), ("No", 0.1, 0.9)), [True, False, False], "incorrect"),
        # yes/no carry too little mass at the first position (< 0.5): the text decides
        ("logprobs", (("Yes", 0.2, 0.1), ("Yes", 0.2, 0.1), ("No", 0.1, 0.2)), [True, True, False], "correct"),
    ],
)
def test_binary_votes_from_logprobs(votes_from, got, votes, verdict):
    judge = PanelJudge(PanelJudgeConfig(kind="binary", votes_from=votes_from))
    assert judge._sampling().top_logprobs == (20 if votes_from == "logprobs" else 0)
    label = judge.to_label([with_logprobs(*reply) for reply in got])
    assert json.loads(label.raw)["rounds"][0]["votes"] == votes and label.verdict == verdict


def test_split_rationale_names_the_threshold():
    label = PanelJudge(PanelJudgeConfig(threshold=0.8)).to_label(replies("Score: 4", "Score: 4", "Score: 2"))
    assert label.verdict == "abstain" and label.rationale == "panel split: 2/3 valid votes agree < threshold 0.8"
    assert json.loads(label.raw)["rounds"][0]["votes"] == [4, 4, 2]


@pytest.mark.parametrize(
    ("kind", "reference", "expected"),
    [
        ("likert", "5", "Score:"),  # Likert: the pointwise rating prompt, reference unused
        ("binary", "5", "Reference answer:\n```\n5\n```"),  # binary with a reference: equivalence (fenced)
        ("binary", None, "Is the answer correct?"),  # binary without one: plain correctness
        ("binary", "  ", "Is the answer correct?"),  # a blank reference is no reference
    ],
)
def test_requests_put_each_persona_before_the_task(kind, reference, expected):
    judge = PanelJudge(PanelJudgeConfig(kind=kind))
    requests = judge.requests(MESSAGES, "5", reference)
    assert len(requests) == 3 and all(r.sampling.temperature == 0 for r in requests)
    for request, name in zip(requests, NAMES, strict=True):
        assert request.messages[0]["content"].startswith(f"You are a{'n' if name == 'expert' else ''} {name}")
        assert expected in "\n".join(m["content"] for m in request.messages)
    assert MESSAGES == [{"role": "user", "content": "What is 2 + 3?"}]  # never mutate what you were handed


def test_one_complete_call_per_backend_for_the_whole_batch():
    other = BackendConfig(kind="openai", model="judge-b", base_url="http://localhost:1/v1")
    panel = (
        PanelistSpec("a", "Judge A."),
        PanelistSpec("b", "Judge B.", backend=other),
        PanelistSpec("c", "Judge C."),
    )
    judge = PanelJudge(PanelJudgeConfig(panelists=panel))
    main, second = ScriptedClient(lambda r: "Score: 5"), ScriptedClient(lambda r: "Score: 1")
    judge._clients = {judge.config.backend: main, other: second}
    labels = judge.label_many([(MESSAGES, "5", None), (MESSAGES, "7", None)])
    assert [len(c) for c in main.calls] == [4] and [len(c) for c in second.calls] == [2]  # a and c share a client
    assert [lab.score for lab in labels] == [1.0, 1.0] and all(lab.confidence == 0.666667 for lab in labels)
    assert json.loads(labels[0].raw)["rounds"][0]["votes"] == [5, 1, 5]


def test_reflection_round_decides_and_keeps_both_rounds():
    panel = tuple(PanelistSpec(n, f"Judge {n}.") for n in "abc")

    def answer(request):  # round 1: c dissents; round 2, after reading the others' replies, c agrees
        dissenter = request.messages[0]["content"].startswith("Judge c")
        reflecting = request.messages[-2]["role"] == "assistant"
        return "Score: 2" if dissenter and not reflecting else "Score: 4"

    judge = PanelJudge(PanelJudgeConfig(panelists=panel, threshold=1.0, reflection=True))
    client = judge._clients[judge.config.backend] = ScriptedClient(answer)
    label = judge.label_many([(MESSAGES, "5", None), (MESSAGES, "five", None)])[0]
    assert [len(c) for c in client.calls] == [6, 6]  # both rows split in round 1: one batched call per round
    raw = json.loads(label.raw)
    assert [r["votes"] for r in raw["rounds"]] == [[4, 4, 2], [4, 4, 4]]  # the decision uses round 2
    assert (label.verdict, label.score, label.confidence) == ("correct", 0.75, 1.0)
    assert "after reflection" in label.rationale
    reflection = client.calls[1][2].messages  # c's round 2: its own reply, then the others'
    assert reflection[-2] == {"role": "assistant", "content": "Score: 2"}
    assert "- a: Score: 4" in reflection[-1]["content"] and "- c:" not in reflection[-1]["content"]
    summary = PanelJudge.summarize([as_row(0, label)])
    assert summary["reflected"] == 1 and summary["reflection_changed_votes"] == 1

    judge._clients[judge.config.backend] = agreeing = ScriptedClient(lambda r: "Score: 4")
    assert len(json.loads(judge.label(MESSAGES, "5").raw)["rounds"]) == 1
    assert len(agreeing.calls) == 1  # a unanimous first round needs no second


def test_reflection_skips_failed_panelists_and_rejects_a_failed_round():
    judge = PanelJudge(PanelJudgeConfig(reflection=True))
    first = replies("Score: 4", "Score: 2", FAIL)
    again = judge.reflections(judge.requests(MESSAGES, "5", None), first)
    assert again[2] is None and "- expert" not in again[0].messages[-1]["content"]  # no reply to show or reflect
    assert judge.to_label(first, replies(FAIL, FAIL, FAIL)).reject_reason == "judge_call_failed"


def test_config_from_params_and_bad_values():
    params = {
        "panelists": [{"name": "strict"}, {"name": "mine", "persona": "Be kind.", "backend": {"model": "m"}}],
        "kind": "binary",
        "threshold": 1,
    }
    cfg = from_dict(PanelJudgeConfig, params, "panel")
    assert cfg.panelists[1] == PanelistSpec("mine", "Be kind.", BackendConfig(model="m")) and cfg.threshold == 1.0
    assert cfg.panelists[0].as_persona().system_prompt.startswith("You are a strict grader")
    bad = [
        ({"threshold": 1.5}, "threshold"),  # above 1
        ({"threshold": 0}, "threshold"),  # 0 would accept any split
        ({"panelist": []}, "unknown key"),  # typo
        ({"panelists": [{"name": "strict", "persona": "x", "model": "m"}, {"name": "expert"}]}, "unknown key"),
        ({"panelists": [{"name": "strict"}]}, "at least 2"),  # one judge is no panel
        ({"panelists": [{"name": "strict"}, {"name": "strict"}]}, "distinct"),
        ({"panelists": [{"name": "strict"}, {"name": "nobody"}]}, "needs a persona"),  # no default of that name
        ({"kind": "median"}, "must be one of"),
        ({"min_valid": 4}, "min_valid"),  # more than the 3 panelists can give
        ({"votes_from": "vibes"}, "votes_from"),
    ]
    for values, error in bad:
        with pytest.raises(ConfigError, match=error):
            from_dict(PanelJudgeConfig, values, "panel")


def test_registered_and_pickles():
    assert get_labeler_class("panel_judge") is PanelJudge
    judge = PanelJudge(PanelJudgeConfig(kind="binary"))
    judge._clients = {judge.config.backend: ScriptedClient(lambda r: "Yes")}
    copy = pickle.loads(pickle.dumps(judge))
    assert copy.config == judge.config and copy._clients == {}


def test_summarize():
    judge = PanelJudge()
    labels = [
        judge.to_label(replies("Score: 4", "Score: 4", "Score: 4")),  # accepted, agreement 1
        judge.to_label(replies("Score: 5", "Score: 5", "Score: 2")),  # accepted, 2/3
        judge.to_label(replies("Score: 1", "Score: 3", "Score: 5")),  # split, 1/3
        judge.to_label(replies("?", "?", "?")),  # no valid vote: left out of the acceptance rate
    ]
    rows = [as_row(i, label) for i, label in enumerate(labels)]
    rows.append(
        {"rollout_id": "r9", "score": None, "confidence": 0.0, "verdict": "error", "rationale": "x", "raw": None}
    )
    summary = PanelJudge.summarize(rows)
    assert json.loads(json.dumps(summary)) == summary  # JSON-able for the metrics file
    assert summary["labels"] == 5 and summary["accepted"] == 2
    assert summary["acceptance_rate"] == 0.666667 and summary["mean_agreement"] == 0.666667
    ratings = [[4, 5, 1, None], [4, 5, 3, None], [4, 2, 5, None]]  # panelists x items, final round
    assert summary["agreement"] == agreement_metrics(ratings, "ordinal", NAMES)
    assert "reflected" not in summary  # no reflection ran
    assert PanelJudge.summarize([]) == {
        "labels": 0,
        "accepted": 0,
        "acceptance_rate": None,
        "mean_agreement": None,
        "agreement": None,
    }


def test_real_default_model_judges_and_reruns_from_the_call_cache(policy_dir, tmp_path):
    """The real 135M model as every panelist: each row gets a well-formed label (kept, split or no votes)."""
    backend = BackendConfig(model=str(policy_dir), batch_size=4)
    config = PanelJudgeConfig(backend=backend, kind="binary", max_tokens=8, threshold=1.0, reflection=True)
    rows = [(MESSAGES, "2 + 3 = 5", "5"), (MESSAGES, "2 + 3 = 7", None)]
    judge = PanelJudge(config)
    judge.set_call_cache(str(tmp_path / "calls"))
    first = judge.label_many(rows)
    calls = judge.usage()["cache_misses"]
    judge.teardown()
    assert len(first) == 2 and all(lab.verdict in ("correct", "incorrect", "abstain") for lab in first)
    for lab in first:
        raw = json.loads(lab.raw)
        assert raw["accepted"] == (lab.score is not None) and all(t is not None for t in raw["rounds"][0]["texts"])
    again = PanelJudge(config)
    again.set_call_cache(str(tmp_path / "calls"))
    assert again.label_many(rows) == first  # same bytes from the cache, no model loaded
    assert again.usage()["cache_hits"] == calls and again.client.inner.inner._policy is None  # guard(cache(model))
