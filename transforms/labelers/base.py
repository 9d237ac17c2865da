"""What every labeler returns, and the checks shared by all of them."""

from dataclasses import dataclass

from rewardmill.schemas.label import VERDICTS
from rewardmill.transforms.io import timings
from rewardmill.transforms.labelers.contract import BatchLabeler, GroupChoosingLabeler, GroupLabeler, has_hook


@dataclass(frozen=True)
class Label:
    """One judgment. `score` None means "could not label" and `rationale` says why — never a silent 0."""

    score: float | None
    confidence: float
    verdict: str
    rationale: str = ""
    raw: str | None = None
    aspect: str = "correctness"
    # Set when the row could not be labeled for a reason outside the row (a judge call failed beyond its retry
    # budget): the label stage sends the row to _rejects with this reason instead of writing a label, and never
    # caches it, so the next run tries again. Nothing about the rollout itself is judged.
    reject_reason: str | None = None
    # False for a label that may not hold on a rerun though nothing about the row changed (code that timed out on a
    # loaded machine): the label stands for this run, but the cache does not keep it, so the next run tries again.
    cacheable: bool = True

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"confidence {self.confidence} is outside [0, 1]")
        if self.score is None and self.verdict in ("correct", "incorrect"):
            raise ValueError("a correct/incorrect verdict needs a score")
        if self.reject_reason is not None and self.verdict != "error":
            raise ValueError("a label with a reject_reason must have verdict error")


def as_labels(result: "Label | list[Label]") -> list[Label]:
    """A labeler's result for one row as a list: one Label, or one per aspect (a multi-head reward model)."""
    return list(result) if isinstance(result, list | tuple) else [result]


def label_row(row: dict, labeler: str, version: str, label: Label) -> dict:
    """LABEL_V1 row for `label` of rollout `row`."""
    return {
        "rollout_id": row["rollout_id"],
        "prompt_id": row["prompt_id"],
        "labeler": labeler,
        "labeler_version": version,
        "aspect": label.aspect,
        "score": label.score,
        "confidence": label.confidence,
        "verdict": label.verdict,
        "rationale": label.rationale,
        "raw": label.raw,
    }


def safe_label(labeler, values: tuple) -> Label:
    """`labeler.label(*values)`; an exception becomes a label with verdict `error`: one bad row never stops a stage."""
    try:
        with timings.timed("labeler"):
            return labeler.label(*values)
    except Exception as exc:
        return Label(None, 0.0, "error", f"{type(exc).__name__}: {exc}"[:500])


def label_values(labeler, rows: list[tuple], on_label=None) -> list[Label]:
    """Labels for rows of the labeler's `reads` values, in order: `label_many` (parallel inside the labeler) when it
    has one (BatchLabeler) and there is more than one row, else one by one with `safe_label`. When `label_many`
    raises, the rows are labeled one by one, so only the failing rows get an error label. `on_label(i, label)` sees
    each label as soon as it exists (a cache keeps what a killed run finished)."""
    labels = None
    if len(rows) > 1 and has_hook(labeler, BatchLabeler):
        try:
            with timings.timed("labeler"):
                labels = list(labeler.label_many(rows))
        except Exception:
            labels = None
        if labels is not None and len(labels) != len(rows):
            raise ValueError(f"{type(labeler).__name__}.label_many returned {len(labels)} labels for {len(rows)} rows")
    if labels is not None:
        for i, label in enumerate(labels):
            if on_label is not None:
                on_label(i, label)
        return labels
    labels = []
    for i, values in enumerate(rows):
        labels.append(safe_label(labeler, values))
        if on_label is not None:
            on_label(i, labels[-1])
    return labels


def resolve_labeler(key: str, config: dict, where: str):
    """(class, validated config) of an inner labeler named in another labeler's config (tiers, appeals). An unknown
    key or a bad config raises ValueError, so the outer config fails at params time with `where` in the message."""
    from rewardmill.transforms.config import ConfigError, from_dict
    from rewardmill.transforms.labelers import get_labeler_class

    try:
        cls = get_labeler_class(key)
    except KeyError as exc:
        raise ValueError(f"{where}: {exc.args[0]}") from exc
    try:
        return cls, from_dict(cls.Config, config, f"{where}.config")
    except ConfigError as exc:  # the caller's from_dict adds the params.yaml prefix and section
        raise ValueError(str(exc).removeprefix("params.yaml: ")) from exc


def uses_groups(labeler_cls, config) -> bool:
    """Whether the labeler sees a prompt's rollouts together: it has `label_group` (GroupLabeler), and its
    `groups(config)` (when it has one, GroupChoosingLabeler: a reward model only in pairwise mode) says so."""
    if not has_hook(labeler_cls, GroupLabeler):
        return False
    return bool(labeler_cls.groups(config)) if has_hook(labeler_cls, GroupChoosingLabeler) else True
