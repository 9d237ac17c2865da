"""summary: statistics of each config kind from its rows, order-free, with nulls and empty tables handled."""

import random

import pyarrow as pa
import pytest

from rewardmill.schemas import PAIR_V2, PRM_V1, RL_V1, SFT_V1
from rewardmill.transforms.export.hub_layout import to_table
from rewardmill.transforms.export.summary import Summary, fmt, mean, share, summarize, value_counts
from tests.transforms.export.rows import pair, prm, rl, sft


def metrics(kind: str, schema: pa.Schema, rows: list[dict]) -> dict[str, str]:
    return dict(summarize(kind, to_table(rows, schema)).metrics)


def test_pairs_agreement_confidence_and_length_bias():
    rows = [pair(0), pair(1, agreement=0.5, pair_type="correct_vs_incorrect"), {**pair(2), "chosen_n_tokens": 9}]
    got = metrics("preference", PAIR_V2, rows)
    assert got["mean agreement"] == "0.833"
    assert got["pairs all labelers agree on (agreement = 1)"] == "2 (66.7%)"
    assert got["verified pairs (chosen correct, rejected incorrect)"] == "1 (33.3%)"  # rejected_correct None elsewhere
    assert got["chosen longer than rejected"] == "1 (33.3%)"
    assert got["mean tokens, chosen / rejected"] == "5.000 / 4.000"
    counts = dict(summarize("preference", to_table(rows, PAIR_V2)).counts)
    assert counts["pair_type"] == (("best_vs_worst", 2), ("correct_vs_incorrect", 1))


def test_rl_pass_rates_ignore_unverified_prompts():
    rows = [rl(0, n_correct=0), rl(1, n_correct=4), rl(2, n_correct=None), rl(3, n_correct=2)]
    got = metrics("prompt_only", RL_V1, rows)
    assert got["prompts with a verified sample"] == "3 (75.0%)"
    assert got["mean pass rate (verified prompts)"] == "0.500"  # (0 + 1 + 0.5) / 3: the null is not a 0
    assert got["zero pass (0/k: no group-relative signal)"] == "1 (25.0%)"
    assert got["all pass (k/k: no group-relative signal)"] == "1 (25.0%)"
    counts = dict(summarize("prompt_only", to_table(rows, RL_V1)).counts)
    assert counts["difficulty"] == (("easy", 1), ("medium", 1), ("unsolved", 1), ("unverified", 1))


def test_sft_and_prm():
    got = metrics("prompt_completion", SFT_V1, [sft(i) for i in range(3)])
    assert got["verified correct"] == "2 (66.7%)" and got["not verified"] == "1 (33.3%)" and got["prompts"] == "3"
    got = metrics("stepwise", PRM_V1, [prm(i, "mc_steps") for i in range(4)])
    assert got["rows with a wrong step"] == "2 (50.0%)"  # even rollouts fail at their last step
    assert got["mean steps per row"] == "1.750"  # 1, 2, 3, 1 steps
    assert got["steps labelled correct"] == "5 (71.4%)"  # [F], [T, T], [T, T, F], [T]


def test_same_rows_in_any_order_give_the_same_summary():
    rows = [pair(i, agreement=0.1 * (i % 7) + 0.3) for i in range(40)]
    shuffled = rows[:]
    random.Random(1).shuffle(shuffled)
    assert summarize("preference", to_table(rows, PAIR_V2)) == summarize("preference", to_table(shuffled, PAIR_V2))


def test_empty_table_and_unknown_kind():
    assert summarize("preference", PAIR_V2.empty_table()) == Summary()
    assert summarize("other", to_table([pair(0)], PAIR_V2)).metrics == ()


@pytest.mark.parametrize(
    "values, expected",
    [
        ([1.0, None, 0.0], 0.5),  # nulls are not zeros
        ([None], None),  # nothing to average
        ([], None),
        ([0.1] * 10, 0.1),  # exactly rounded (fsum), not 0.09999999999999999
    ],
)
def test_mean(values, expected):
    assert mean(values) == expected


def test_formatting_and_counts():
    assert (fmt(None), fmt(0.12345), share(1, 3), share(0, 0)) == ("n/a", "0.123", "1 (33.3%)", "0")
    assert value_counts(["b", None, "a", "b"]) == (("(null)", 1), ("a", 1), ("b", 2))
