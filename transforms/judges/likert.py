"""Pointwise Likert judge, the pure pieces: prompt, lenient score parser, G-Eval scoring, self-consistency.

`build_pointwise` -> chat messages asking for "Score: n" then "Reason: ...", score first so the score token is
one of the first generated positions (G-Eval reads its probabilities there). `parse_likert(text)` -> LikertVerdict
with None fields on malformed text; `geval_score(logprobs)` -> the expected score under the score tokens'
probabilities (G-Eval); `self_consistency(sampled scores)` -> mean and agreement with the mode.
`token_text`, `class_mass` and `strip_markup` are shared with the yes/no, pairwise and rubric judges.
"""

import math
import re
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

from rewardmill.transforms.judges.client import TokenLogprob

K = TypeVar("K", bound=Hashable)

_WORDS = dict(zip("zero one two three four five six seven eight nine ten".split(), range(11), strict=True))
_NUM = r"\b([0-9]{1,6}(?:\.[0-9]{1,6})?|" + "|".join(_WORDS) + r")\b"  # whole numbers only, never a 4300-digit int
_NO_RANGE = r"(?!\s*(?:-|–|to)\s*\d)"  # "Score: 1-5" / "1 to 5" is the format echoed back, not a score
_RESULT = re.compile(r"\[RESULT\]\s*(?::\s*)?" + _NUM + _NO_RANGE, re.I)  # Prometheus: the last one counts
_LABELED = re.compile(
    r"\b(?:score|rating|grade)(?:\s*(?:is|of|:|=|-|–))*\s*"
    + _NUM
    + _NO_RANGE
    + r"(?:\s*(?:/|out of)\s*([0-9]{1,6})\b)?",
    re.I,
)
_RATIONALE = re.compile(r"\b(?:reason|rationale|explanation|justification|feedback)\s*:\s*", re.I)


def strip_markup(text: str) -> str:
    """Text without markdown emphasis, code ticks and heading marks, which small models sprinkle around verdicts."""
    return re.sub(r"\*+|`+|#+|__", "", text)


def check_scale(scale: tuple[int, int]) -> tuple[int, int]:
    """(low, high) integers with low < high, else ValueError: a bad scale is a config bug, not model output."""
    lo, hi = scale
    if isinstance(lo, bool) or isinstance(hi, bool) or not isinstance(lo, int) or not isinstance(hi, int) or lo >= hi:
        raise ValueError(f"scale must be two integers (low, high) with low < high, got {scale!r}")
    return lo, hi


def build_pointwise(question: str, answer: str, criteria: str, scale: tuple[int, int] = (1, 5)) -> tuple[dict, ...]:
    """System + user messages asking for one Likert score of `answer` on `criteria`, then a one-sentence reason."""
    lo, hi = check_scale(scale)
    system = (
        f"You are a grader. Rate the answer from {lo} (worst) to {hi} (best) on: {criteria}\n"
        f"Reply in exactly two lines:\nScore: <a number from {lo} to {hi}>\nReason: <one short sentence>"
    )
    user = f"Question:\n{question}\n\nAnswer:\n{answer}\n\nRate the answer. Start with 'Score:'."
    return ({"role": "system", "content": system}, {"role": "user", "content": user})


@dataclass(frozen=True)
class LikertVerdict:
    """score in the scale or None; rationale: the text beside the score; matched: the span the score came from."""

    score: int | None
    rationale: str | None
    matched: str | None


_NONE = LikertVerdict(None, None, None)


def _as_int(token: str) -> int | None:
    token = token.lower()
    if token in _WORDS:
        return _WORDS[token]
    value = float(token)
    return int(value) if value.is_integer() else None  # "4.0" is 4; "4.5" is not a Likert score


def _find(text: str, hi: int) -> re.Match | None:
    """The match that carries the score, by priority: [RESULT] n (last), Score: n (first), n/hi, a lone number."""
    results = list(_RESULT.finditer(text))
    if results:
        return results[-1]
    for pattern in (_LABELED, re.compile(_NUM + rf"\s*(?:/|out of)\s*({hi})\b", re.I)):
        if match := pattern.search(text):
            return match
    return re.match(r"\s*[(\[]*([0-9]{1,6})[ \t.)\]!]*(?=\n|$)", text)  # "4", "4.", "(4)" alone on the first line


def parse_likert(text: str | None, scale: tuple[int, int] = (1, 5)) -> LikertVerdict:
    """Lenient parse of a Likert reply: "Score: 4", "**Score:** 4/5", "[RESULT] 4", "4". Never raises on model
    output; a score outside the scale, a decimal, or a fraction over another maximum ("4/10") gives all None."""
    lo, hi = check_scale(scale)
    if not isinstance(text, str):
        return _NONE
    clean = strip_markup(text)
    match = _find(clean, hi)
    if match is None:
        return _NONE
    score = _as_int(match.group(1))
    denominator = match.group(2) if match.re.groups >= 2 else None
    if score is None or not lo <= score <= hi or (denominator is not None and int(denominator) != hi):
        return _NONE
    before, after = clean[: match.start()].strip(), clean[match.end() :].strip().lstrip(".,:;-–)]").strip()
    rest = "\n".join(part for part in (before, after) if part)
    if label := _RATIONALE.search(rest):
        rest = rest[label.end() :]
    rationale = rest.strip() or None
    return LikertVerdict(score, rationale, match.group(0).strip())


def token_text(token: str) -> str:
    """A token's text without tokenizer space markers (SentencePiece ▁, byte-level Ġ/Ċ) and surrounding space."""
    return token.replace("▁", " ").replace("Ġ", " ").replace("Ċ", "\n").strip()


def class_mass(
    logprobs: tuple[TokenLogprob, ...] | None, classify: Callable[[str], K | None], min_mass: float = 0.5
) -> dict[K, float] | None:
    """Probability per class at the first position that carries the classes: the chosen token is in a class, or
    the classified alternatives hold >= min_mass. Token variants (" 4", "4") add up. None when no position does."""
    for position in logprobs or ():
        alternatives = {**position.top}
        alternatives.setdefault(position.token, position.logprob)  # the chosen token counts even outside top-k
        probs: dict[K, float] = {}
        for token, logprob in alternatives.items():
            key = classify(token)
            if key is not None and math.isfinite(logprob):
                probs[key] = probs.get(key, 0.0) + math.exp(logprob)
        if probs and (classify(position.token) is not None or sum(probs.values()) >= min_mass):
            return probs
    return None


@dataclass(frozen=True)
class GEval:
    """expected: Σ p(s)·s renormalized over the score tokens; spread: its standard deviation; mass: the raw
    probability the score tokens held at that position (low mass = the model was not sure it was scoring)."""

    expected: float
    spread: float
    mass: float


def geval_score(
    logprobs: tuple[TokenLogprob, ...] | None, scale: tuple[int, int] = (1, 5), min_mass: float = 0.5
) -> GEval | None:
    """G-Eval score from the top alternatives at the score position; None without logprobs or score tokens.

    Scores must be single tokens: with a scale reaching 10, the token "1" may be the start of "10" (a known G-Eval
    limitation), so prefer scales within 0-9. Use it beside parse_likert, which checks the reply's format."""
    lo, hi = check_scale(scale)

    def classify(token: str) -> int | None:
        text = token_text(token)
        return int(text) if text.isascii() and text.isdigit() and lo <= int(text) <= hi else None

    probs = class_mass(logprobs, classify, min_mass)
    mass = sum((probs or {}).values())
    if mass <= 0:  # no score position, or logprobs so low that exp() underflows
        return None
    expected = sum(p * s for s, p in probs.items()) / mass
    variance = sum(p * (s - expected) ** 2 for s, p in probs.items()) / mass
    return GEval(expected, math.sqrt(max(variance, 0.0)), min(mass, 1.0))


def normalize_score(score: float | None, scale: tuple[int, int] = (1, 5)) -> float | None:
    """Map a score in [low, high] to [0, 1]; None stays None. Out of the scale raises: scores come from parsers
    that already enforce it, so one outside is a bug upstream."""
    lo, hi = check_scale(scale)
    if score is None:
        return None
    if not lo <= score <= hi:
        raise ValueError(f"score {score!r} is outside the scale {scale!r}")
    return (score - lo) / (hi - lo)


class SelfConsistency(NamedTuple):
    """mean of the valid samples; agreement: share of valid samples equal to the mode; None when none parsed."""

    mean: float | None
    agreement: float | None
    n_valid: int


def self_consistency(scores: list[int | None]) -> SelfConsistency:
    """Summarize n sampled scores of one item; unparsed samples (None) are left out and show in n_valid."""
    valid = [s for s in scores if s is not None]
    if not valid:
        return SelfConsistency(None, None, 0)
    top = Counter(valid).most_common(1)[0][1]
    return SelfConsistency(sum(valid) / len(valid), top / len(valid), len(valid))
