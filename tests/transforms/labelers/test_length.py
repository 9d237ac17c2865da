import json
import pickle

import numpy as np
import pytest

from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.labelers.length import LengthPenaltyConfig, LengthPenaltyVerifier

# band [80, 120]; the score reaches 0 at 40 below (40) or 40 above (160)
TOKENS = LengthPenaltyConfig(target=100, tolerance=20, falloff=40)
LONG_ONLY = LengthPenaltyConfig(target=100, tolerance=20, falloff=40, penalize="long")
SHORT_ONLY = LengthPenaltyConfig(target=100, tolerance=20, falloff=40, penalize="short")
CHARS = LengthPenaltyConfig(unit="chars", target=10, tolerance=2, falloff=4)


@pytest.mark.parametrize(
    ("config", "completion", "n_tokens", "verdict", "score"),
    [
        (TOKENS, "x", 100, "correct", 1.0),  # on target
        (TOKENS, "x", 80, "correct", 1.0),  # lower band edge is inside
        (TOKENS, "x", 120, "correct", 1.0),  # upper band edge is inside
        (TOKENS, "x", 130, "incorrect", 0.75),  # 10 over: a quarter of the falloff
        (TOKENS, "x", 60, "incorrect", 0.5),  # 20 under: half the falloff
        (TOKENS, "x", 160, "incorrect", 0.0),  # exactly at the falloff end
        (TOKENS, "x", 10_000, "incorrect", 0.0),  # far over: floored at 0
        (TOKENS, "", 0, "incorrect", 0.0),  # empty completion
        (LONG_ONLY, "x", 5, "correct", 1.0),  # short is fine when only long is penalized
        (LONG_ONLY, "x", 140, "incorrect", 0.5),  # long still penalized
        (SHORT_ONLY, "x", 500, "correct", 1.0),  # long is fine when only short is penalized
        (TOKENS, "x", np.int32(100), "correct", 1.0),  # numpy integer from an Arrow row
        (CHARS, "0123456789", None, "correct", 1.0),  # chars: n_tokens is not needed
        (CHARS, "0123456789abcd", None, "incorrect", 0.5),  # 14 chars: 2 over the band
        (TOKENS, "x", None, "abstain", None),  # malformed row: no token count
        (TOKENS, "x", -1, "abstain", None),  # malformed row: negative count
        (TOKENS, "x", "12", "abstain", None),  # malformed row: count as text
        (TOKENS, "x", True, "abstain", None),  # malformed row: a bool is not a count
        (CHARS, None, None, "abstain", None),  # malformed row: no completion text
    ],
)
def test_verdict_table(config, completion, n_tokens, verdict, score):
    v = LengthPenaltyVerifier(config)
    label = v.label(completion) if config.unit == "chars" else v.label(completion, n_tokens)
    assert (label.verdict, label.score, label.aspect) == (verdict, score, "length")
    assert label.rationale


def test_raw_and_reads_follow_the_unit():
    assert LengthPenaltyVerifier(TOKENS).reads == ("completion", "n_tokens")
    assert LengthPenaltyVerifier(CHARS).reads == ("completion",)
    raw = json.loads(LengthPenaltyVerifier(TOKENS).label("x", 130).raw)
    assert raw == {"length": 130, "unit": "tokens", "band": [80, 120], "penalize": "both"}


@pytest.mark.parametrize(
    "raw",
    [
        {"unit": "words"},  # unknown unit
        {"penalize": "middle"},  # unknown side
        {"falloff": 0},  # would divide by zero
        {"target": -5},  # negative target
        {"tolerance": 1.5},  # not an int
        {"target_tokens": 100},  # not a key: target + unit
    ],
)
def test_bad_config_is_rejected(raw):
    with pytest.raises(ConfigError):
        from_dict(LengthPenaltyConfig, raw, "labelers.length.config")


def test_pickle_round_trip():
    copy = pickle.loads(pickle.dumps(LengthPenaltyVerifier(CHARS)))
    assert copy.reads == ("completion",) and copy.label("0123456789").score == 1.0
