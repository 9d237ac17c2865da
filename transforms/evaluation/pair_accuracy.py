"""Held-out pair accuracy of a reward model: the share of pairs it scores chosen above rejected (RewardBench).

Input: pairs (prompt, chosen, rejected, chosen_correct, rejected_correct) and a RewardModelScorer. Output: the
accuracy over all pairs and over the verified ones (rule-verified chosen correct, rejected incorrect), each with a
bootstrap interval. A tie counts as wrong; a pair longer than the scorer's max_length is counted and left out.
"""

from typing import Any

from rewardmill.transforms.evaluation.bootstrap import accuracy_interval
from rewardmill.transforms.evaluation.labeler_accuracy import is_verified
from rewardmill.transforms.labelers.reward_model import RewardModelScorer


def side(prompt: list[dict], answer: list[dict]) -> tuple[list[dict], str]:
    """(messages, completion) for the scorer: the answer's last turn is the completion, earlier turns context."""
    return [*prompt, *answer[:-1]], answer[-1]["content"]


def pair_accuracy(scorer: RewardModelScorer, pairs: list[dict], head: int = 0, **interval: Any) -> dict[str, Any]:
    """{pairs, too_long, ties, mean_margin, all: interval, verified: interval} for `pairs` scored by head `head`.
    `interval` goes to accuracy_interval."""
    rows = [side(p["prompt"], p[s]) for p in pairs for s in ("chosen", "rejected")]
    rewards, _ = scorer.rewards(rows)
    outcomes, verified, margins, too_long, ties = [], [], [], 0, 0
    for i, pair in enumerate(pairs):
        chosen, rejected = rewards[2 * i], rewards[2 * i + 1]
        if chosen is None or rejected is None:
            too_long += 1
            continue
        if not 0 <= head < len(chosen):
            raise ValueError(f"head {head}: the reward model has {len(chosen)} head(s)")
        margin = chosen[head] - rejected[head]
        margins.append(margin)
        ties += margin == 0
        outcomes.append(margin > 0)
        if is_verified(pair):
            verified.append(margin > 0)
    return {
        "pairs": len(pairs),
        "too_long": too_long,
        "ties": ties,
        "mean_margin": round(sum(margins) / len(margins), 6) if margins else None,
        "all": accuracy_interval(outcomes, **interval),
        "verified": accuracy_interval(verified, **interval),
    }
