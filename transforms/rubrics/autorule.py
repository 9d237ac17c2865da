"""AutoRule: rules learned from a judge's rationales over preference pairs, kept when they agree with held-out pairs.

1. Pairs: each chosen prompt's best and worst rollout as the rank labeler scores them (a trusted preference); a prompt
   without two rollouts apart is rejected (no_contrast). Pairs go by prompt-id hash to extraction or to held-out.
2. Rationales: the judge explains why the preferred answer is better (one greedy call per extraction pair).
3. Candidate rules: the judge turns each rationale into general rules, one per line (read like rubric criteria).
4. Merge: rules with the same words, or a word-set Jaccard at least `merge_jaccard`, are one rule (its first text),
   supported by each rationale that gave it; the `max_candidates` best supported go on (ties: first seen).
5. Keep: each candidate checked yes/no on both answers of every held-out pair. A pair agrees when the rule holds for
   the preferred answer and not the rejected one, disagrees the other way round; agreement = agree / (agree +
   disagree). A rule is kept with at least `min_decided` decided pairs and agreement at least `min_agreement`.

The rules are one versioned artifact: a RUBRIC_V1 row for every prompt (prompt_id ALL_PROMPTS), its criteria the kept
rules, its evidence each candidate's support and agreement. The pure pieces (split, merge, agreement) are here; the
calls are RuleLearner's (writer.py's client and rank labeler).
"""

import hashlib
import re
from dataclasses import dataclass

from rewardmill.schemas.rubric import ALL_PROMPTS
from rewardmill.transforms.rubrics.criteria import Criterion

__all__ = ["ALL_PROMPTS"]


@dataclass(frozen=True)
class AutoRuleParams:
    """params `rubrics.<NAME>.autorule` (mode autorule)."""

    heldout: float = 0.5  # share of pairs (by prompt-id hash) held out to measure the rules on
    merge_jaccard: float = 0.6  # word-set Jaccard at which two rules are one
    max_candidates: int = 12  # the best-supported merged rules measured on the held-out pairs
    min_decided: int = 1  # held-out pairs a rule must decide (hold for one answer only) to be kept
    min_agreement: float = 0.6  # the share of decided held-out pairs it must order as the preference
    rationale_tokens: int = 128  # the judge's explanation of a preference

    def __post_init__(self):
        if not 0.0 < self.heldout < 1.0:
            raise ValueError(f"autorule.heldout must be in (0, 1), got {self.heldout}")
        if not 0.0 < self.merge_jaccard <= 1.0:
            raise ValueError(f"autorule.merge_jaccard must be in (0, 1], got {self.merge_jaccard}")
        if self.max_candidates < 1 or self.min_decided < 1:
            raise ValueError("autorule.max_candidates and autorule.min_decided must be >= 1")
        if not 0.0 <= self.min_agreement <= 1.0:
            raise ValueError(f"autorule.min_agreement must be in [0, 1], got {self.min_agreement}")


def is_heldout(prompt_id: str, share: float) -> bool:
    """Whether a prompt's pair is held out: a fixed function of its id, so a rerun splits the same way."""
    return int.from_bytes(hashlib.sha256(f"autorule:{prompt_id}".encode()).digest()[:8], "big") / 2**64 < share


def words(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"[a-z0-9]+", text.lower()))


@dataclass(frozen=True)
class Candidate:
    rule: str
    support: int  # rationales that gave it


def merge_rules(rules_per_rationale: list[list[Criterion]], jaccard: float) -> list[Candidate]:
    """One candidate per group of alike rules, in first-seen order, with the number of rationales supporting it."""
    merged: list[tuple[str, frozenset[str], set[int]]] = []
    for source, rules in enumerate(rules_per_rationale):
        for rule in rules:
            key = words(rule.criterion)
            for _, seen, sources in merged:
                if key == seen or (key | seen and len(key & seen) / len(key | seen) >= jaccard):
                    sources.add(source)
                    break
            else:
                merged.append((rule.criterion, key, {source}))
    return [Candidate(text, len(sources)) for text, _, sources in merged]


def best_supported(candidates: list[Candidate], limit: int) -> list[Candidate]:
    """The `limit` candidates with the most support (ties: first seen), in first-seen order."""
    ranked = sorted(range(len(candidates)), key=lambda i: (-candidates[i].support, i))[:limit]
    return [candidates[i] for i in sorted(ranked)]


@dataclass(frozen=True)
class Agreement:
    agree: int
    disagree: int
    undecided: int  # the rule held for both answers or neither, or a check was unreadable

    @property
    def decided(self) -> int:
        return self.agree + self.disagree

    @property
    def rate(self) -> float | None:
        return self.agree / self.decided if self.decided else None


def agreement(votes: list[tuple[bool | None, bool | None]]) -> Agreement:
    """(holds for the preferred answer, holds for the rejected one) per held-out pair -> the rule's agreement."""
    agree = sum(1 for p, r in votes if p is True and r is False)
    disagree = sum(1 for p, r in votes if p is False and r is True)
    return Agreement(agree, disagree, len(votes) - agree - disagree)
