"""LengthPenaltyVerifier: is the completion near a target length? A length penalty as its own aspect.

Kept separate from correctness so a reward model or assembler can weigh it (or not) instead of it being
silently folded into another score. With `penalize: long` it is a soft overlong penalty (DAPO-style).
"""

import json
import numbers
from dataclasses import dataclass

from rewardmill.transforms.labelers.base import Label

UNITS = ("tokens", "chars")
SIDES = ("both", "long", "short")


@dataclass(frozen=True)
class LengthPenaltyConfig:
    unit: str = "tokens"  # tokens: the rollout's n_tokens (policy tokenizer) | chars: len(completion)
    target: int = 256  # the ideal length, in `unit`
    tolerance: int = 64  # score 1.0 anywhere in [target - tolerance, target + tolerance]
    falloff: int = 192  # outside that band the score falls linearly, reaching 0 this many units past its edge
    penalize: str = "both"  # both | long (only overlong completions lose score) | short

    def __post_init__(self):
        if self.unit not in UNITS:
            raise ValueError(f"unit must be one of {UNITS}, got {self.unit!r}")
        if self.penalize not in SIDES:
            raise ValueError(f"penalize must be one of {SIDES}, got {self.penalize!r}")
        if self.target < 0 or self.tolerance < 0:
            raise ValueError("target and tolerance must be >= 0")
        if self.falloff <= 0:
            raise ValueError("falloff must be > 0")


def length_score(length: int, cfg: LengthPenaltyConfig) -> tuple[float, int]:
    """(score, distance outside the tolerance band); 1.0 inside, linear down to 0.0 at `falloff` past an edge."""
    low, high = cfg.target - cfg.tolerance, cfg.target + cfg.tolerance
    distance = 0
    if length < low and cfg.penalize in ("both", "short"):
        distance = low - length
    elif length > high and cfg.penalize in ("both", "long"):
        distance = length - high
    return max(0.0, 1.0 - distance / cfg.falloff), distance


class LengthPenaltyVerifier:
    """Score 1.0 inside the target band, decaying linearly to 0.0 outside it.

    Input columns: completion, n_tokens (only completion when unit is chars).   Output: score (None = no
    usable length), verdict (correct = inside the band), rationale, raw (JSON: length, unit, band).
    """

    name = "length"
    version = "1"
    reads = ("completion", "n_tokens")  # per instance: ("completion",) when unit is chars
    Config = LengthPenaltyConfig

    def __init__(self, config: LengthPenaltyConfig | None = None):
        self.config = config or LengthPenaltyConfig()
        if self.config.unit == "chars":  # rows without n_tokens (e.g. CLI input) can still be labeled
            self.reads = ("completion",)

    def label(self, completion: str | None, n_tokens: int | None = None) -> Label:
        cfg = self.config
        length = n_tokens if cfg.unit == "tokens" else (len(completion) if isinstance(completion, str) else None)
        if isinstance(length, bool) or not isinstance(length, numbers.Integral) or length < 0:
            what = (
                f"n_tokens is {n_tokens!r}" if cfg.unit == "tokens" else f"completion is {type(completion).__name__}"
            )
            return Label(None, 0.0, "abstain", f"no usable length: {what}", aspect="length")
        length = int(length)  # numpy integers from Arrow/pandas rows
        score, distance = length_score(length, cfg)
        band = [cfg.target - cfg.tolerance, cfg.target + cfg.tolerance]
        raw = json.dumps({"length": length, "unit": cfg.unit, "band": band, "penalize": cfg.penalize})
        where = "inside" if distance == 0 else f"{distance} {cfg.unit} outside"
        rationale = f"{length} {cfg.unit}, {where} the band {band}"
        return Label(score, 1.0, "correct" if distance == 0 else "incorrect", rationale, raw, aspect="length")
