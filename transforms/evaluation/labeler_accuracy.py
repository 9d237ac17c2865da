"""How often each labeler ranks a verified pair the right way round (RewardBench's accuracy, on our own output).

A verified pair is one whose chosen side a rule verifier (gate) decided correct and whose rejected side it decided
incorrect. A labeler is right on it when it scores chosen strictly higher; a tie counts as wrong (as RewardBench
counts it) and is reported; a pair where it could not score either side is left out of its accuracy and lowers its
coverage. The gates themselves decided these pairs, so their accuracy is 1 by construction (flagged `gate`).

Input: pair rows (chosen_rollout_id, rejected_rollout_id, chosen_correct, rejected_correct) and labels (labeler,
aspect, rollout_id, score) as a polars frame. Output: one dict per labeler/aspect.
"""

from typing import Any

import polars as pl

from rewardmill.schemas.label import is_part
from rewardmill.transforms.evaluation.bootstrap import accuracy_interval


def is_verified(pair: dict[str, Any]) -> bool:
    """The chosen side was verified correct and the rejected side verified incorrect (null = no gate decided)."""
    return pair.get("chosen_correct") is True and pair.get("rejected_correct") is False


def verified_sides(pairs: list[dict[str, Any]]) -> pl.DataFrame:
    """(chosen_rollout_id, rejected_rollout_id) of the verified pairs."""
    return pl.DataFrame(
        [(p["chosen_rollout_id"], p["rejected_rollout_id"]) for p in pairs if is_verified(p)],
        schema={"chosen_rollout_id": pl.String, "rejected_rollout_id": pl.String},
        orient="row",
    )


def labeler_accuracy(
    sides: pl.DataFrame, labels: pl.DataFrame, gates: tuple[str, ...] = (), **interval: Any
) -> dict[str, dict[str, Any]]:
    """ "labeler/aspect" -> {gate, pairs, scored, coverage, ties, n, accuracy, ci_low, ci_high}, sorted by name.

    `pairs` counts the verified pairs the labeler labeled on both sides (a code verifier has no label on a math
    pair: that pair is not its to rank); `scored` those where both labels have a score; labelers with no such
    pair are left out. `sides` are verified_sides(pairs); `interval` goes to accuracy_interval (confidence,
    resamples, seed)."""
    out: dict[str, dict[str, Any]] = {}
    for (labeler, aspect), group in sorted(labels.group_by(["labeler", "aspect"]), key=lambda kv: kv[0]):
        if is_part(aspect):  # a rubric's criterion c<i> is a different criterion on every prompt: not a ranker
            continue
        scores = group.select("rollout_id", "score").unique("rollout_id", keep="first", maintain_order=True)
        chosen = scores.rename({"rollout_id": "chosen_rollout_id", "score": "chosen"})
        rejected = scores.rename({"rollout_id": "rejected_rollout_id", "score": "rejected"})
        labeled = sides.join(chosen, on="chosen_rollout_id").join(rejected, on="rejected_rollout_id")
        if labeled.is_empty():
            continue
        scored = labeled.drop_nulls(["chosen", "rejected"])
        outcomes = (scored["chosen"] > scored["rejected"]).to_list()
        out[f"{labeler}/{aspect}"] = {
            "gate": labeler in gates,
            "pairs": labeled.height,
            "scored": scored.height,
            "coverage": round(scored.height / labeled.height, 6),
            "ties": int((scored["chosen"] == scored["rejected"]).sum()),
            **accuracy_interval(outcomes, **interval),
        }
    return out
