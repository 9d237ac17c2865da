"""Plan a rubrics@NAME stage: the writer calls its chosen prompts would send, against the call cache.

The writer runs on each chosen prompt with counting clients (judge_calls.py): a request the call cache answers is
cached, any other is charged to its prompt and answered with an error. The rank labeler (contrastive, refine) labels
for real, as it would in the stage: rule labelers cost nothing, a judge's calls are counted the same way. The refine
round's calls come only after the writer's reply is read, so they are not counted: a note says how many at most.
`rubrics_spend` replays the same over a built stage for its manifest's `spend`.
"""

from rewardmill.schemas import PROMPT_V1
from rewardmill.transforms.config import load_section
from rewardmill.transforms.io import storage
from rewardmill.transforms.io.parquet import read_rows
from rewardmill.transforms.planning.judge_calls import CallRecorder, SpendRecorder, counting_calls
from rewardmill.transforms.planning.spend import Prices, StagePlan
from rewardmill.transforms.planning.spent import spend_record
from rewardmill.transforms.planning.stages import Paths, Rollouts, missing, on_disk
from rewardmill.transforms.planning.tokens import TokenCounter
from rewardmill.transforms.rubrics.params import RubricsParams
from rewardmill.transforms.rubrics.selection import chosen_prompts
from rewardmill.transforms.rubrics.writer import RubricWriter


def plan_rubrics_stage(
    name: str,
    paths: Paths,
    prices: Prices,
    seen: set[str] | None = None,
    rollouts: Rollouts | None = None,
    recorder: CallRecorder | None = None,
) -> StagePlan:
    """`recorder`: where the calls go, into its own plan (default: priced into a new plan, as label_plan does)."""
    params = load_section(RubricsParams, "rubrics", key=name)
    stage = f"rubrics@{name}"
    if not storage.exists(paths.prompts):
        return missing(stage, "prompts", paths.prompts, "prompts")
    rollouts = (rollouts or on_disk(paths)) if params.needs_ranking else None
    if rollouts is not None and rollouts.missing:
        return rollouts.plan_missing(stage, "prompts")
    chosen = chosen_prompts(paths.prompts, params)
    wanted = set(chosen)
    prompts = sorted((p for p in read_rows(paths.prompts, PROMPT_V1) if p["prompt_id"] in wanted), key=_id)
    by_prompt: dict[str, list[dict]] = {}
    for row in rollouts.rows if rollouts is not None else ():
        if row["prompt_id"] in wanted:
            by_prompt.setdefault(row["prompt_id"], []).append(row)
    plan = recorder.plan if recorder is not None else StagePlan(stage, "prompts", rows=len(chosen))
    calls = recorder or CallRecorder(plan, prices, TokenCounter(paths.model), seen)
    writer = RubricWriter(name, params, paths.label_cache)
    with counting_calls(calls):
        for prompt in prompts:
            calls.group = prompt["prompt_id"]
            writer.write([(prompt, sorted(by_prompt.get(prompt["prompt_id"], []), key=lambda r: r["rollout_id"]))])
    writer.close()
    if params.refine.rounds and recorder is None:
        most = 2 * params.max_criteria + 1
        plan.notes.append(f"not counted: the refine round's calls, at most {most} per prompt with a runner-up")
    return rollouts.annotate(plan) if rollouts is not None else plan


def rubrics_spend(name: str, paths: Paths, prices: Prices) -> dict:
    """A built rubrics stage's `spend` (transforms/planning/spent.py): the writer replayed over its chosen prompts
    with every call the call cache holds charged once at the tokens the model reported, the refine round's included
    (its calls follow cached answers). The rank labeler's labels come from the label cache, so a judge ranking the
    rollouts is charged by its own label stage, when it is one, and not here."""
    plan = StagePlan(f"rubrics@{name}", "prompts")
    recorder = SpendRecorder(plan, prices, TokenCounter(paths.model))
    plan_rubrics_stage(name, paths, prices, recorder=recorder)  # no prompts on disk: nothing charged
    return spend_record(plan.send, recorder.estimated, recorder.uncached)


def _id(row: dict) -> str:
    return row["prompt_id"]
