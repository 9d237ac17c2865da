"""params `rubrics.<NAME>`: one `rubrics@NAME` stage, which writes a rubric for each chosen prompt.

Refinement ("Chasing the Tail") is a round inside the stage, after the rubric is written in either mode, not a mode
of its own: it needs a rubric to start from and the prompt's best rollouts scored by it, and keeping both in one stage
keeps the DVC graph free of a rubrics -> label -> rubrics loop (every label stage reads the rubrics).
"""

from dataclasses import dataclass, field
from typing import Literal

from rewardmill.transforms.config import from_dict
from rewardmill.transforms.judges.client import BackendConfig
from rewardmill.transforms.labelers.params import LabelerParams, resolve
from rewardmill.transforms.rubrics.autorule import AutoRuleParams

MODES = ("reference", "contrastive", "autorule")


@dataclass(frozen=True)
class RefineParams:
    """`refine`: sharpen the criteria that give the prompt's best rollout and its runner-up the same result."""

    rounds: int = 0  # 0 = off, 1 = one round (each criterion checked yes/no on both, the weak ones rewritten)


@dataclass(frozen=True)
class RubricsParams:
    """params `rubrics.<NAME>`."""

    # reference: from the prompt and its reference answer (RaR); contrastive: from a preferred and a rejected rollout
    # of the prompt, as `rank_by` scores them (OpenRubrics); autorule: one rule set for every prompt, learned from a
    # judge's rationales over those pairs and kept where it agrees with held-out ones (AutoRule; see `autorule`)
    mode: Literal["reference", "contrastive", "autorule"] = "reference"
    backend: BackendConfig = field(default_factory=BackendConfig)  # the writer (default: the policy folder)
    tasks: tuple[str, ...] | None = None  # prompt tasks to write rubrics for (None = every task)
    max_prompts: int | None = None  # the first this many chosen prompts by prompt id (a fixed sample); None = all
    split: str | None = None  # only prompts of this split (train | test); None = both
    n_criteria: int = 5  # criteria asked for
    min_criteria: int = 2  # a reply with fewer readable criteria rejects the prompt (too_few_criteria)
    max_criteria: int = 8  # criteria kept from a reply, in its order
    max_tokens: int = 256  # the writer's reply
    # contrastive and refine: a trusted labeler entry ({labeler, config, tasks}, as under `labelers`) that scores the
    # prompt's rollouts; its labels come from (and go to) the label stages' cache
    rank_by: dict | None = None
    min_margin: float = 0.0  # contrastive: the preferred rollout's score must beat the rejected one's by more
    refine: RefineParams = field(default_factory=RefineParams)
    autorule: AutoRuleParams = field(default_factory=AutoRuleParams)  # mode autorule
    chunk_size: int = 16  # prompts per writer batch
    num_shards: int = 1

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if not 1 <= self.min_criteria <= self.max_criteria:
            raise ValueError(f"need 1 <= min_criteria <= max_criteria, got {self.min_criteria}, {self.max_criteria}")
        if self.n_criteria < self.min_criteria:
            raise ValueError(f"n_criteria ({self.n_criteria}) must be at least min_criteria ({self.min_criteria})")
        if self.max_tokens < 16:
            raise ValueError(f"max_tokens must be >= 16, got {self.max_tokens}")
        if self.max_prompts is not None and self.max_prompts < 0:
            raise ValueError(f"max_prompts must be >= 0 or null, got {self.max_prompts}")
        if self.split not in (None, "train", "test"):
            raise ValueError(f"split must be train, test or null, got {self.split!r}")
        if self.mode == "autorule" and self.refine.rounds:
            raise ValueError(
                "refine works on per-prompt rubrics; mode autorule learns one rule set: set refine.rounds 0"
            )
        if self.refine.rounds not in (0, 1):
            raise ValueError(f"refine.rounds must be 0 or 1, got {self.refine.rounds}")
        if self.chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {self.chunk_size}")
        if self.needs_ranking and self.rank_by is None:
            raise ValueError(
                f"mode {self.mode!r} with refine.rounds {self.refine.rounds} ranks the prompt's rollouts: set rank_by "
                "to a trusted labeler entry, e.g. {labeler: math_answer, tasks: [math]}"
            )
        if self.rank_by is not None:  # a bad labeler name or config fails at config time
            try:
                resolve("rank_by", self.ranker())
            except KeyError as exc:  # UnknownLabeler: its message names the known labelers
                raise ValueError(f"rank_by: {exc.args[0]}") from None

    @property
    def needs_ranking(self) -> bool:
        return self.mode in ("contrastive", "autorule") or self.refine.rounds > 0

    def ranker(self) -> LabelerParams:
        return from_dict(LabelerParams, dict(self.rank_by or {}), "rank_by")
