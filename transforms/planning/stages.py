"""What every stage's plan reads, for its budget admission and `rewardmill plan`: the paths of the DAG's inputs and
caches, params `prices`, and the rollouts a label or steps stage is handed. Each stage's plan is beside its planner
(rollout_plan.py, label_plan.py, steps_plan.py). No Beam; nothing here sends a request."""

from dataclasses import dataclass

from rewardmill.schemas import ROLLOUT_V2
from rewardmill.transforms.config import cache_root as params_cache_root
from rewardmill.transforms.config import from_dict, read_params
from rewardmill.transforms.io import storage
from rewardmill.transforms.io.parquet import read_rows
from rewardmill.transforms.planning.spend import Prices, StagePlan

CACHE_FOLDERS = {"rollouts": "rollouts", "label": "labels", "steps": "steps"}  # dvc.yaml: --cache ${cache.root}/...


@dataclass
class Paths:
    """Where the DAG's inputs and the stages' caches are (dvc.yaml's paths by default)."""

    prompts: str = "data/prompts"
    rollouts: str = "data/rollouts"
    model: str = "models/policy"
    rubrics: str = "data/rubrics"  # the generated rubric sets (a rubric_judge with `rubrics` reads one)
    rollouts_cache: str | None = None
    label_cache: str | None = None
    steps_cache: str | None = None


def plan_paths(cache_root: str | None = None, **paths) -> Paths:
    """dvc.yaml's paths, caches under `cache_root` (default params `cache.root`), with `paths` overriding any."""
    root = cache_root or params_cache_root(read_params())
    caches = {f"{kind}_cache": storage.join(root, folder) for kind, folder in CACHE_FOLDERS.items()}
    return Paths(**(caches | paths))


def load_prices() -> Prices:
    raw = read_params().get("prices")
    return from_dict(Prices, raw or {}, "prices")


def missing(stage: str, unit: str, what: str, target: str) -> StagePlan:
    plan = StagePlan(stage, unit)
    plan.notes.append(f"{what} is not built yet: `dvc repro {target}` first (the plan needs its rows)")
    return plan


@dataclass
class Rollouts:
    """What the label and steps stages of one plan read: the rollouts on disk while the rollouts stage will not
    rerun, else the rows it will write (`placeholders` of them not sampled yet). `missing`: (what, dvc target) when
    neither can be had."""

    rows: list[dict] | None = None
    policies: dict | None = None  # the manifest's `policies` (what the steps stage reads)
    placeholders: frozenset[str] = frozenset()  # ids of the rows not sampled yet
    note: str | None = None
    missing: tuple[str, str] | None = None
    max_new_tokens: int = 0  # the longest a placeholder's answer may be

    def plan_missing(self, stage: str, unit: str) -> StagePlan:
        what, target = self.missing
        return missing(stage, unit, what, target)

    def annotate(self, plan: StagePlan) -> StagePlan:
        if self.note:
            plan.notes.append(self.note)
        if self.placeholders and plan.send.requests:  # calls on answers not sampled yet: at most this many
            plan.bound = True
        return plan


def on_disk(paths: Paths) -> Rollouts:
    """The rollouts at paths.rollouts as they are."""
    if not storage.exists(paths.rollouts):
        return Rollouts(missing=(paths.rollouts, "rollouts"))
    return Rollouts(read_rows(paths.rollouts, ROLLOUT_V2))
