"""Held-out pair accuracy with a real reward model (conftest `reward_model_dir`): what pair_accuracy reports equals
a direct forward pass of the model over the same pairs."""

import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from rewardmill.transforms.evaluation.pair_accuracy import pair_accuracy, side
from rewardmill.transforms.labelers.reward_model import RewardModelConfig, RewardModelScorer
from tests.conftest import preference_pairs


def direct_rewards(model_dir, conversations: list[list[dict]]) -> list[float]:
    """One conversation per forward pass (no padding): the model's first head."""
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    rewards = []
    for messages in conversations:
        ids = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True, return_tensors="pt")
        with torch.inference_mode():
            rewards.append(model(**ids).logits[0, 0].item())
    return rewards


def test_accuracy_is_the_share_of_pairs_the_model_orders_right(reward_model_dir):
    pairs = preference_pairs(8)
    pairs[0] = {**pairs[0], "rejected": pairs[0]["chosen"]}  # a tie counts as wrong
    for p in pairs[:4]:
        p.update(chosen_correct=True, rejected_correct=False)  # the rule-verified ones
    scorer = RewardModelScorer(RewardModelConfig(model=str(reward_model_dir), normalize="sigmoid", batch_size=3))
    result = pair_accuracy(scorer, pairs)
    rewards = direct_rewards(reward_model_dir, [p["prompt"] + p[s] for p in pairs for s in ("chosen", "rejected")])
    margins = [c - r for c, r in zip(rewards[::2], rewards[1::2], strict=True)]
    assert result["pairs"] == 8 and result["too_long"] == 0 and result["ties"] == 1
    assert result["all"]["n"] == 8 and result["all"]["accuracy"] == pytest.approx(sum(m > 1e-6 for m in margins) / 8)
    assert result["verified"]["n"] == 4
    assert result["verified"]["accuracy"] == pytest.approx(sum(m > 1e-6 for m in margins[:4]) / 4)
    assert result["mean_margin"] == pytest.approx(sum(margins) / 8, abs=1e-4)


def test_too_long_pairs_are_counted_not_scored(reward_model_dir):
    pairs = preference_pairs(3)
    pairs[1] = {**pairs[1], "chosen": [{"role": "assistant", "content": "many words " * 200}]}
    scorer = RewardModelScorer(RewardModelConfig(model=str(reward_model_dir), normalize="sigmoid", max_length=64))
    result = pair_accuracy(scorer, pairs)
    assert result["too_long"] == 1 and result["all"]["n"] == 2 and result["verified"]["n"] == 0


def test_a_head_the_model_lacks_is_an_error(reward_model_dir):
    scorer = RewardModelScorer(RewardModelConfig(model=str(reward_model_dir), normalize="sigmoid"))
    with pytest.raises(ValueError, match="head 1: the reward model has 1 head"):
        pair_accuracy(scorer, preference_pairs(1), head=1)


def test_the_last_answer_turn_is_the_completion():
    prompt = [{"role": "user", "content": "q"}]
    answer = [
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "more?"},
        {"role": "assistant", "content": "b"},
    ]
    assert side(prompt, answer) == ([*prompt, *answer[:2]], "b")
