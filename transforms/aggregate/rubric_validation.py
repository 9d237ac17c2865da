"""Rubric validation: do a generated rubric's scores reproduce the preferences the trusted labelers decided?

For each labeler graded by a generated rubric set (`rubrics: NAME` in its config) and each prompt it graded, the
trusted pairs are the prompt's rollouts the trusted labelers decided correct against those they decided incorrect
(the first of them with a decided, confident enough verdict decides, as a gate does in the reward). The trusted
labelers are the gates by default; `trusted` names others where no rule verifies (a strong served judge, a reward
model with verdicts). A pair is won when the rubric scores the correct rollout higher, lost when lower, tied when
equal. Per rubric (one prompt's): pairs, accuracy = (won + tied / 2) / pairs, agreement = won / (won + lost) (null
when every pair tied). Overall: the same over every pair, and the mean accuracy over rubrics. A rubric with at least
`min_pairs` pairs and an accuracy below `min_accuracy` is flagged; with `drop`, its labels leave the reward (the
labeler's labels of that prompt's rollouts), counted and named.

Pure (polars): in, the labels of the gates and the rubric labelers; out, the record the manifests, metrics and card
show, and the (labeler, prompt) pairs to drop.
"""

from dataclasses import dataclass

import polars as pl

from rewardmill.transforms.aggregate.reward import WHOLE

DIGITS = 6
MAX_LISTED = 20  # flagged prompts and worst rubrics named in the record; the counts are always whole


@dataclass(frozen=True)
class RubricValidationConfig:
    """params `assemble.rubric_validation`."""

    min_pairs: int = 1  # trusted pairs a rubric needs before it can be flagged
    min_accuracy: float = 0.5  # below this (chance is 0.5) a rubric is flagged
    drop: bool = False  # flagged rubrics' labels leave the reward (counted in the manifest)
    # labelers whose decided verdicts make the trusted preferences, first decided wins; () = assemble.aggregate.gates
    trusted: tuple[str, ...] = ()

    def __post_init__(self):
        if self.min_pairs < 1:
            raise ValueError(f"min_pairs must be >= 1, got {self.min_pairs}")
        if not 0.0 <= self.min_accuracy <= 1.0:
            raise ValueError(f"min_accuracy must be in [0, 1], got {self.min_accuracy}")
        if len(set(self.trusted)) != len(self.trusted):
            raise ValueError(f"trusted names a labeler twice: {list(self.trusted)}")

    def trusted_labelers(self, gates: tuple[str, ...]) -> tuple[str, ...]:
        """The labelers that decide the trusted preferences: `trusted`, else the gates."""
        return self.trusted or tuple(gates)

    def check_labelers(self, labelers: list[str], graded: list[str], gates: tuple[str, ...]) -> None:
        """Fail on a trusted labeler params `labelers` lacks, or one that is itself validated here (`graded`: a
        rubric would be measured against its own scores)."""
        if unknown := sorted(set(self.trusted) - set(labelers)):
            raise ValueError(f"trusted names unknown labelers {unknown}; params `labelers` has {sorted(labelers)}")
        if circular := sorted(set(self.trusted_labelers(gates)) & set(graded)):
            raise ValueError(
                f"{circular} grade against a generated rubric set and are trusted to validate it: name other "
                "labelers in trusted (a rule verifier, a judge you trust)"
            )


def rubric_pairs(labels: pl.DataFrame, labeler: str, correct: pl.DataFrame) -> pl.DataFrame:
    """Per prompt graded by `labeler`: pairs, won, tied, lost over its (correct, incorrect) rollout pairs. A rollout's
    rubric score is its whole labels' mean (a rubric judge writes one whole aspect; its criteria are parts)."""
    scored = (
        labels.filter(WHOLE & (pl.col("labeler") == labeler) & pl.col("score").is_not_null())
        .group_by("rollout_id", "prompt_id")
        .agg(pl.col("score").mean())
        .join(correct, on="rollout_id", how="inner")
    )
    right = scored.filter(pl.col("correct")).select("prompt_id", good="score")
    wrong = scored.filter(~pl.col("correct")).select("prompt_id", bad="score")
    return (
        right.join(wrong, on="prompt_id", how="inner")
        .group_by("prompt_id")
        .agg(
            pairs=pl.len(),
            won=(pl.col("good") > pl.col("bad")).sum(),
            tied=(pl.col("good") == pl.col("bad")).sum(),
            lost=(pl.col("good") < pl.col("bad")).sum(),
        )
        .with_columns(accuracy=(pl.col("won") + pl.col("tied") / 2) / pl.col("pairs"))
        .sort("prompt_id")
    )


def validate_labeler(
    labels: pl.DataFrame,
    labeler: str,
    rubric_set: str,
    correct: pl.DataFrame,
    cfg: RubricValidationConfig,
    trusted: tuple[str, ...] = (),
) -> tuple[dict, list[str]]:
    """The record of one rubric labeler and the prompts whose rubric it drops (with `drop`), sorted. `trusted`: the
    labelers `correct` came from, for the record."""
    per = rubric_pairs(labels, labeler, correct)
    scored = labels.filter(WHOLE & (pl.col("labeler") == labeler) & pl.col("score").is_not_null())
    graded = scored["prompt_id"].n_unique()
    flagged = per.filter((pl.col("pairs") >= cfg.min_pairs) & (pl.col("accuracy") < cfg.min_accuracy))
    pairs, won, tied, lost = (int(per[c].sum()) for c in ("pairs", "won", "tied", "lost"))
    flagged_ids = flagged["prompt_id"].to_list()
    record = {
        "rubric_set": rubric_set,
        "trusted": list(trusted),
        "prompts_graded": graded,
        "rubrics_validated": per.height,  # prompts with at least one trusted pair
        "pairs": pairs,
        "accuracy": _rounded((won + tied / 2) / pairs) if pairs else None,
        "agreement": _rounded(won / (won + lost)) if won + lost else None,
        "tied": tied,
        "mean_accuracy": _rounded(per["accuracy"].mean()) if per.height else None,
        "flagged": len(flagged_ids),
        "flagged_prompts": flagged_ids[:MAX_LISTED],
        "dropped": len(flagged_ids) if cfg.drop else 0,
        "min_accuracy": cfg.min_accuracy,
        "worst": [  # the rubrics that reproduce the fewest preferences, for a reader to look at
            {"prompt_id": r["prompt_id"], "pairs": r["pairs"], "accuracy": _rounded(r["accuracy"])}
            for r in per.sort("accuracy", "prompt_id").head(MAX_LISTED).iter_rows(named=True)
        ],
    }
    return record, (flagged_ids if cfg.drop else [])


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), DIGITS)
