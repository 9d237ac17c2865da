import polars as pl
import pytest

from rewardmill.transforms.pairing.strategies import PairsConfig, choose_pairs, stable_hash


def kept(*specs) -> pl.DataFrame:
    """specs: (rollout_id, reward, correct, n_tokens[, prompt_id])."""
    rows = [
        {
            "prompt_id": s[4] if len(s) > 4 else "p",
            "rollout_id": s[0],
            "reward": s[1],
            "correct": s[2],
            "n_tokens": s[3],
        }
        for s in specs
    ]
    return pl.DataFrame(rows, schema={"prompt_id": pl.String, "rollout_id": pl.String, "reward": pl.Float64,
                                      "correct": pl.Boolean, "n_tokens": pl.Int32})  # fmt: skip


def prompts(*ids, flags=None) -> pl.DataFrame:
    flags = flags or {}
    return pl.DataFrame(
        {
            "prompt_id": list(ids),
            "flag_reason": [flags.get(i) for i in ids],
            "flag_detail": [flags.get(i) for i in ids],
        },
        schema={"prompt_id": pl.String, "flag_reason": pl.String, "flag_detail": pl.String},
    )


FOUR = kept(("a", 1.0, True, 100), ("b", 0.9, True, 20), ("c", 0.2, False, 30), ("d", 0.0, False, 90))


def pairs_of(strategy, frame=FOUR, **kw) -> list[tuple[str, str]]:
    picked, rejects, _ = choose_pairs(frame, prompts("p"), PairsConfig(strategies=(strategy,), **kw))
    return sorted(zip(picked["chosen_id"], picked["rejected_id"], strict=True)), rejects["reason"].to_list()


@pytest.mark.parametrize(
    "strategy, kw, expected",
    [
        ("best_vs_worst", {}, [("a", "d")]),
        # every pair above the margin, largest first, capped
        ("all_above_margin", {"max_pairs_per_prompt": 2}, [("a", "d"), ("b", "d")]),  # margins 1.0 and 0.9
        ("all_above_margin", {"min_margin": 0.75}, [("a", "c"), ("a", "d"), ("b", "d")]),
        # verified correct vs verified incorrect only
        ("correct_vs_incorrect", {}, [("a", "c"), ("a", "d"), ("b", "c"), ("b", "d")]),
        ("correct_vs_incorrect", {"max_pairs_per_prompt": 1}, [("a", "d")]),
        # closest lengths within the ratio: b (20) vs c (30) is 1.5, a (100) vs d (90) is 1.11
        ("length_matched", {}, [("a", "d")]),
        ("length_matched", {"length_match_ratio": 1.05}, []),
    ],
)
def test_strategies(strategy, kw, expected):
    assert pairs_of(strategy, **kw)[0] == expected


def test_best_vs_random_is_seeded_and_below_the_best():
    seen = {pairs_of("best_vs_random", seed=s)[0][0] for s in range(12)}
    assert {c for c, _ in seen} == {"a"} and len({r for _, r in seen}) > 1  # different seeds, different picks
    assert pairs_of("best_vs_random", seed=3) == pairs_of("best_vs_random", seed=3)


@pytest.mark.parametrize(
    "frame, strategy, kw, reason",
    [
        (kept(("a", 1.0, True, 5)), "best_vs_worst", {}, "too_few_scored"),  # one rollout
        (kept(("a", 0.5, None, 5), ("b", 0.5, None, 5)), "best_vs_worst", {}, "tie"),  # never paired
        (kept(("a", 0.6, None, 5), ("b", 0.5, None, 5)), "best_vs_worst", {"min_margin": 0.2}, "below_min_margin"),
        (kept(("a", 0.8, False, 5), ("b", 0.1, False, 5)), "correct_vs_incorrect", {}, "no_correct_rollout"),
        (kept(("a", 1.0, True, 5), ("b", 0.9, True, 5)), "correct_vs_incorrect", {}, "no_incorrect_rollout"),
        (kept(("a", 1.0, None, 5), ("b", 0.0, None, 50)), "length_matched", {}, "no_length_match"),
    ],
)
def test_every_prompt_without_a_pair_has_a_reason(frame, strategy, kw, reason):
    picked, reasons = pairs_of(strategy, frame, **kw)
    assert picked == [] and reasons == [reason]


def test_flagged_and_empty_prompts_are_accounted_per_strategy():
    cfg = PairsConfig(strategies=("best_vs_worst", "correct_vs_incorrect"))
    frame = pl.concat([FOUR, kept(("x", 1.0, True, 5, "q"), ("y", 0.0, False, 5, "q"))])
    picked, rejects, repeated = choose_pairs(frame, prompts("p", "q", "r", flags={"q": "contaminated"}), cfg)
    # p: bvw (a, d) and cvi's 4 pairs, one of which is (a, d) again; q is flagged; r has no kept rollout
    assert picked.height == 4 and repeated == 1
    assert picked.filter(pl.col("chosen_id") == "a", pl.col("rejected_id") == "d")["pair_type"].to_list() == [
        "best_vs_worst"
    ]
    assert sorted(zip(rejects["row_id"], rejects["reason"], strict=True)) == [
        ("q/best_vs_worst", "contaminated"),
        ("q/correct_vs_incorrect", "contaminated"),
        ("r/best_vs_worst", "too_few_scored"),
        ("r/correct_vs_incorrect", "too_few_scored"),
    ]


def test_row_order_does_not_matter():
    cfg = PairsConfig(strategies=("best_vs_random", "all_above_margin", "length_matched"))
    one = choose_pairs(FOUR, prompts("p"), cfg)[0].sort("chosen_id", "rejected_id")
    two = choose_pairs(FOUR.reverse(), prompts("p"), cfg)[0].sort("chosen_id", "rejected_id")
    assert one.equals(two)


def test_stable_hash_is_fixed():
    # blake2b, not polars' per-version hash: this value must never change
    assert stable_hash(pl.Series(["a"]), 0).to_list() == stable_hash(pl.Series(["a"]), 0).to_list()
    assert stable_hash(pl.Series(["a"]), 0)[0] != stable_hash(pl.Series(["a"]), 1)[0]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"strategies": ()}, "non-empty"),
        ({"strategies": ("best_of_all",)}, "best_of_all"),
        ({"strategies": ("best_vs_worst", "best_vs_worst")}, "twice"),
        ({"min_margin": -0.1}, "ties"),
        ({"max_pairs_per_prompt": 0}, "max_pairs_per_prompt"),
        ({"length_match_ratio": 0.9}, "length_match_ratio"),
        ({"min_agreement": 1.5}, "min_agreement"),
    ],
)
def test_config_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PairsConfig(**kwargs)
