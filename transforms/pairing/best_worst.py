"""Best-vs-worst preference pairs per prompt, with every rollout that does not make a pair accounted for.

Ties and missing scores are never paired (Bradley-Terry cannot use a tie, and distilabel's max/min pairing
returns chosen == rejected on ties): each becomes a reject with a reason.
"""

import hashlib
from dataclasses import dataclass

from rewardmill.transforms.pairing.scores import RolloutScore


@dataclass(frozen=True)
class PairingConfig:
    min_margin: float = 0.0  # pairs need score_chosen - score_rejected > min_margin
    drop_truncated: bool = False  # rollouts cut at max_new_tokens are not paired


@dataclass(frozen=True)
class Dropped:
    row_id: str
    reason: str
    detail: str


def pair_id(prompt_id: str, chosen: str, rejected: str) -> str:
    return hashlib.sha256(f"{prompt_id}\x00{chosen}\x00{rejected}".encode()).hexdigest()


def agreement(chosen: RolloutScore, rejected: RolloutScore) -> float:
    """Share of labelers scoring both rollouts that order them as the pair does (ties count against)."""
    votes = [
        chosen.per_labeler[k] > rejected.per_labeler[k]
        for k in chosen.per_labeler
        if chosen.per_labeler[k] is not None and rejected.per_labeler.get(k) is not None
    ]
    return sum(votes) / len(votes) if votes else 0.0


def best_vs_worst(
    prompt: dict, rollouts: list[dict], scores: dict[str, RolloutScore], cfg: PairingConfig
) -> tuple[dict | None, list[Dropped]]:
    """-> (PAIR_V1 row or None, dropped rollouts/prompt with reasons). `prompt` is any rollout row of it."""
    dropped: list[Dropped] = []
    usable = []
    for r in sorted(rollouts, key=lambda r: r["rollout_id"]):
        s = scores.get(r["rollout_id"])
        if s is None or s.score is None:
            dropped.append(Dropped(r["rollout_id"], "missing_score", "no labeler could score this rollout"))
        elif cfg.drop_truncated and r["finish_reason"] == "length":
            dropped.append(Dropped(r["rollout_id"], "truncated", "finish_reason=length and drop_truncated is set"))
        else:
            usable.append((s.score, r))
    pid = prompt["prompt_id"]
    if len(usable) < 2:
        dropped.append(Dropped(pid, "too_few_scored", f"{len(usable)} scored rollout(s); a pair needs 2"))
        return None, dropped
    # Highest score first; among equal scores the lowest rollout_id, so the choice is deterministic.
    best = min(usable, key=lambda x: (-x[0], x[1]["rollout_id"]))
    worst = min(usable, key=lambda x: (x[0], x[1]["rollout_id"]))
    margin = best[0] - worst[0]
    if margin == 0:
        dropped.append(Dropped(pid, "tie", f"all {len(usable)} scored rollouts have score {best[0]}"))
        return None, dropped
    if margin <= cfg.min_margin:
        dropped.append(Dropped(pid, "below_min_margin", f"margin {margin:.4f} <= {cfg.min_margin}"))
        return None, dropped
    chosen, rejected = best[1], worst[1]
    sc, sr = scores[chosen["rollout_id"]], scores[rejected["rollout_id"]]
    return {
        "pair_id": pair_id(pid, chosen["rollout_id"], rejected["rollout_id"]),
        "prompt_id": pid,
        "prompt": prompt["messages"],
        "chosen": [{"role": "assistant", "content": chosen["completion"]}],
        "rejected": [{"role": "assistant", "content": rejected["completion"]}],
        "score_chosen": best[0],
        "score_rejected": worst[0],
        "margin": margin,
        "confidence": min(sc.confidence, sr.confidence),
        "agreement": agreement(sc, sr),
        "pair_type": "best_vs_worst",
        "chosen_rollout_id": chosen["rollout_id"],
        "rejected_rollout_id": rejected["rollout_id"],
        "chosen_n_tokens": chosen["n_tokens"],
        "rejected_n_tokens": rejected["n_tokens"],
        "label_sources": sorted(set(sc.sources) | set(sr.sources)),
        "task": prompt["task"],
        "split": prompt["split"],
    }, dropped
