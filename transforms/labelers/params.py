"""params `labelers.<NAME>`: one label stage's entry (which labeler, its config, its tasks, shards, budget and the
judge's probe and failed-call limits), and the labeler it names, resolved. The label stage, the audit, `rewardmill
plan` and the GRPO reward functions all build a labeler from its entry here, the same way.
"""

from dataclasses import dataclass, field

from rewardmill.transforms.config import from_dict
from rewardmill.transforms.labelers import get_labeler_class
from rewardmill.transforms.planning.budget import Budget


@dataclass(frozen=True)
class LabelerParams:
    """params `labelers.<NAME>`."""

    labeler: str  # registry key (transforms/labelers/__init__.py or the rewardmill.labelers entry points)
    config: dict = field(default_factory=dict)  # the labeler's own settings, checked against its Config
    # Prompt tasks this labeler applies to (rows of other tasks are counted as not applicable, not labeled);
    # None = the labeler's own default (its `tasks` attribute; no attribute = every task).
    tasks: tuple[str, ...] | None = None
    num_shards: int = 1
    # The most this stage sends in one run (judge calls, tokens, USD at params `prices`); prompts beyond it are
    # rejected with reason `budget`, and a rerun with a larger budget continues from the caches. null = no cap.
    budget: Budget = field(default_factory=Budget)
    # Judges only: attack probes (transforms/judges/probes.py) run on this many of the run's prompts (0 = none). Their
    # calls go through the judge's call cache, so a rerun costs nothing.
    probe_prompts: int = 4
    # The largest share of probes a judge may credit and still be an assemble gate or override (above it the assemble
    # stage fails); a judge used only to rank reports its rate and runs.
    max_probe_fpr: float = 0.1
    # Judges only: the largest share of the rollouts it labels that may be rejected as judge_call_failed (a call that
    # still failed after its retries) before the stage fails instead of writing its output. A rerun resumes.
    max_failed_calls: float = 0.05


def resolve(name: str, params: LabelerParams):
    cls = get_labeler_class(params.labeler)
    config = from_dict(cls.Config, params.config, f"labelers.{name}.config")
    return cls, config


def rubric_set(name: str, params: LabelerParams) -> str | None:
    """The generated rubric set the entry's labeler grades against (RubricReadingLabeler), or None."""
    from rewardmill.transforms.labelers.contract import RubricReadingLabeler, has_hook

    cls, config = resolve(name, params)
    labeler = cls(config)
    return labeler.rubric_set if has_hook(labeler, RubricReadingLabeler) else None
