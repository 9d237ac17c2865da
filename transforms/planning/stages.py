"""Each stage's plan as its budget admission and `rewardmill plan` read it: the paths of the DAG's inputs and caches,
the rollouts a label or steps stage is handed, and the plans of the rollouts and label stages (the steps stage's is in
pipelines/plan.py, beside the steps stage's own selection). No Beam; nothing here sends a request."""

from dataclasses import dataclass
from pathlib import Path

from rewardmill.schemas import PROMPT_V1, ROLLOUT_V2
from rewardmill.transforms.config import cache_root as params_cache_root
from rewardmill.transforms.config import from_dict, load_section, read_params
from rewardmill.transforms.io import storage
from rewardmill.transforms.io.parquet import read_rows
from rewardmill.transforms.labelers.params import LabelerParams, resolve
from rewardmill.transforms.planning.spend import Prices, StagePlan
from rewardmill.transforms.planning.tokens import TokenCounter

CACHE_FOLDERS = {"rollouts": "rollouts", "label": "labels", "steps": "steps"}  # dvc.yaml: --cache ${cache.root}/...


@dataclass
class Paths:
    """Where the DAG's inputs and the stages' caches are (dvc.yaml's paths by default)."""

    prompts: str = "data/prompts"
    rollouts: str = "data/rollouts"
    model: str = "models/policy"
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


def plan_rollouts_stage(paths: Paths, prices: Prices, cfg) -> StagePlan:
    """The rollouts stage's plan for params `rollouts` (`cfg`: its RolloutsConfig)."""
    from rewardmill.transforms.planning.rollout_plan import plan_rollouts

    if not storage.exists(paths.prompts):
        return missing("rollouts", "(prompt, policy) pairs", paths.prompts, "prompts")
    if not Path(paths.model).is_dir():
        return missing("rollouts", "(prompt, policy) pairs", paths.model, "model")
    members = cfg.pool(paths.model)
    prompts = read_rows(paths.prompts, PROMPT_V1)
    return plan_rollouts(cfg, prompts, members, paths.rollouts_cache, prices, TokenCounter(paths.model))


def plan_label_stage(
    name: str,
    paths: Paths,
    prices: Prices,
    params=None,
    seen: set[str] | None = None,
    rollouts: Rollouts | None = None,
) -> StagePlan:
    """`rollouts`: what the run will hand the stage (`rewardmill plan`); None = the rows at paths.rollouts, as the
    stage's own budget admission reads them."""
    from rewardmill.transforms.planning.label_plan import plan_label

    params = params or load_section(LabelerParams, "labelers", key=name)
    cls, config = resolve(name, params)
    stage = f"label@{name}"
    rollouts = rollouts or on_disk(paths)
    if rollouts.missing:
        return rollouts.plan_missing(stage, "rollouts")
    counter = TokenCounter(paths.model)
    plan = plan_label(stage, cls, config, rollouts.rows, params.tasks, paths.label_cache, prices, counter, seen)
    return rollouts.annotate(plan)
