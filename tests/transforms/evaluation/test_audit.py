"""A labeler's precision, recall, abstain rate and hack pass rate on gold rows, worked out by hand."""

import pickle

import pytest

from rewardmill.transforms.evaluation.audit import accuracy, measure, share, text_table, wilson_interval
from rewardmill.transforms.evaluation.gold_packs import GoldRow
from rewardmill.transforms.labelers.base import Label


class Scripted:
    """Says what the completion says: `correct`, `incorrect`, `partial` (0.5, incorrect), `abstain`, `raise`."""

    reads = ("completion",)

    def label(self, completion: str) -> Label:
        if completion == "raise":
            raise RuntimeError("boom")
        return {
            "correct": Label(1.0, 1.0, "correct"),
            "incorrect": Label(0.0, 1.0, "incorrect"),
            "partial": Label(0.5, 0.5, "incorrect"),
            "abstain": Label(None, 0.0, "abstain", "no reference"),
        }[completion]


def row(id_: str, kind: str, says: str, **extra) -> GoldRow:
    gold = "correct" if kind == "honest" else "incorrect"
    return GoldRow(id_, "scripted", "c", kind, gold, {"completion": says}, "fixture", 1, **extra)


ROWS = [
    row("a", "honest", "correct"),  # true positive
    row("b", "honest", "correct"),  # true positive
    row("c", "honest", "incorrect"),  # a miss
    row("d", "honest", "abstain"),  # a miss, and an abstain
    row("e", "wrong", "incorrect"),  # true negative
    row("f", "wrong", "correct"),  # false positive
    row("g", "hack", "correct"),  # a hack that passes
    row("h", "hack", "incorrect"),  # a hack caught
    row("i", "hack", "raise"),  # a crash: error label, an abstain, not credited
    row("j", "hack", "partial"),  # a partial score on a hack is credit (the row allows none)
]


def test_metrics_on_a_pack_with_known_answers():
    result = measure(Scripted(), ROWS)
    got = {m: (result[m]["k"], result[m]["n"]) for m in ("precision", "recall", "abstain_rate", "hack_pass_rate")}
    assert got == {
        "precision": (2, 4),  # called correct: a, b, f, g; gold-correct among them: a, b
        "recall": (2, 4),  # gold-correct: a, b, c, d; called correct: a, b
        "abstain_rate": (2, 10),  # d (abstain), i (error)
        "hack_pass_rate": (2, 4),  # hacks g, h, i, j; credited: g (correct), j (score 0.5 > 0)
    }
    assert (result["gold_agreement"]["k"], result["rows"]) == (5, 10)  # a, b, e, h, i
    assert [d["id"] for d in result["disagreements"]] == ["c", "d", "f", "g", "j"]
    assert result["precision"]["value"] == 0.5 and result["abstain_rate"]["value"] == 0.2
    crash = measure(Scripted(), [row("i2", "honest", "raise")])["disagreements"][0]
    assert (crash["verdict"], crash["score"], crash["rationale"]) == ("error", None, "RuntimeError: boom")


def test_a_partial_score_passes_where_the_row_allows_it_and_an_exact_verdict_is_required_where_named():
    allowed = row("k", "hack", "partial", max_score=0.5)
    named = row("l", "wrong", "incorrect", verdict="timeout")
    result = measure(Scripted(), [allowed, named])
    assert result["hack_pass_rate"]["k"] == 0 and [d["id"] for d in result["disagreements"]] == ["l"]


def test_rows_lacking_a_column_it_reads_are_left_out_and_counted():
    result = measure(
        Scripted(), [row("a", "honest", "correct"), GoldRow("z", "s", "c", "honest", "correct", {}, "p", 2)]
    )
    assert (result["rows"], result["left_out"]) == (1, {"missing_column": 1})


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        (2, 4, 0.150036, 0.849964),  # symmetric around 1/2
        (20, 20, 0.838874, 1.0),  # all right: still not [1, 1]
        (0, 10, 0.0, 0.277533),
    ],
)
def test_wilson_intervals(k, n, low, high):
    got = wilson_interval(k, n)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((low, high), abs=1e-5)
    assert wilson_interval(0, 0) == {"n": 0, "k": 0, "value": None, "ci_low": None, "ci_high": None}


def test_no_outcomes_give_no_values_and_the_table_says_so():
    assert all(v["value"] is None for v in accuracy([]).values())
    assert share(None) == "-" and share(wilson_interval(2, 4)) == "0.50 (0.15..0.85, n=4)"
    results = {
        "math_answer": {
            "labeler": "math_answer",
            "rows_from": "labeler",
            "packs": ["math"],
            **measure(Scripted(), ROWS),
        },
        "panel": {"labeler": "panel_judge", "skipped": "model-based: not run"},
    }
    lines = text_table(results).splitlines()
    assert lines[0].split()[:3] == ["labeler", "rows", "precision"]
    assert "0.50 (0.15..0.85, n=4)" in lines[1] and lines[1].endswith("math_answer rows in math")
    assert lines[2].startswith("panel") and "not measured: model-based" in lines[2]


def test_gold_rows_pickle():
    assert pickle.loads(pickle.dumps(ROWS[0])) == ROWS[0]
