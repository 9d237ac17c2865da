"""Pairwise judge, the pure pieces: prompt, lenient verdict parser, and MT-Bench's two-order rule.

Position bias is large, so every pair is judged twice, (x as A, y as B) then (y as A, x as B); `combine_orders` maps
both verdicts back to x / y and counts a win only when the two orders agree (MT-Bench), otherwise a tie marked
inconsistent. `swap_consistency` is the share of pairs whose two orders agree, a bias diagnostic for a judge.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass

from rewardmill.transforms.judges.likert import strip_markup

WINNERS = ("A", "B", "tie")

_TIE_WORDS = r"tie|draw|equal(?:ly)?|both|neither"
# A/B are case-sensitive unless they end the verdict: "Winner: a." is a vote, "the answer is a good one" is not.
_LETTER = rf"(?:(A|B)\b|(a|b)(?=\s*(?:$|[.,;!)\]]))|(?i:({_TIE_WORDS}))\b)"
_NO_ECHO = r"(?!\s*(?:,|/|\bor\b)\s*(?:A|B|tie)\b)"  # "Winner: A, B or tie" is the format echoed back
_BRACKETS = re.compile(r"\[\[\s*(A|B|C|tie)\s*\]\]", re.I)  # MT-Bench: [[A]], [[B]], [[C]] = tie
_LABELED = re.compile(
    r"(?:(?i:\b(?:winner|verdict|better answer|better response|preferred|choice|answer|result)\b)"
    r"(?:\s*(?:is|:|=|-|–))+|(?i:\[result\]))\s*(?i:(?:answer|response|assistant)\s+)?" + _LETTER + _NO_ECHO
)
_IS_BETTER = re.compile(
    r"(?:(?i:answer|response|assistant)\s+)?\b(A|B)\b\s+(?i:is|was)\s+(?i:the\s+)?"
    r"(?i:better|best|preferred|superior|stronger|more)"
)
# The requested format: the reply starts with the letter, as "A", "B.", "A: ...", "A (12)" or "(B)"; "A great answer"
# is not one.
_LEADING = re.compile(r"[\s(\[]*(A|B)(?=\s*(?:[:.)\](]|$))")
_LONE = re.compile(rf"[\s(\[]*(A|B|(?i:{_TIE_WORDS}|[ab]))[\s.)\]!]*$")


@dataclass(frozen=True)
class PairVerdict:
    """winner: "A" | "B" | "tie" | None (malformed); raw_match: the span the verdict came from."""

    winner: str | None
    raw_match: str | None


def build_pairwise(question: str, answer_a: str, answer_b: str, criteria: str) -> tuple[dict, ...]:
    """System + user messages asking which of two answers is better on `criteria`: "Winner: A|B|tie", a reason."""
    # Short on purpose: a "Winner: <A or B or tie>" template made small judges echo an answer instead of choosing;
    # asking for the letter first gets a letter from them, and strong judges follow either.
    system = (
        f"You are a fair judge. You compare two answers to the same question on: {criteria}\n"
        "The order and the length of the answers must not influence you."
    )
    user = (
        f"Question:\n{question}\n\n[Answer A]\n{answer_a}\n[End of Answer A]\n\n"
        f"[Answer B]\n{answer_b}\n[End of Answer B]\n\n"
        "Which answer is better? Reply with one letter, A or B (or tie), then the reason."
    )
    return ({"role": "system", "content": system}, {"role": "user", "content": user})


def _winner(token: str) -> str:
    token = token.lower()
    return {"a": "A", "b": "B", "c": "tie"}.get(token, "tie")  # every other accepted word means a tie


def parse_pairwise(text: str | None) -> PairVerdict:
    """Lenient parse of a pairwise reply, by priority: [[A]] (last, MT-Bench), "Winner: A" (first), a reply that
    starts with the letter ("A: ...", "B."), "A is better", a lone "A" / "tie" on the first line. Never raises;
    anything else is PairVerdict(None, None)."""
    if not isinstance(text, str):
        return PairVerdict(None, None)
    clean = strip_markup(text)
    brackets = list(_BRACKETS.finditer(clean))
    if brackets:
        return PairVerdict(_winner(brackets[-1].group(1)), brackets[-1].group(0))
    if match := _LABELED.search(clean):
        token = next(g for g in match.groups() if g)
        return PairVerdict(_winner(token), match.group(0).strip())
    if match := _LEADING.match(clean):
        return PairVerdict(match.group(1), match.group(0).strip())
    if match := _IS_BETTER.search(clean):
        return PairVerdict(match.group(1), match.group(0).strip())
    if match := _LONE.match(clean.strip().split("\n", 1)[0]):
        return PairVerdict(_winner(match.group(1)), match.group(0).strip())
    return PairVerdict(None, None)


@dataclass(frozen=True)
class PairOutcome:
    """winner: "x" | "y" | "tie" | None (an order did not parse); consistent: both orders gave the same verdict
    (None when one did not parse). An inconsistent pair is a tie: the judge only followed the position."""

    winner: str | None
    consistent: bool | None


def _check(winner: str | None) -> None:
    if winner is not None and winner not in WINNERS:
        raise ValueError(f"a verdict must be one of {WINNERS} or None, got {winner!r}")


def combine_orders(first: str | None, second: str | None) -> PairOutcome:
    """Merge the verdict with x as A (`first`) and the verdict with y as A (`second`) into x / y / tie."""
    _check(first)
    _check(second)
    if first is None or second is None:
        return PairOutcome(None, None)
    in_first = {"A": "x", "B": "y", "tie": "tie"}[first]
    in_second = {"A": "y", "B": "x", "tie": "tie"}[second]
    if in_first == in_second:
        return PairOutcome(in_first, True)
    return PairOutcome("tie", False)


def swap_consistency(pairs: Iterable[tuple[str | None, str | None]]) -> float | None:
    """Share of (first, second) verdict pairs that agree after the swap, over pairs where both orders parsed;
    None when none did. 1.0 = no position bias seen; a judge that always says "A" scores 0.0."""
    outcomes = [combine_orders(first, second) for first, second in pairs]
    parsed = [o.consistent for o in outcomes if o.consistent is not None]
    return sum(parsed) / len(parsed) if parsed else None
