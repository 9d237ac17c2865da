"""One reward per rollout from all of its labels: rule verifiers decide correctness, model scores rank within it.

In: rollouts (rollout_id, prompt_id, ...) and labels (LABEL_V1 columns) as polars frames.
Out: one row per rollout with `reward`, `correct`, `verified_by`, `model_score`, `confidence`, `agreement`, the named
score vector `scores` and `label_sources` (the REWARD_V1 columns except `status`, plus the rollout's own columns).

Why gates: a plain mean over labelers lets a weak LLM judge pull a verified-wrong answer above a verified-right one.
Here the first gate (a rule verifier, in params order) with a decided verdict sets `correct`, and model-based scores
only move the reward inside that class: reward = (1 - w) * correct + w * model_score with w = rank_weight < 0.5.

Verified first: where gates are configured, a rollout no gate decided (math-verify timed out, the reference did not
parse) is unverified, and its reward lies between the two classes: w + (1 - 2w) * model_score, in [w, 1 - w]. So
it never outranks a verified-correct rollout (>= 1 - w) nor falls below a verified-incorrect one (<= w), and no
strategy pairs it as chosen over a verified-correct rollout (a tie is never paired). Without gates every rollout is
ranked by its model score alone.

Normalized before combined (`normalize: {labeler: prompt}`): a labeler's scores on different scales (a turn-level
`progress` of 1/k, a share of clean tool calls, a judge's Likert rescaled) are min-max scaled among the rollouts of
one prompt, per aspect, before the weighted mean: the best of a group gets 1, the worst 0, a group where all agree
0.5 (no ranking signal). So a process reward ranks trajectories of the same task relative to each other, and never
by its raw scale; the outcome (a gate: the environment's reward, a rule verifier) still sets the class, which no
normalized score can cross (w < 0.5). The score vector keeps the raw scores.

Overrides (`overrides: {labeler: min_confidence}`) let a named model-based labeler, such as the appeal judge,
decide correctness before the gates when its label is decided and at least that confident: then it can overturn a
rule verifier's verdict, which nothing else can. Vectorized (polars), so a million rollouts take seconds; the
result does not depend on row order.
"""

import dataclasses
from dataclasses import dataclass, field

import polars as pl

from rewardmill.schemas.label import PART_SEPARATOR

MEASURED = "measured"  # a weight measured from the run's rows (measured_weights.py)
DECIDED = ("correct", "incorrect")
SCORES_DTYPE = pl.List(pl.Struct({"name": pl.String, "score": pl.Float64}))
LABEL_COLUMNS = ("rollout_id", "labeler", "labeler_version", "aspect", "score", "confidence", "verdict")
NORMALIZATIONS = ("prompt",)
# A label of a whole aspect, not of a part of one (a rubric's criterion: schemas/label.py): only these decide, weigh
# and rank; the parts go in the score vector alone.
WHOLE = ~pl.col("aspect").str.contains(PART_SEPARATOR, literal=True)
COMBINES = ("weighted_sum", "normalize_then_sum")


@dataclass(frozen=True)
class AggregateConfig:
    """params `assemble.aggregate`."""

    gates: tuple[str, ...] = ()  # rule verifiers, in priority order; the first with a decided verdict sets `correct`
    min_gate_confidence: float = 0.5  # a gate label below this confidence does not decide
    # labeler -> weight of its scores in the model score: a number, used as is, or "measured": its agreement with the
    # deciding gate beyond chance on this run's rows (transforms/aggregate/measured_weights.py)
    weights: dict[str, float | str] = field(default_factory=dict)
    default_weight: float = 0.0  # labelers that are neither gates nor in `weights`
    min_measured_rows: int = 20  # a measured weight needs this many rollouts the labeler and a gate both decided
    fallback_weight: float = 1.0  # a measured labeler's weight where it cannot be measured (the manifest says why)
    rank_weight: float = 0.25  # share of the reward the model score moves within a correctness class
    # labeler -> min confidence: a decided label of it at least that confident sets `correct` before any gate (an
    # appeal that may overturn a rule verifier). {} = only gates decide.
    overrides: dict[str, float] = field(default_factory=dict)
    # labeler -> how its scores are normalized before they enter the model score: `prompt` = min-max among the
    # rollouts of one prompt, per aspect (turn-level rewards beside an outcome gate). Unnamed labelers: as they are.
    normalize: dict[str, str] = field(default_factory=dict)
    # how the weighted scores make the model score: weighted_sum (the weighted mean of the scores as they are, or as
    # `normalize` scales them) | normalize_then_sum (GDPO, TRL's multi_objective_aggregation: every weighted score,
    # each name on its own, min-max scaled among the prompt's rollouts first, so no objective's scale dominates)
    combine: str = "weighted_sum"

    def __post_init__(self):
        if not 0.0 <= self.rank_weight < 0.5:
            raise ValueError(
                f"rank_weight must be in [0, 0.5) so no model score can flip a verdict, got {self.rank_weight}"
            )
        if not 0.0 <= self.min_gate_confidence <= 1.0:
            raise ValueError(f"min_gate_confidence must be in [0, 1], got {self.min_gate_confidence}")
        if bad := {k: w for k, w in self.weights.items() if w != MEASURED and not _number(w)}:
            raise ValueError(f"weights must be numbers >= 0 or {MEASURED!r}, got {bad}")
        numbers = [self.default_weight, self.fallback_weight, *(w for w in self.weights.values() if _number(w))]
        if any(w < 0 for w in numbers):
            raise ValueError("weights must be >= 0")
        if self.min_measured_rows < 1:
            raise ValueError(f"min_measured_rows must be >= 1, got {self.min_measured_rows}")
        if overlap := sorted(set(self.gates) & set(self.weights)):
            raise ValueError(f"{overlap} are gates and weighted model scores at once; name each in one place")
        if len(set(self.gates)) != len(self.gates):
            raise ValueError(f"gates name a labeler twice: {list(self.gates)}")
        if overlap := sorted(set(self.gates) & set(self.overrides)):
            raise ValueError(f"{overlap} are gates and overrides at once; an override decides before the gates")
        if bad := {k: v for k, v in self.overrides.items() if not 0.0 <= v <= 1.0}:
            raise ValueError(f"override confidences must be in [0, 1], got {bad}")
        if bad := {k: v for k, v in self.normalize.items() if v not in NORMALIZATIONS}:
            raise ValueError(f"normalize methods must be one of {NORMALIZATIONS}, got {bad}")
        if self.combine not in COMBINES:
            raise ValueError(f"combine must be one of {COMBINES}, got {self.combine!r}")
        if self.combine == "normalize_then_sum" and self.normalize:
            raise ValueError("combine normalize_then_sum scales every weighted score already: leave `normalize` empty")
        if overlap := sorted(set(self.gates) & set(self.normalize)):
            raise ValueError(f"{overlap} are gates: a gate decides correctness by its verdict; normalize ranks scores")

    def with_weights(self, weights: dict[str, float]) -> "AggregateConfig":
        """This config with numbers for the weights (the resolved `measured` ones)."""
        return dataclasses.replace(self, weights={**self.weights, **weights})

    def check_labelers(self, labelers: list[str]) -> None:
        """Fail on gates/weights naming a labeler params `labelers` lacks (a typo would silently do nothing)."""
        unknown = sorted(
            (set(self.gates) | set(self.weights) | set(self.overrides) | set(self.normalize)) - set(labelers)
        )
        if unknown:
            raise ValueError(
                f"gates/weights/overrides/normalize name unknown labelers {unknown}; params `labelers` has "
                f"{sorted(labelers)}"
            )


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def weight_expr(cfg: AggregateConfig) -> pl.Expr:
    """Each label's weight; `measured` weights must be resolved first (AggregateConfig.with_weights)."""
    if unresolved := sorted(k for k, w in cfg.weights.items() if w == MEASURED):
        raise ValueError(f"weights of {unresolved} are {MEASURED!r}: resolve them (measured_weights) before scoring")
    expr = pl.lit(cfg.default_weight, dtype=pl.Float64)
    for labeler, weight in sorted(cfg.weights.items()):
        expr = pl.when(pl.col("labeler") == labeler).then(pl.lit(float(weight))).otherwise(expr)
    return expr


def score_rollouts(rollouts: pl.DataFrame, labels: pl.DataFrame, cfg: AggregateConfig) -> pl.DataFrame:
    """rollouts + their labels -> rollouts with the aggregate columns (see the module docstring); labels whose
    rollout is missing are ignored here (the caller rejects them)."""
    # Integer keys: a label's rollout is `_row` (its row in `rollouts`), its name and source are their ranks among
    # the few distinct ones, so the sort, the groups and the joins below compare integers, not strings.
    rows = rollouts.select("rollout_id").with_row_index("_row")
    labels = (
        labels.select(LABEL_COLUMNS)
        .join(rows, on="rollout_id", how="inner")  # a label without a rollout counts nowhere here
        .with_columns(
            name=pl.col("labeler") + "/" + pl.col("aspect"), source=pl.col("labeler") + "@" + pl.col("labeler_version")
        )
    )
    source_list = sorted(labels["source"].unique().to_list())
    # One sort up front: every group below then sees its labels in (name, source) order (group_by with
    # maintain_order keeps row order inside groups), so float sums have a fixed order and the bits never depend on
    # how rows arrived. One global sort costs a fraction of sorting inside every group.
    labels = labels.with_columns(
        _name=rank_of(pl.col("name"), sorted(labels["name"].unique().to_list())),
        _source=rank_of(pl.col("source"), source_list),
    ).sort("_row", "_name", "_source", maintain_order=True)
    deciders = [*sorted(cfg.overrides), *cfg.gates]  # overrides first (by name), then the gates in params order
    gate_rank = {g: i for i, g in enumerate(deciders)}
    is_gate = pl.col("labeler").is_in(list(cfg.gates))
    min_confidence = pl.lit(cfg.min_gate_confidence)
    for labeler, threshold in cfg.overrides.items():
        min_confidence = pl.when(pl.col("labeler") == labeler).then(pl.lit(float(threshold))).otherwise(min_confidence)

    gate = (
        labels.filter(
            WHOLE
            & pl.col("labeler").is_in(deciders)
            & pl.col("verdict").is_in(DECIDED)
            & pl.col("score").is_not_null()
            & (pl.col("confidence") >= min_confidence)
        )
        .with_columns(rank=pl.col("labeler").replace_strict(gate_rank, return_dtype=pl.Int32))
        # the first decider (overrides, then gates in order), then aspect (a decider's names differ by aspect only)
        .sort("_row", "rank", "_name", maintain_order=True)
        .group_by("_row", maintain_order=True)
        .agg(
            correct=(pl.col("verdict").first() == "correct"),
            verified_by=pl.col("labeler").first(),
            gate_confidence=pl.col("confidence").first(),
        )
    )

    model = (
        labels.filter(WHOLE & ~is_gate & pl.col("score").is_not_null())
        .with_columns(weight=weight_expr(cfg))
        .filter(pl.col("weight") > 0)
        .pipe(normalized, rollouts, cfg.normalize, every=cfg.combine == "normalize_then_sum")
        .group_by("_row", maintain_order=True)
        .agg(
            model_score=(pl.col("_ranked") * pl.col("weight")).sum() / pl.col("weight").sum(),
            model_confidence=(pl.col("confidence") * pl.col("weight")).sum() / pl.col("weight").sum(),
            model_spread=pl.col("score").std(ddof=0),
            n_model=pl.len(),
            model_yes=(pl.col("score") >= 0.5).mean(),  # share of model scores voting "right"
        )
    )

    vector = labels.group_by("_row", maintain_order=True).agg(
        scores=pl.struct(name=pl.col("name"), score=pl.col("score"))
    )
    sources = label_sources(labels, source_list)

    w = cfg.rank_weight
    correct = pl.col("correct").cast(pl.Float64)
    # With a gate: the share of model votes (score >= 0.5) on the gate's side; without: 1 - 2 * spread of the model
    # scores (scores live in [0, 1], so the spread is at most 0.5). Null when there is nothing to agree with.
    yes_share = pl.col("model_yes")
    agreement = (
        pl.when(pl.col("correct").is_not_null() & pl.col("n_model").is_not_null())
        .then(pl.when(pl.col("correct")).then(yes_share).otherwise(1.0 - yes_share))
        .when(pl.col("correct").is_null() & (pl.col("n_model") >= 2))
        .then((1.0 - 2.0 * pl.col("model_spread")).clip(0.0, 1.0))
        .otherwise(None)
    )
    out = (
        rollouts.with_row_index("_row")
        .join(gate, on="_row", how="left", maintain_order="left")
        .join(model, on="_row", how="left", maintain_order="left")
        .join(vector.join(sources, on="_row", how="left"), on="_row", how="left", maintain_order="left")
        .with_columns(
            reward=pl.when(pl.col("correct").is_not_null())
            .then((1.0 - w) * correct + w * pl.coalesce(pl.col("model_score"), correct))
            .otherwise(w + (1.0 - 2.0 * w) * pl.col("model_score") if deciders else pl.col("model_score")),
            agreement=agreement,
        )
        .with_columns(
            confidence=pl.when(pl.col("correct").is_not_null())
            .then(pl.col("gate_confidence"))
            .when(pl.col("model_score").is_not_null())
            .then(pl.col("model_confidence") * pl.coalesce(pl.col("agreement"), pl.lit(1.0)))
            .otherwise(0.0),
            scores=pl.col("scores").fill_null(pl.lit([], dtype=SCORES_DTYPE)),
            label_sources=pl.col("label_sources").fill_null(pl.lit([], dtype=pl.List(pl.String))),
        )
        .drop("_row", "gate_confidence", "model_confidence", "model_spread", "n_model", "model_yes")
    )
    return out


def normalized(
    labels: pl.DataFrame, rollouts: pl.DataFrame, normalize: dict[str, str], every: bool = False
) -> pl.DataFrame:
    """`labels` (with `_row`, `name`, `score`) plus `_ranked`: the score the model score averages. For a labeler in
    `normalize` (method `prompt`), or every labeler with `every` (combine normalize_then_sum), it is min-max scaled
    among its labels of the same name on one prompt's rollouts, 0.5 where they all agree; otherwise the score itself.
    Row order is kept."""
    if not normalize and not every:
        return labels.with_columns(_ranked=pl.col("score"))
    prompts = rollouts.select("prompt_id").with_row_index("_row")
    group = ["_prompt", "name"]
    low, high = pl.col("score").min().over(group), pl.col("score").max().over(group)
    scaled = pl.when(high > low).then((pl.col("score") - low) / (high - low)).otherwise(0.5)
    chosen = pl.lit(True) if every else pl.col("labeler").is_in(list(normalize))
    return (
        labels.join(prompts.rename({"prompt_id": "_prompt"}), on="_row", how="left", maintain_order="left")
        .with_columns(_ranked=pl.when(chosen).then(scaled).otherwise(pl.col("score")))
        .drop("_prompt")
    )


def rank_of(column: pl.Expr, values: list[str]) -> pl.Expr:
    """Each value's index in `values` (sorted, holding every value of the column), as UInt32."""
    return column.cast(pl.Enum(values)).to_physical().cast(pl.UInt32)


def label_sources(labels: pl.DataFrame, sources: list[str]) -> pl.DataFrame:
    """_row -> label_sources: the distinct `source`s of its labels, sorted. `labels` carry `_source`, the rank of
    their source in `sources` (sorted)."""
    if len(sources) > 63:  # more than a bit set holds: distinct pairs, sorted
        return (
            labels.select("_row", "source")
            .unique()
            .sort("_row", "source")
            .group_by("_row", maintain_order=True)
            .agg(label_sources=pl.col("source"))
        )
    # A rollout's sources as the set bits of one integer, and each distinct set turned into its list once: a group
    # of a few labels costs an OR, not a unique and a sort of strings.
    bits = labels.group_by("_row").agg(_bits=pl.lit(2, dtype=pl.UInt64).pow(pl.col("_source")).bitwise_or())
    sets = bits.select(pl.col("_bits").unique())["_bits"].to_list()
    lists = pl.DataFrame(
        {"_bits": sets, "label_sources": [[s for i, s in enumerate(sources) if bits_ >> i & 1] for bits_ in sets]},
        schema={"_bits": pl.UInt64, "label_sources": pl.List(pl.String)},
    )
    return bits.join(lists, on="_bits", how="left").drop("_bits")


def objectives(cfg: AggregateConfig) -> dict:
    """The reward as GRPO's reward functions make it (the exported card's snippet): each gate with weight
    1 - rank_weight (gates apply to their own tasks: the others get None, which TRL leaves out of the sum), each
    labeler with a positive weight (resolved: no `measured` left) sharing rank_weight in proportion, and TRL's
    multi_objective_aggregation for `combine`. Without weighted labelers the gates carry the whole reward."""
    weighted = {name: float(w) for name, w in sorted(cfg.weights.items()) if float(w) > 0}
    total = sum(weighted.values())
    gate_weight = 1.0 - cfg.rank_weight if weighted else 1.0
    weights = [gate_weight] * len(cfg.gates) + [cfg.rank_weight * w / total for w in weighted.values()]
    return {
        "rewards": [*cfg.gates, *weighted],
        "weights": [round(w, 6) for w in weights],
        "aggregation": "normalize_then_sum" if cfg.combine == "normalize_then_sum" else "sum_then_normalize",
    }
