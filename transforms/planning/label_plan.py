"""The plan of one label stage: which rollouts its label cache answers, and what the labeler would send for the
rest, found by running the labeler on them with counting clients (judge_calls.py). Only labelers that call a model
through a judge client run here; the others (rule verifiers, sandboxes, reward models) are counted as rows to
compute, with no requests."""

from collections import defaultdict

from rewardmill.schemas import RUBRIC_V1
from rewardmill.schemas.rubric import ALL_PROMPTS
from rewardmill.transforms.config import load_section
from rewardmill.transforms.io import storage
from rewardmill.transforms.io.parquet import read_rows
from rewardmill.transforms.labelers.base import safe_label, uses_groups
from rewardmill.transforms.labelers.cache import LabelCache, call_cache_dir, record_key
from rewardmill.transforms.labelers.contract import (
    GENERATED_RUBRIC,
    CallCachingLabeler,
    declared_tasks,
    has_hook,
    tear_down,
)
from rewardmill.transforms.labelers.params import LabelerParams, resolve, rubric_set
from rewardmill.transforms.planning.judge_calls import CallRecorder, SpendRecorder, counting_calls
from rewardmill.transforms.planning.spend import Prices, StagePlan
from rewardmill.transforms.planning.spent import spend_record
from rewardmill.transforms.planning.stages import Paths, Rollouts, missing, on_disk
from rewardmill.transforms.planning.tokens import TokenCounter


def applicable(rows: list[dict], tasks: tuple[str, ...] | None, reads: tuple[str, ...]) -> list[dict]:
    """The rows the stage labels: of its tasks (a row without a task is not routed) with every column it reads."""
    return [
        r
        for r in rows
        if not (tasks and r.get("task") is not None and r["task"] not in tasks) and all(c in r for c in reads)
    ]


def plan_label(
    stage: str,
    labeler_cls,
    config,
    rows: list[dict],
    tasks: tuple[str, ...] | None,
    cache_dir: str | None,
    prices: Prices,
    tokens: TokenCounter,
    seen: set[str] | None = None,
    recorder: CallRecorder | None = None,
) -> StagePlan:
    """`rows`: the rollouts the stage reads; `cache_dir`: its --cache (label cache; judge calls beside it); `seen`:
    the call keys earlier stages of the same plan send; `recorder`: where the calls go (default: priced into the
    returned plan; the batch pass collects them instead)."""
    plan = recorder.plan if recorder is not None else StagePlan(stage, "rollouts")
    recorder = recorder or CallRecorder(plan, prices, tokens, seen)
    cache = LabelCache(cache_dir, labeler_cls, config) if cache_dir and recorder.reads_label_cache else None
    with counting_calls(recorder):
        labeler = labeler_cls(config)
        calls_model = has_hook(labeler, CallCachingLabeler)  # a labeler that calls a model caches its calls
        if cache_dir and calls_model:
            labeler.set_call_cache(call_cache_dir(cache_dir))
        tasks = tasks if tasks is not None else declared_tasks(labeler)
        mine = sorted(applicable(rows, tasks, labeler.reads), key=lambda r: (r["prompt_id"], r["rollout_id"]))
        plan.rows = len(mine)
        if uses_groups(labeler_cls, config):
            by_prompt: dict[str, list[tuple]] = defaultdict(list)
            for row in mine:
                by_prompt[row["prompt_id"]].append(tuple(row[c] for c in labeler.reads))
            for prompt_id, values in sorted(by_prompt.items()):
                if cache is not None and all(cache.get(record_key((v, values))) is not None for v in values):
                    plan.rows_cached += len(values)
                elif calls_model:
                    recorder.group = prompt_id
                    try:
                        labeler.label_group(values)
                    except Exception:  # the run records an error label for the group; the calls were counted
                        pass
        else:
            for row in mine:
                values = tuple(row[c] for c in labeler.reads)
                if cache is not None and cache.get(record_key(values)) is not None:
                    plan.rows_cached += 1
                elif calls_model:
                    recorder.group = row["prompt_id"]
                    safe_label(labeler, values)
        tear_down(labeler)
    if not calls_model and plan.rows > plan.rows_cached:
        plan.notes.append(f"{plan.rows - plan.rows_cached} rollouts computed in-process (no model calls)")
    if tokens.estimated:
        plan.notes.append(f"input tokens of {sorted(tokens.estimated)} estimated with the policy's tokenizer")
    return plan


def plan_label_stage(
    name: str,
    paths: Paths,
    prices: Prices,
    params=None,
    seen: set[str] | None = None,
    rollouts: Rollouts | None = None,
    recorder: CallRecorder | None = None,
) -> StagePlan:
    """`rollouts`: what the run will hand the stage (`rewardmill plan`); None = the rows at paths.rollouts, as the
    stage's own budget admission reads them. `recorder`: see plan_label."""
    params = params or load_section(LabelerParams, "labelers", key=name)
    cls, config = resolve(name, params)
    stage = f"label@{name}"
    rollouts = rollouts or on_disk(paths)
    if rollouts.missing:
        return rollouts.plan_missing(stage, "rollouts")
    rows = rollouts.rows
    if (chosen := rubric_set(name, params)) is not None:  # graded by generated rubrics: joined as the stage joins them
        folder = storage.join(paths.rubrics, chosen)
        if not storage.exists(folder):
            return missing(stage, "rollouts", folder, f"rubrics@{chosen}")
        criteria = {r["prompt_id"]: r["criteria"] for r in read_rows(folder, RUBRIC_V1)}
        rows = [{**row, GENERATED_RUBRIC: criteria.get(row["prompt_id"], criteria.get(ALL_PROMPTS))} for row in rows]
    counter = TokenCounter(paths.model)
    plan = plan_label(stage, cls, config, rows, params.tasks, paths.label_cache, prices, counter, seen, recorder)
    return rollouts.annotate(plan)


def label_spend(name: str, params: LabelerParams, paths: Paths, rows: list[dict], prices: Prices) -> dict:
    """A label stage's spend over `rows` (the rollouts it labeled); a labeler that calls no model spent nothing."""
    cls, _ = resolve(name, params)
    plan = StagePlan(f"label@{name}", "rollouts")
    if not has_hook(cls, CallCachingLabeler):
        return spend_record(plan.send)
    recorder = SpendRecorder(plan, prices, TokenCounter(paths.model))
    plan_label_stage(name, paths, prices, params, rollouts=Rollouts(rows), recorder=recorder)
    return spend_record(plan.send, recorder.estimated, recorder.uncached)
