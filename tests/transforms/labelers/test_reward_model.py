"""transforms/labelers/reward_model.py: a sequence-classification reward model as a labeler, on a reward model
trained in the session with TRL's RewardTrainer (conftest `reward_model_dir`)."""

import json
import math
import pickle

import polars as pl
import pytest

from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.labelers.reward_model import (
    RewardModelConfig,
    RewardModelScorer,
    head_names,
    sigmoid,
)

ASK = [{"role": "user", "content": "What is 2 + 3?"}]
ANSWERS = [
    "2 + 3 = 5. The answer is 5.",
    "The answer is 12.",
    "Let me think step by step. Two plus three: counting up from two gives three, four, five. So the answer is 5.",
    "5",
]


def direct_logits(model_dir, texts: list[str]) -> list[list[float]]:
    """One plain forward pass per text, no batching or padding: what the model itself says."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    out = []
    with torch.inference_mode():
        for text in texts:
            ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")
            out.append(model(**ids).logits[0].tolist())
    return out


def logits_of(labels) -> list[float]:
    return [json.loads(label.raw)["reward"] for label in labels]


@pytest.fixture(scope="module")
def scorer(reward_model_dir):
    s = RewardModelScorer(RewardModelConfig(model=str(reward_model_dir), batch_size=3))
    yield s


def test_scores_equal_a_direct_forward_pass(scorer, reward_model_dir):
    """Batched, length-sorted and padded, the labeler's logits are the model's own, in input order."""
    labels = scorer.label_many([(ASK, a) for a in ANSWERS])
    assert [len(one) for one in labels] == [1] * len(ANSWERS) and scorer.aspects == ("reward",)
    texts = [scorer.text(ASK, a) for a in ANSWERS]
    direct = direct_logits(reward_model_dir, texts)
    assert logits_of(one[0] for one in labels) == pytest.approx([d[0] for d in direct], abs=1e-4)
    for (label,), d in zip(labels, direct, strict=True):
        assert label.score == pytest.approx(sigmoid(d[0]), abs=1e-5) and label.aspect == "reward"
        assert label.verdict == ("correct" if label.score >= 0.5 else "incorrect") and label.confidence == 1.0


def test_the_trained_model_prefers_the_right_sum(scorer):
    """Trained 4 steps on "a + b = sum" over "a wrong sum": on the training pairs it ranks chosen first mostly
    (a real model learning, not a fixed number; the bar is low on purpose)."""
    from tests.conftest import preference_pairs

    pairs = preference_pairs()
    rows = [(p["prompt"], p[side][0]["content"]) for p in pairs for side in ("chosen", "rejected")]
    logits = logits_of(one[0] for one in scorer.label_many(rows))
    wins = sum(logits[2 * i] > logits[2 * i + 1] for i in range(len(pairs)))
    assert wins >= len(pairs) * 0.75, (wins, logits)


def test_pairwise_confidence_is_the_bradley_terry_probability(reward_model_dir):
    pairwise = RewardModelScorer(RewardModelConfig(model=str(reward_model_dir), mode="pairwise"))
    assert RewardModelScorer.groups(pairwise.config) and not RewardModelScorer.groups(RewardModelConfig(model="x"))
    labels = [one[0] for one in pairwise.label_group([(ASK, a) for a in ANSWERS])]
    logits = logits_of(labels)
    best, worst = logits.index(max(logits)), logits.index(min(logits))
    # a best-vs-worst pair's confidence (min of its sides) is P(chosen beats rejected) = sigmoid(r_c - r_r)
    pair_confidence = min(labels[best].confidence, labels[worst].confidence)
    assert pair_confidence == pytest.approx(1 / (1 + math.exp(-(logits[best] - logits[worst]))))
    for i, label in enumerate(labels):
        assert label.confidence == pytest.approx(sigmoid(max(abs(logits[i] - o) for o in logits)))


def test_several_heads_are_named_aspects(policy_dir, tmp_path):
    """ArmoRM style: a two-head model whose config names its heads gives two labels per rollout, each its head."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.manual_seed(0)
    heads = {0: "helpfulness", 1: "correctness"}
    model = AutoModelForSequenceClassification.from_pretrained(
        policy_dir, num_labels=2, id2label=heads, label2id={v: k for k, v in heads.items()}
    )
    tokenizer = AutoTokenizer.from_pretrained(policy_dir)
    model.config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(tmp_path / "rm2")
    tokenizer.save_pretrained(tmp_path / "rm2")
    two = RewardModelScorer(RewardModelConfig(model=str(tmp_path / "rm2"), batch_size=2))
    labels = two.label_many([(ASK, a) for a in ANSWERS[:3]])
    assert [[x.aspect for x in one] for one in labels] == [["helpfulness", "correctness"]] * 3
    direct = direct_logits(tmp_path / "rm2", [two.text(ASK, a) for a in ANSWERS[:3]])
    for one, d in zip(labels, direct, strict=True):
        assert logits_of(one) == pytest.approx(d, abs=1e-4)
    renamed = RewardModelScorer(RewardModelConfig(model=str(tmp_path / "rm2"), aspects=("a", "b")))
    assert [x.aspect for x in renamed.label(ASK, "5")] == ["a", "b"]
    with pytest.raises(ValueError, match="aspects names 1 heads but the model has 2"):
        RewardModelScorer(RewardModelConfig(model=str(tmp_path / "rm2"), aspects=("a",))).label(ASK, "5")


def test_an_input_longer_than_max_length_abstains(reward_model_dir):
    short = RewardModelScorer(RewardModelConfig(model=str(reward_model_dir), max_length=60))
    long, fits = short.label_many([(ASK, "word " * 100), (ASK, "5")])
    assert long[0].score is None and long[0].verdict == "abstain" and "longer than max_length 60" in long[0].rationale
    assert fits[0].score is not None


def test_a_model_without_a_classification_head_is_refused(policy_dir, tmp_path):
    """The policy is a causal LM: loading it as a classifier would score with a random head, so params fail."""
    with pytest.raises(ConfigError, match="no sequence-classification head.*LlamaForCausalLM"):
        from_dict(RewardModelConfig, {"model": str(policy_dir)}, "labelers.rm.config")
    with pytest.raises(ConfigError, match="no config.json"):
        from_dict(RewardModelConfig, {"model": str(tmp_path)}, "labelers.rm.config")


def test_the_scorer_pickles_before_and_after_loading(scorer):
    scorer.label(ASK, "5")
    copy = pickle.loads(pickle.dumps(scorer))
    assert copy._backend is None
    assert logits_of(copy.label(ASK, "5")) == pytest.approx(logits_of(scorer.label(ASK, "5")))


def test_normalize_run_z_scores_each_aspect():
    raw = [json.dumps({"reward": r}) for r in (1.0, 3.0, 7.0, 7.0)]
    frame = pl.DataFrame(
        {
            "rollout_id": ["a", "b", "c", "d", "e"],
            "aspect": ["x", "x", "y", "y", "x"],
            "score": [0.7, 0.9, 0.99, 0.99, None],
            "verdict": ["correct"] * 4 + ["abstain"],
            "raw": [*raw, None],
        }
    )
    out = RewardModelScorer.normalize_run(frame, RewardModelConfig(model="m"))
    # x: logits 1 and 3 -> z = -1, +1; y: constant -> 0.5; a row without a logit keeps its null
    assert out["score"].to_list()[:4] == pytest.approx([sigmoid(-1.0), sigmoid(1.0), 0.5, 0.5])
    assert out["score"][4] is None
    assert out["verdict"].to_list() == ["incorrect", "correct", "correct", "correct", "abstain"]
    assert out["raw"].to_list() == frame["raw"].to_list()
    assert RewardModelScorer.normalize_run(frame, RewardModelConfig(model="m", normalize="sigmoid")).equals(frame)


@pytest.mark.parametrize(
    "aspects, id2label, n, names",
    [
        ((), {0: "LABEL_0"}, 1, ("reward",)),  # transformers' placeholder name: one head is "reward"
        ((), {0: "LABEL_0", 1: "LABEL_1"}, 2, ("head_0", "head_1")),
        ((), {"0": "helpful", "1": "safe"}, 2, ("helpful", "safe")),  # the model's own names (JSON keys are text)
        (("a",), {0: "x"}, 1, ("a",)),  # configured names win
    ],
)
def test_head_names(aspects, id2label, n, names):
    assert head_names(aspects, id2label, n) == names
