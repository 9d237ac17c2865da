import pickle

import pytest

from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.labelers.reference_similarity import (
    ReferenceSimilarityConfig,
    ReferenceSimilarityVerifier,
)

BLEU = ReferenceSimilarityVerifier()
ROUGE = ReferenceSimilarityVerifier(ReferenceSimilarityConfig(metric="rougeL"))
REF = "The cat sat on the mat."


@pytest.mark.parametrize(
    ("verifier", "completion", "reference", "verdict", "score"),
    [
        (BLEU, REF, REF, "correct", 1.0),  # identical text (sacrebleu's 100.00000000000004 is clamped)
        (BLEU, "The cat sat on the mat today.", REF, "correct", 0.7071),  # one extra word
        (BLEU, "A dog ran in the park.", REF, "incorrect", 0.0781),  # unrelated: smoothed, not exactly 0
        (BLEU, "the cat sat on the mat.", REF, "correct", 0.8091),  # case matters for BLEU: "the" != "The"
        (BLEU, "", REF, "incorrect", 0.0),  # empty completion
        (ROUGE, REF, REF, "correct", 1.0),  # identical text
        (ROUGE, "the cats sat on a mat", REF, "correct", 0.8333),  # stemming: cats ~ cat; case ignored
        (ROUGE, "mat the on sat cat the", REF, "correct", 0.5),  # same words reversed: LCS keeps half (= threshold)
        (ROUGE, "A dog ran in the park.", REF, "incorrect", 0.1667),  # unrelated
        (ROUGE, "", REF, "incorrect", 0.0),  # empty completion
        (ROUGE, "猫が座った", "猫が座った", "abstain", None),  # no [a-z0-9] tokens: ROUGE-L cannot see them
        (BLEU, "x", None, "abstain", None),  # no reference
        (BLEU, "x", "", "abstain", None),  # empty reference
        (ROUGE, "x", "   \n", "abstain", None),  # whitespace reference
        (BLEU, None, REF, "abstain", None),  # malformed row: no completion text
        (ROUGE, 42, REF, "abstain", None),  # malformed row: not a string
    ],
)
def test_verdict_table(verifier, completion, reference, verdict, score):
    label = verifier.label(completion, reference)
    assert label.verdict == verdict
    assert label.score == (None if score is None else pytest.approx(score, abs=1e-4))
    assert label.aspect == verifier.config.metric and label.rationale
    assert label.score is None or 0.0 <= label.score <= 1.0


def test_bleu_on_chinese_with_the_zh_tokenizer():
    v = ReferenceSimilarityVerifier(ReferenceSimilarityConfig(bleu_tokenize="zh"))
    assert v.label("猫坐在垫子上", "猫坐在垫子上").score == 1.0


def test_threshold_sets_the_verdict_not_the_score():
    strict = ReferenceSimilarityVerifier(ReferenceSimilarityConfig(threshold=0.9))
    label = strict.label("The cat sat on the mat today.", REF)
    assert label.verdict == "incorrect" and label.score == pytest.approx(0.7071, abs=1e-4)


@pytest.mark.parametrize(
    "raw",
    [
        {"metric": "rouge"},  # unknown metric
        {"threshold": 1.5},  # outside [0, 1]
        {"bleu_tokenize": "spm"},  # would download a sentencepiece model
        {"metrc": "bleu"},  # typo
    ],
)
def test_bad_config_is_rejected(raw):
    with pytest.raises(ConfigError):
        from_dict(ReferenceSimilarityConfig, raw, "labelers.bleu.config")


@pytest.mark.parametrize("verifier", [BLEU, ROUGE])
def test_pickle_round_trip_after_use(verifier):
    verifier.label(REF, REF)  # builds the scorer, which is not shipped
    copy = pickle.loads(pickle.dumps(verifier))
    assert copy.config == verifier.config and copy.label(REF, REF).score == 1.0
