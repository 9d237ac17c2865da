"""Multi-objective aggregation: combine normalize_then_sum (GDPO) in the reward, and the objectives the card's GRPO
snippet gets (reward functions, weights, TRL's aggregation), which real TRL takes."""

import pytest

from rewardmill.transforms.aggregate.reward import AggregateConfig, objectives, score_rollouts
from rewardmill.transforms.export.trainers import training_section
from tests.transforms.aggregate.frames import label, labels, rollouts

RO = rollouts(("a", 10), ("b", 10), ("c", 10))
# "wide" spans 0-1, "narrow" 0.4-0.5: summed raw, wide decides; normalized first, each counts as its weight says
LABELS = labels(
    label("a", "wide", 1.0, "abstain"), label("b", "wide", 0.0, "abstain"), label("c", "wide", 0.5, "abstain"),
    label("a", "narrow", 0.4, "abstain"), label("b", "narrow", 0.5, "abstain"), label("c", "narrow", 0.45, "abstain"),
)  # fmt: skip


def model_scores(**cfg) -> dict[str, float]:
    scored = score_rollouts(RO, LABELS, AggregateConfig(weights={"wide": 1.0, "narrow": 1.0}, **cfg))
    return dict(zip(scored["rollout_id"], scored["model_score"], strict=True))


def test_normalize_then_sum_scales_each_objective_per_prompt_first():
    raw = model_scores()
    assert raw == pytest.approx({"a": 0.7, "b": 0.25, "c": 0.475})  # the wide score decides
    scaled = model_scores(combine="normalize_then_sum")
    assert scaled == pytest.approx({"a": 0.5, "b": 0.5, "c": 0.5})  # 1 + 0, 0 + 1, 0.5 + 0.5: a tie, as it should
    with pytest.raises(ValueError, match="combine"):
        AggregateConfig(combine="mean")
    with pytest.raises(ValueError, match="normalize"):
        AggregateConfig(weights={"wide": 1.0}, combine="normalize_then_sum", normalize={"wide": "prompt"})


@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        (AggregateConfig(gates=("math_answer", "code_tests")),
         {"rewards": ["math_answer", "code_tests"], "weights": [1.0, 1.0], "aggregation": "sum_then_normalize"}),
        (AggregateConfig(gates=("math_answer",), weights={"panel": 1.0, "appeal": 3.0, "off": 0.0}),
         {"rewards": ["math_answer", "appeal", "panel"], "weights": [0.75, 0.1875, 0.0625],
          "aggregation": "sum_then_normalize"}),  # rank_weight 0.25 shared 3:1; a zero weight is no objective
        (AggregateConfig(gates=("math_answer",), weights={"panel": 1.0}, combine="normalize_then_sum"),
         {"rewards": ["math_answer", "panel"], "weights": [0.75, 0.25], "aggregation": "normalize_then_sum"}),
    ],
)  # fmt: skip
def test_objectives(cfg, expected):
    assert objectives(cfg) == expected


@pytest.mark.slow  # TRL's import
def test_the_grpo_snippet_passes_the_weights_and_aggregation_trl_takes(tmp_path):
    from trl import GRPOConfig

    goals = objectives(AggregateConfig(gates=("math_answer",), weights={"panel": 1.0}, combine="normalize_then_sum"))
    text = training_section("rl", "prompt_only", "train", "export", tuple(goals["rewards"]), goals)
    assert """from_params("params.yaml", ['math_answer', 'panel'], prompts="data/prompts")""" in text
    assert "reward_weights=[0.75, 0.25]" in text and "multi_objective_aggregation='normalize_then_sum'" in text
    args = GRPOConfig(
        output_dir=str(tmp_path),
        reward_weights=goals["weights"],
        multi_objective_aggregation=goals["aggregation"],
        use_cpu=True,
    )
    assert (args.reward_weights, args.multi_objective_aggregation) == ([0.75, 0.25], "normalize_then_sum")
    single = training_section(
        "rl", "prompt_only", "train", "export", ("math_answer",), objectives(AggregateConfig(gates=("math_answer",)))
    )
    assert "reward_weights" not in single and 'args = GRPOConfig(output_dir="grpo")' in single
