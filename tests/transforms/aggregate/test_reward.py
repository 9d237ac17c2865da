import random

import pytest

from rewardmill.transforms.aggregate.reward import AggregateConfig, score_rollouts
from tests.transforms.aggregate.frames import label, labels, rollouts

CFG = AggregateConfig(gates=("math", "code"), weights={"judge": 1.0, "panel": 3.0}, rank_weight=0.25)


def one(labs, cfg=CFG) -> dict:
    return score_rollouts(rollouts(("a", 10)), labels(*labs), cfg).row(0, named=True)


@pytest.mark.parametrize(
    "labs, reward, correct, verified_by",
    [
        # a gate alone: the reward is its verdict
        ([label("a", "math", 1.0, "correct")], 1.0, True, "math"),
        ([label("a", "math", 0.0, "incorrect")], 0.0, False, "math"),
        # a judge moves a verified reward inside its class only: 0.75 + 0.25 * 0.2
        ([label("a", "math", 1.0, "correct"), label("a", "judge", 0.2, "incorrect")], 0.8, True, "math"),
        # ... and cannot lift a wrong answer above 0.25 even at full score
        ([label("a", "math", 0.0, "incorrect"), label("a", "judge", 1.0, "correct")], 0.25, False, "math"),
        # weights: (1 * 0.0 + 3 * 1.0) / 4 = 0.75 -> 0.75 * 0.25 + 0.75
        (
            [label("a", "math", 1.0, "correct"), label("a", "judge", 0.0, "x"), label("a", "panel", 1.0, "x")],
            0.9375,
            True,
            "math",
        ),
        # the first gate in params order decides, not the first label
        ([label("a", "code", 0.0, "incorrect"), label("a", "math", 1.0, "correct")], 1.0, True, "math"),
        # an undecided gate (abstain, null score) leaves the next gate to decide
        ([label("a", "math", None, "abstain", 0.0), label("a", "code", 0.0, "incorrect")], 0.0, False, "code"),
        # a gate below min_gate_confidence does not decide: unverified, the judge's score ranks it between the
        # classes (verified first): 0.25 + 0.5 * 0.3
        ([label("a", "math", 1.0, "correct", 0.4), label("a", "judge", 0.3, "x")], 0.4, None, None),
        # no gate, no weighted score: no reward (never a silent 0)
        ([label("a", "math", None, "error", 0.0)], None, None, None),
        ([], None, None, None),
    ],
)
def test_gates_decide_and_model_scores_rank(labs, reward, correct, verified_by):
    row = one(labs)
    assert row["reward"] == pytest.approx(reward) if reward is not None else row["reward"] is None
    assert row["correct"] is correct and row["verified_by"] == verified_by


def test_unweighted_labelers_stay_in_the_score_vector_only():
    row = one([label("a", "math", 1.0, "correct"), label("a", "length", 0.1, "x", aspect="brevity", version="2")])
    assert row["reward"] == 1.0 and row["model_score"] is None  # default_weight 0
    assert row["scores"] == [{"name": "length/brevity", "score": 0.1}, {"name": "math/correctness", "score": 1.0}]
    assert row["label_sources"] == ["length@2", "math@1"]


def test_confidence_and_agreement():
    # gated: the gate's confidence; agreement = share of model votes on the gate's side (1 of 2)
    row = one([label("a", "math", 1.0, "correct", 0.9), label("a", "judge", 0.9, "x"), label("a", "panel", 0.1, "x")])
    assert row["confidence"] == 0.9 and row["agreement"] == 0.5
    # ungated: weighted judge confidence x (1 - 2 * spread); scores 0.5 and 0.7 -> spread 0.1
    row = one([label("a", "judge", 0.5, "x", 0.8), label("a", "panel", 0.7, "x", 0.8)])
    assert row["confidence"] == pytest.approx(0.8 * 0.8) and row["agreement"] == pytest.approx(0.8)
    # one model score: nothing to agree with
    assert one([label("a", "judge", 0.5, "x", 0.8)])["agreement"] is None


def test_order_of_labels_does_not_matter():
    labs = [label("a", "math", 1.0, "correct"), label("a", "judge", 0.2, "x"), label("a", "panel", 0.6, "x")]
    assert one(labs) == one(labs[::-1])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"rank_weight": 0.5}, "rank_weight"),  # 0.5 would let a judge tie a verified-wrong answer with a right one
        ({"gates": ("math",), "weights": {"math": 1.0}}, "gates and weighted"),
        ({"gates": ("math", "math")}, "twice"),
        ({"weights": {"judge": -1.0}}, ">= 0"),
        ({"min_gate_confidence": 2.0}, "min_gate_confidence"),
    ],
)
def test_config_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AggregateConfig(**kwargs)


def test_unknown_labelers_are_named():
    with pytest.raises(ValueError, match=r"\['judge'\]"):
        AggregateConfig(gates=("math",), weights={"judge": 1.0}).check_labelers(["math", "panel"])


def test_unverified_never_outranks_verified_correct():
    """The issue's case: an undecided rollout at judge score 0.9 against a verified-correct one at 0.0 (0.75)."""
    undecided = one([label("a", "math", None, "timeout", 0.0), label("a", "judge", 1.0, "x")])
    verified = one([label("a", "math", 1.0, "correct"), label("a", "judge", 0.0, "x")])
    wrong = one([label("a", "math", 0.0, "incorrect"), label("a", "judge", 1.0, "x")])
    floor = one([label("a", "math", None, "timeout", 0.0), label("a", "judge", 0.0, "x")])
    assert wrong["reward"] <= floor["reward"] and undecided["reward"] <= verified["reward"]
    # without gates the model score is the reward, unbanded
    assert one([label("a", "judge", 0.9, "x")], AggregateConfig(weights={"judge": 1.0}))["reward"] == 0.9


def test_an_override_decides_before_the_gates_at_its_confidence():
    cfg = AggregateConfig(gates=("math",), weights={"judge": 1.0}, overrides={"appeal": 0.9})
    rule_no = label("a", "math", 0.0, "incorrect")
    overturned = one([rule_no, label("a", "appeal", 1.0, "correct", 0.95)], cfg)
    assert (overturned["correct"], overturned["verified_by"], overturned["reward"]) == (True, "appeal", 1.0)
    unsure = one([rule_no, label("a", "appeal", 1.0, "correct", 0.6)], cfg)  # below 0.9: the gate stands
    assert (unsure["correct"], unsure["verified_by"]) == (False, "math")
    with pytest.raises(ValueError, match="gates and overrides at once"):
        AggregateConfig(gates=("math",), overrides={"math": 0.5})
    with pytest.raises(ValueError, match="must be in"):
        AggregateConfig(overrides={"appeal": 1.5})


def many_sources(n_labelers: int, seed: int) -> tuple:
    """Rollouts with labels of `n_labelers` labelers at two versions and two aspects, in random order."""
    rng = random.Random(seed)
    labs = [
        label(f"r{i}", f"l{j:02d}", round(rng.random(), 3), "x", aspect=rng.choice(["a", "b"]), version=str(i % 2))
        for i in range(6)
        for j in range(n_labelers)
        if rng.random() < 0.7
    ]
    rng.shuffle(labs)
    return rollouts(*[(f"r{i}", 10) for i in range(7)]), labels(*labs)  # r6 has no label


@pytest.mark.parametrize("n_labelers", [3, 40])  # 6 and 80 sources: one bit set per rollout, or sorted strings
def test_label_sources_are_each_rollouts_distinct_sources_sorted(n_labelers):
    ro, labs = many_sources(n_labelers, seed=n_labelers)
    cfg = AggregateConfig(weights={"l00": 1.0, "l01": 2.0})
    out = {r["rollout_id"]: r["label_sources"] for r in score_rollouts(ro, labs, cfg).iter_rows(named=True)}
    expected = {f"r{i}": [] for i in range(7)}
    for row in labs.iter_rows(named=True):
        expected[row["rollout_id"]] = sorted(
            {*expected[row["rollout_id"]], f"{row['labeler']}@{row['labeler_version']}"}
        )
    assert out == expected


def test_the_order_of_labels_does_not_change_the_scores():
    """One sort by (rollout, name, source) before every group: the float sums see their labels in one order."""
    ro, labs = many_sources(4, seed=1)
    cfg = AggregateConfig(gates=("l03",), weights={"l00": 0.3, "l01": 1.7, "l02": 1.1})
    first = score_rollouts(ro, labs, cfg).sort("rollout_id")
    again = score_rollouts(ro.reverse(), labs.sample(fraction=1.0, shuffle=True, seed=2), cfg).sort("rollout_id")
    assert first.equals(again)


# Turn-level rewards beside an outcome gate: `env` decides, `turns` (aspect progress) ranks within the class.
TURNS_CFG = AggregateConfig(gates=("env",), weights={"turns": 1.0}, rank_weight=0.25, normalize={"turns": "prompt"})
TRAJECTORIES = rollouts(("a1", 5, "stop", "a"), ("a2", 5, "stop", "a"), ("b1", 5, "stop", "b"), ("b2", 5, "stop", "b"))
PROGRESS = [  # raw scales differ by prompt: a solved at attempts 1 and 2, b at attempts 3 and 5
    label("a1", "turns", 1.0, "correct", aspect="progress"),
    label("a2", "turns", 0.5, "correct", aspect="progress"),
    label("b1", "turns", 1 / 3, "correct", aspect="progress"),
    label("b2", "turns", 0.2, "correct", aspect="progress"),
]
OUTCOMES = [label(r, "env", 1.0, "correct") for r in ("a1", "a2", "b1", "b2")]


def test_turn_rewards_are_normalized_per_prompt_before_they_are_combined():
    scored = score_rollouts(TRAJECTORIES, labels(*OUTCOMES, *PROGRESS), TURNS_CFG)
    rewards = dict(zip(scored["rollout_id"], scored["reward"], strict=True))
    # within each prompt: the faster solve gets the top of the class (0.75 + 0.25 * 1), the slower its bottom
    assert rewards == pytest.approx({"a1": 1.0, "a2": 0.75, "b1": 1.0, "b2": 0.75})
    raw = score_rollouts(TRAJECTORIES, labels(*OUTCOMES, *PROGRESS), AggregateConfig(**{**TURNS_CFG.__dict__,
                                                                                       "normalize": {}}))  # fmt: skip
    raw_rewards = dict(zip(raw["rollout_id"], raw["reward"], strict=True))
    assert (
        raw_rewards["b1"] < raw_rewards["a2"]
    )  # unnormalized, the hard prompt's best ranks below the easy one's worst
    vector = scored.filter(rollout_id="b2")["scores"][0]  # the score vector keeps what the labeler said
    assert {"name": "turns/progress", "score": 0.2} in vector


def test_a_group_that_agrees_is_neutral_and_no_normalized_score_crosses_the_class():
    same = [label("a1", "turns", 0.3, "x", aspect="progress"), label("a2", "turns", 0.3, "x", aspect="progress")]
    mixed = [label("a1", "env", 1.0, "correct"), label("a2", "env", 0.0, "incorrect")]
    scored = score_rollouts(TRAJECTORIES[:2], labels(*mixed, *same), TURNS_CFG)
    assert scored["reward"].to_list() == pytest.approx([0.75 + 0.25 * 0.5, 0.25 * 0.5])  # 0.5: no ranking signal
    rng = random.Random(0)
    for _ in range(50):
        turns = [label(r, "turns", rng.random(), "x", aspect="progress") for r in ("a1", "a2", "b1", "b2")]
        outcome = [label(r, "env", float(c), "correct" if c else "incorrect") for r, c in zip(
            ("a1", "a2", "b1", "b2"), [rng.random() < 0.5 for _ in range(4)], strict=True)]  # fmt: skip
        scored = score_rollouts(TRAJECTORIES, labels(*outcome, *turns), TURNS_CFG)
        for correct, reward in zip(scored["correct"], scored["reward"], strict=True):
            assert (reward >= 0.75) if correct else (reward <= 0.25)


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({"normalize": {"turns": "zscore"}}, "normalize methods must be one of"),
        ({"gates": ("env",), "normalize": {"env": "prompt"}}, "are gates"),
    ],
)
def test_normalize_is_checked(settings, match):
    with pytest.raises(ValueError, match=match):
        AggregateConfig(**settings)
    with pytest.raises(ValueError, match="unknown labelers"):
        AggregateConfig(normalize={"nope": "prompt"}).check_labelers(["env"])


def test_a_rubrics_criteria_are_in_the_score_vector_but_never_decide_or_rank():
    """Parts (aspect `rubric:c<i>`) that disagree with their whole would move the reward if they counted: a wrong
    criterion scored 1.0 on a rubric judge scored 0.2, and a part of a gate saying `correct` on a wrong answer."""
    whole = [label("a", "math", 0.0, "incorrect"), label("a", "judge", 0.2, "incorrect", aspect="rubric")]
    parts = [
        label("a", "judge", 1.0, "correct", aspect="rubric:c1"),
        label("a", "judge", 1.0, "correct", aspect="rubric:c2"),
        label("a", "math", 1.0, "correct", aspect="correctness:c1"),  # a part of a gate never decides
    ]
    plain, with_parts = one(whole), one(whole + parts)
    for key in ("reward", "correct", "verified_by", "model_score", "confidence", "agreement"):
        assert with_parts[key] == plain[key], key
    assert [s["name"] for s in with_parts["scores"]] == [
        "judge/rubric",
        "judge/rubric:c1",
        "judge/rubric:c2",
        "math/correctness",
        "math/correctness:c1",
    ]
