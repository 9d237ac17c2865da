"""The judge labelers on recorded answers of the real default model (see judge_recordings.py): position swap, panel
thresholds, reference appeals and rubric grading, end to end through prompts, parsers and vote rules.

SmolLM2-135M is a weak judge, and these tests pin down what rewardmill does with that: it always picks the answer
shown first, so the two-order rule turns its verdicts into ties; its panels agree only on "no"; it cannot follow
the Prometheus or principles formats, so rubric grades abstain with the text kept rather than guess a score.
"""

import json

import pytest

from rewardmill.transforms.judges.client import BackendConfig
from rewardmill.transforms.judges.transformers_client import TransformersJudgeClient
from rewardmill.transforms.labelers import judge_base
from rewardmill.transforms.labelers.pairwise_judge import PairwiseJudge
from rewardmill.transforms.labelers.panel_judge import PanelJudge
from rewardmill.transforms.labelers.reference_judge import ReferenceJudge
from rewardmill.transforms.labelers.rubric_judge import RubricJudge
from tests.transforms.labelers import judge_recordings as rec


@pytest.fixture
def recorded(monkeypatch, tmp_path):
    return rec.replay(monkeypatch, tmp_path)


def as_rows(labels) -> list[dict]:
    return [
        {"raw": lab.raw, "score": lab.score, "verdict": lab.verdict, "confidence": lab.confidence} for lab in labels
    ]


def replies(label) -> list[str | None]:
    """The judge texts behind a label: a reference judge's reply, or every panelist's reply per round."""
    raw = json.loads(label.raw)
    if raw.get("judge"):
        return [raw["judge"]["text"]]
    return [text for rnd in raw.get("rounds", ()) for text in rnd["texts"]]


def test_pairwise_two_order_rule_turns_position_bias_into_ties(recorded):
    judge = rec.pairwise_judge()
    groups = [judge.label_group(group) for group in rec.PAIRWISE_GROUPS]
    labels = [lab for group in groups for lab in group]
    comparisons = [c for lab in labels if lab.raw for c in json.loads(lab.raw)["comparisons"]]
    decided = [c for c in comparisons if c["result"] is not None]
    assert decided, "the recorded judge decided no comparison at all"
    # The real model answers "A" whichever answer is shown first: every readable pair of orders disagrees ...
    assert all(c["verdicts"] == ["A", "A"] and c["consistent"] is False for c in decided)
    # ... so no rollout wins anything: even scores with zero confidence (abstain) or nothing readable (None).
    assert {lab.score for lab in labels} <= {0.5, None} and all(lab.confidence == 0.0 for lab in labels)
    assert {lab.verdict for lab in labels} == {"abstain"}
    stats = PairwiseJudge.summarize(as_rows(labels))
    assert stats["swap_consistency"] == 0.0 and stats["first_position_win_rate"] == 1.0
    assert stats["pairs"] == 10 and 0 < stats["pairs_parsed"] < stats["pairs"]  # 6 + 3 + 1 pairs, each counted once
    assert all(t is not None for c in comparisons for t in c["texts"])  # the judge's text is kept in both orders


def test_reference_appeal_rechecks_only_rule_negatives(recorded):
    labels = rec.reference_judge().label_many(rec.APPEAL_ROWS)
    raws = [json.loads(lab.raw) for lab in labels]
    assert raws[0] == {**raws[0], "appealed": False, "judge": None}  # math_answer accepts \frac{1}{3}: no call
    # math_answer also accepts "x equals three" (version 7 reads number words): every other rollout was appealed
    assert [raw["appealed"] for raw in raws] == [False, True, True, False, True, True]
    assert all(raw["rule"]["verdict"] != "correct" for raw in raws if raw["appealed"])
    one_third = labels[1]  # "It is one third.": the rule cannot read words, the judge says yes with P(yes) ~0.71
    assert one_third.verdict == "correct" and 0.5 < one_third.score < 0.9 and raws[1]["judge"]["parsed"] is True
    unreadable = [
        lab for lab, raw in zip(labels, raws, strict=True) if raw.get("judge") and raw["judge"]["parsed"] is None
    ]
    assert unreadable and all(lab.verdict == "abstain" and lab.score is None for lab in unreadable)
    stats = ReferenceJudge.summarize(
        [{**row, "verdict": lab.verdict} for row, lab in zip(as_rows(labels), labels, strict=True)]
    )
    assert stats["appealed"] == 4 - len(unreadable) and stats["overturned"] == 1


@pytest.mark.parametrize(
    ("threshold", "accepted_rows"),
    [
        (0.5, [0, 1, 3, 4]),  # 2 of 3 is enough
        (2 / 3, [0, 1, 3, 4]),  # the default: 2 of 3
        (0.8, [3, 4]),  # only the unanimous rows (row 3: 2 of 2 readable votes)
        (1.0, [3, 4]),
    ],
)
def test_panel_threshold_decides_which_recorded_votes_become_labels(recorded, threshold, accepted_rows):
    """Votes come from P(yes) at the answer (votes_from="logprobs"): a reply such as "The answer is Yes" votes even
    when cut at max_tokens. Row 2's replies never reach a yes/no, so nobody votes there."""
    labels = rec.panel_judge(kind="binary", max_tokens=4, threshold=threshold).label_many(rec.PANEL_ROWS)
    # row 5's empty answer has no substance: 0.0 without asking the panel (it used to be accepted, unanimously)
    assert (labels[5].score, labels[5].verdict, labels[5].raw) == (0.0, "incorrect", None)
    labels = labels[:5]
    raws = [json.loads(lab.raw) for lab in labels]
    assert [i for i, raw in enumerate(raws) if raw["accepted"]] == accepted_rows
    for lab, raw in zip(labels, raws, strict=True):
        votes = raw["rounds"][-1]["votes"]
        assert len(votes) == 3 and len(raw["rounds"][-1]["texts"]) == 3  # every vote and reply is kept
        valid = [v for v in votes if v is not None]
        if raw["accepted"]:  # the label is the majority vote
            majority = max(set(valid), key=valid.count)
            assert (lab.score, lab.verdict) == ((1.0, "correct") if majority else (0.0, "incorrect"))
        else:
            assert lab.score is None and lab.verdict == "abstain"
    assert raws[2]["rounds"][0]["votes"] == [None, None, None]
    # the 135M judge is weak: with the answers fenced it calls "London." wrong for Paris but "7 + 5 = 75" right (2 of
    # 3) and "A spider has eight legs." wrong (3 of 3)
    assert labels[3].verdict == "incorrect" and labels[1].verdict == ("correct" if threshold <= 2 / 3 else "abstain")
    assert labels[4].verdict == "incorrect"
    stats = PanelJudge.summarize(as_rows(labels))
    assert stats["acceptance_rate"] == pytest.approx(len(accepted_rows) / 4)  # 4 rows had readable votes


def test_likert_panels_abstain_when_too_few_votes_are_readable(recorded):
    for judge in (rec.panel_judge(kind="likert"), rec.panel_judge(kind="likert", reflection=True)):
        labels = judge.label_many(rec.PANEL_ROWS)
        assert (labels[-1].score, labels[-1].verdict) == (0.0, "incorrect")  # the empty answer: no call
        assert all(lab.verdict == "abstain" and lab.score is None for lab in labels[:-1])
        assert all("readable" in lab.rationale for lab in labels[:-1])


@pytest.mark.parametrize("mode", ["prometheus", "principles"])
def test_rubric_grades_from_the_small_model_abstain_with_the_text_kept(recorded, mode):
    labels = rec.rubric_judge(mode=mode).label_many(rec.RUBRIC_ROWS)
    assert all(lab.verdict == "abstain" and lab.score is None for lab in labels)
    raws = [json.loads(lab.raw) for lab in labels]
    assert all(raw["texts"] and all(t for t in raw["texts"]) for raw in raws)
    sources = [raw["source"] for raw in raws]
    # the prompt's own rubric first; a task rubric exists for math in prometheus mode only (task_rubrics)
    expected = ["prompt"] * 2 + (["task"] * 2 if mode == "prometheus" else ["params"] * 2) + ["params"] * 2
    assert sources == expected
    if mode == "prometheus":
        assert [len(raw["texts"]) for raw in raws] == [2, 2, 1, 1, 1, 1]  # one grade per prompt criterion
    assert RubricJudge.summarize(as_rows(labels))["labels"] == 6


def test_recordings_are_the_real_models_answers(policy_dir, monkeypatch, tmp_path):
    """The recordings' model id is the real default model's fingerprint, and re-asking the model gives them back."""
    model = TransformersJudgeClient(BackendConfig(model=str(policy_dir), batch_size=4))
    assert model.model_id == rec.MODEL_ID_FILE.read_text().strip()
    monkeypatch.setattr(judge_base, "make_client", lambda backend: model)
    live = rec.reference_judge().label_many(rec.APPEAL_ROWS[:2]) + rec.panel_judge(
        kind="binary", max_tokens=4
    ).label_many(rec.PANEL_ROWS[:1])
    rec.replay(monkeypatch, tmp_path)
    replayed = rec.reference_judge().label_many(rec.APPEAL_ROWS[:2]) + rec.panel_judge(
        kind="binary", max_tokens=4
    ).label_many(rec.PANEL_ROWS[:1])
    # Same texts and verdicts; logprobs may differ in the 6th digit, because padding depends on the batch mates.
    assert [lab.verdict for lab in live] == [lab.verdict for lab in replayed]
    assert [lab.score for lab in live] == pytest.approx([lab.score for lab in replayed], abs=1e-3)
    assert [replies(lab) for lab in live] == [replies(lab) for lab in replayed]


def test_rubric_principles_one_call_each_grade_from_the_small_model(recorded):
    """The happy path of rubric scoring on the real model: one yes/no call per principle, decided by P(yes).
    Where the multi-line format gives nothing readable, the 135M model answers "The answer is Yes" for many
    principles; "The response does not" (no yes/no within 4 tokens) stays unread and lowers the coverage."""
    labels = rec.rubric_judge(mode="principles", principle_calls="each").label_many(rec.RUBRIC_ROWS)
    raws = [json.loads(lab.raw) for lab in labels]
    graded = [i for i, lab in enumerate(labels) if lab.score is not None]
    assert graded == [2, 3, 4, 5]  # the params principles; the prompt's own criteria (rows 0-1) stay unread
    assert all(labels[i].verdict == "abstain" for i in (0, 1))
    assert [raws[i]["coverage"] for i in graded] == [0.5, 0.5, 1.0, 1.0]  # accuracy (weight 2) read on every row
    for i in graded:  # the score is the weighted share of the principles read that were voted yes
        raw, weights = raws[i], raws[i]["weights"]
        read = [name for name, value in raw["results"].items() if value is not None]
        assert all(0.5 <= raw["p_yes"][name] <= 1 for name in read)  # each vote is P(yes) >= 0.5
        expected = sum(weights[n] for n in read if raw["results"][n]) / sum(weights[n] for n in read)
        assert labels[i].score == pytest.approx(expected, abs=1e-6) and labels[i].verdict == "correct"
    # the same rows in one call listing every principle: the 135M model answers none readably
    listed = rec.rubric_judge(mode="principles").label_many(rec.RUBRIC_ROWS)
    assert all(lab.verdict == "abstain" for lab in listed)
