import json
import pickle

import pytest

from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.judges.client import BackendConfig, Completion, JudgeResponse
from rewardmill.transforms.labelers import get_labeler_class
from rewardmill.transforms.labelers.pairwise_judge import PairwiseJudge, PairwiseJudgeConfig, schedule

MESSAGES = [{"role": "user", "content": "What is 2 + 3?"}]


def comparison(i, j, first, second, errors=(None, None)):
    return {
        "i": i,
        "j": j,
        "texts": [f"Winner: {first}", f"Winner: {second}"],
        "errors": list(errors),
        "verdicts": [first, second],
    }


@pytest.mark.parametrize(
    ("n", "max_opponents", "expected"),
    [
        (1, 3, []),  # nothing to compare
        (2, 3, [(0, 1)]),
        (4, 3, [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]),  # all pairs: each meets 3 opponents
        (6, 2, [(0, 1), (0, 5), (1, 2), (2, 3), (3, 4), (4, 5)]),  # a ring: each meets its 2 neighbours
    ],
)
def test_schedule(n, max_opponents, expected):
    assert schedule(n, max_opponents) == expected


def test_schedule_gives_every_rollout_about_max_opponents():
    pairs = schedule(10, 4)
    degree = {i: sum(i in p for p in pairs) for i in range(10)}
    assert set(degree.values()) == {4} and len(set(pairs)) == len(pairs)


@pytest.mark.parametrize(
    ("comparisons", "index", "verdict", "score", "confidence"),
    [
        ([comparison(0, 1, "A", "B")], 0, "correct", 1.0, 1.0),  # x wins in both orders
        ([comparison(0, 1, "A", "B")], 1, "incorrect", 0.0, 1.0),  # ... so y loses
        ([comparison(0, 1, "A", "A")], 0, "abstain", 0.5, 0.0),  # position bias: orders disagree -> tie
        ([comparison(0, 1, "tie", "tie")], 1, "abstain", 0.5, 1.0),  # a consistent tie is not a win
        ([comparison(0, 1, "B", "A"), comparison(1, 2, "A", "B")], 1, "correct", 1.0, 1.0),  # wins as y and as x
        ([comparison(0, 1, None, "A")], 0, "abstain", None, 0.0),  # one order unreadable: nothing decided
        ([], 0, "abstain", None, 0.0),  # a prompt with one rollout
    ],
)
def test_to_label_table(comparisons, index, verdict, score, confidence):
    label = PairwiseJudge().to_label(index, comparisons)
    assert (label.verdict, label.score, label.confidence) == (verdict, score, confidence)
    assert label.rationale and label.reject_reason is None
    if comparisons:
        assert json.loads(label.raw)["comparisons"][0]["texts"]  # the judge's text in both orders is kept


def test_every_call_failed_goes_to_rejects_and_partial_failure_is_recorded():
    failed = comparison(0, 1, None, None, errors=("InternalServerError: 500", "APITimeoutError"))
    label = PairwiseJudge().to_label(0, [failed])
    assert label.verdict == "error" and label.reject_reason == "judge_call_failed" and "500" in label.rationale
    label = PairwiseJudge().to_label(0, [failed, comparison(0, 2, "A", "B")])
    assert label.score == 1.0 and json.loads(label.raw)["comparisons"][0]["errors"][0].endswith("500")


def test_summarize_counts_each_pair_once():
    judge = PairwiseJudge()
    comparisons = [comparison(0, 1, "A", "B"), comparison(0, 2, "A", "A"), comparison(1, 2, "tie", "tie")]
    rows = [{"raw": judge.to_label(i, comparisons).raw, "score": 0.5} for i in range(3)]
    stats = PairwiseJudge.summarize(rows)
    assert stats["pairs"] == 3 and stats["pairs_parsed"] == 3
    assert stats["swap_consistency"] == pytest.approx(2 / 3)  # (A, A) disagrees after the swap
    assert stats["share_decisive"] == pytest.approx(1 / 3)  # only the first pair has a winner
    assert stats["first_position_win_rate"] == pytest.approx(3 / 4)  # 3 of the 4 A/B votes went to A
    assert PairwiseJudge.summarize([])["swap_consistency"] is None


def test_label_group_asks_both_orders_and_keeps_row_order():
    class Recorder:
        model_id = "recorder"

        def __init__(self):
            self.requests = []

        def complete(self, requests):
            self.requests += requests
            # Always prefers the answer that says 5, in either position: a consistent judge.
            return [
                JudgeResponse(
                    (Completion("Winner: A" if "[Answer A]\n5" in r.messages[1]["content"] else "Winner: B", "stop"),)
                )
                for r in requests
            ]

    judge = PairwiseJudge()
    judge._clients[judge.config.backend] = recorder = Recorder()
    labels = judge.label_group([(MESSAGES, "7"), (MESSAGES, "5"), (MESSAGES, "6")])
    assert len(recorder.requests) == 6  # 3 pairs x 2 orders
    assert [lab.score for lab in labels] == [0.25, 1.0, 0.25]  # "5" beats both; "7" vs "6" is a position-bias tie
    assert labels[1].verdict == "correct" and labels[1].confidence == 1.0


def test_config_and_registry():
    cfg = from_dict(PairwiseJudgeConfig, {"max_opponents": 2, "backend": {"model": "m"}}, "pairwise")
    assert cfg.max_opponents == 2 and cfg.backend == BackendConfig(model="m")
    with pytest.raises(ConfigError, match="max_opponents"):
        from_dict(PairwiseJudgeConfig, {"max_opponents": 0}, "pairwise")
    assert get_labeler_class("pairwise_judge") is PairwiseJudge
    assert pickle.loads(pickle.dumps(PairwiseJudge())).config == PairwiseJudgeConfig()


def test_an_answer_with_no_substance_loses_without_a_call_and_is_left_out_of_the_judge_statistics():
    from tests.transforms.labelers.scripted import ScriptedClient

    judge = PairwiseJudge()
    judge._clients[judge.config.backend] = client = ScriptedClient(lambda r: "[[A]]")
    rows = [(MESSAGES, "{"), (MESSAGES, "2 + 3 = 5"), (MESSAGES, "Let's solve this step by step.")]
    labels = judge.label_group(rows)
    assert (labels[0].score, labels[0].verdict) == (0.0, "incorrect") and labels[2].score == 0.0
    assert labels[1].score == 1.0 and labels[1].verdict == "correct"  # it beat both, and no call was made
    assert client.calls == []
    summary = PairwiseJudge.summarize([{"raw": lab.raw} for lab in labels if lab.raw])
    assert summary["pairs"] == 0
