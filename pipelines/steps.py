"""Stage `steps@NAME`: step-level (process) labels from params `steps.NAME` for rollouts (data/steps/NAME/).

Rollouts of the configured tasks are selected (at most `max_rollouts`, lowest rollout ids first: ids are hashes, so
that is a fixed pseudo-random sample that every steps stage shares, which makes their labels comparable). The driver
picks them from the id columns alone and workers keep the rollouts up to the last chosen id, so no worker ever holds
every rollout. With `reference: pseudo` (or `given_or_pseudo`) every eligible rollout of a prompt first votes on its
pseudo-reference (transforms/steps/pseudo_reference.py). Chunks are groups by id hash, each labeled by a
`StepLabeler` (Monte Carlo continuations on the policy, binary search, an LLM judge, or a consensus of both).
Continuations and judge calls are cached by content under --cache, so a rerun, a resumed stage or a second steps
stage asking for the same prefix generates nothing again. With `--metrics`: steps, continuations per labeled step,
first-error shares, rejects.
"""

import argparse
import math
from pathlib import Path

import apache_beam as beam

from rewardmill.schemas import ROLLOUT_V2, STEP_LABEL_V1
from rewardmill.transforms.config import load_section
from rewardmill.transforms.io.parquet import ReadStageOutput, WriteSortedParquet, stable_shard
from rewardmill.transforms.planning.budget import BUDGET_REASON
from rewardmill.transforms.planning.spend import Spend
from rewardmill.transforms.planning.spent import spend_record
from rewardmill.transforms.planning.stages import load_prices, plan_paths
from rewardmill.transforms.planning.steps_plan import plan_steps_stage
from rewardmill.transforms.sampling.policy import FINGERPRINT_FILE
from rewardmill.transforms.stage.budget import StageBudget
from rewardmill.transforms.stage.conservation import labeled_or_rejected, reconcile
from rewardmill.transforms.stage.outputs import read_manifest, reject, trajectory_count, write_rejects
from rewardmill.transforms.stage.runner import (
    absolute,
    absolute_args,
    cache_arg,
    counter_totals,
    load_beam_config,
    setup_logging,
)
from rewardmill.transforms.stage.skeleton import Finished, ManifestSpec, run_stage
from rewardmill.transforms.steps.beam import NAMESPACE, REJECTED, LabelStepChunks
from rewardmill.transforms.steps.params import Chosen, StepsParams, continuation_model, resolve, selection
from rewardmill.transforms.steps.pseudo_reference import AttachPseudoReferences
from rewardmill.transforms.steps.stats import step_stats


def build(
    p,
    name: str,
    params: StepsParams,
    rollouts_dir: str,
    model_dir: str,
    out_dir: str,
    cache: str | None,
    last_id: str,
    selected: int,
    over_budget: frozenset[str] = frozenset(),
    trajectories: bool = False,
):
    config = resolve(name, params)
    n_chunks = max(1, math.ceil(selected / params.chunk_size))
    total = selected  # rollouts chosen: the progress line's total (`selected` becomes their PCollection below)
    rollouts = p | "Read rollouts" >> ReadStageOutput(rollouts_dir, ROLLOUT_V2)
    selected = rollouts | "Select" >> beam.Filter(Chosen(params, last_id))
    if trajectories:  # every selected rollout is an episode: a reject each, no step labels (see TRAJECTORY)
        rejects = selected | "Trajectories" >> beam.Map(
            lambda row: reject(f"steps@{name}", row["rollout_id"], *TRAJECTORY)
        )
        _ = (
            rejects
            | "No step labels" >> beam.Filter(lambda _: False)
            | "Write step labels"
            >> WriteSortedParquet(
                out_dir, STEP_LABEL_V1, sort_key=lambda r: r["rollout_id"], num_shards=params.num_shards
            )
        )
        write_rejects(rejects, out_dir)
        return
    budget_rejects = None
    if over_budget:
        selected, skipped = selected | "Budget" >> beam.Partition(
            lambda row, _: int(row["prompt_id"] in over_budget), 2
        )
        why = f"params steps.{name}.budget ({params.budget.describe()}) was reached before this prompt"
        budget_rejects = skipped | "Budget rejects" >> beam.Map(budget_reject, f"steps@{name}", why)
    if config.reference != "given":  # every eligible rollout of a prompt votes on its pseudo-reference
        vote = AttachPseudoReferences(config.reference, config.pseudo_reference, Chosen(params, None))
        selected = (rollouts, selected) | "Pseudo-references" >> vote
    labeled = (
        selected
        | "Key by chunk" >> beam.Map(lambda row: (stable_shard(row["rollout_id"], n_chunks), row))
        | "Group chunks" >> beam.GroupByKey()
        | "Chunk in id order" >> beam.MapTuple(lambda _, rows: sorted(rows, key=lambda r: r["rollout_id"]))
        | f"Steps {name}"
        >> beam.ParDo(
            LabelStepChunks(name, config, model_dir, params.backend, params.device, params.vllm, cache, total=total)
        ).with_outputs(REJECTED, main="steps")
    )
    _ = labeled.steps | "Write step labels" >> WriteSortedParquet(
        out_dir,
        STEP_LABEL_V1,
        sort_key=lambda r: f"{r['rollout_id']}\x00{r['step_index']:06d}",
        num_shards=params.num_shards,
    )
    rejects = labeled[REJECTED]
    if budget_rejects is not None:
        rejects = (rejects, budget_rejects) | "All rejects" >> beam.Flatten()
    write_rejects(rejects, out_dir)


# A multi-turn episode's steps are its assistant turns, which assemble labels from the environment's records
# (assemble.prm_turns); Monte Carlo continuations or a step judge of the final answer alone would ignore the turns
# before it.
TRAJECTORY = (
    "trajectory",
    "a multi-turn episode: its steps are its turns, and assemble writes its turn-level PRM row (assemble.prm_turns)",
)


def budget_reject(row: dict, stage: str, why: str) -> dict:
    return reject(stage, row["rollout_id"], BUDGET_REASON, f"{why}; a rerun with a larger budget labels it")


def admission(name: str, params: StepsParams, rollouts_dir: str, model_dir: str, cache: str | None):
    """Which prompts fit under the stage's budget (None: no budget), from its plan over the caches' state."""
    if not params.budget.limited:
        return None
    paths = plan_paths(rollouts=rollouts_dir, model=model_dir, steps_cache=None)  # cache-blind (see budget.py)
    plan = plan_steps_stage(name, paths, load_prices(), params)
    return StageBudget.admit(f"steps.{name}.budget", plan, params.budget)


def spent(name: str, params: StepsParams, rollouts_dir: str, model_dir: str, over: frozenset) -> dict:
    """The manifest's `spend` (transforms/planning/spent.py): the stage's plan without caches over the admitted
    prompts, an upper bound (every prefix continued, every output at its limit)."""
    paths = plan_paths(rollouts=rollouts_dir, model=model_dir, steps_cache=None)
    plan = plan_steps_stage(name, paths, load_prices(), params)
    total = Spend()
    for prompt_id, spend in sorted(plan.groups.items()):
        if prompt_id not in over:
            total.add(spend)
    return spend_record(total, bound=True)


def check_conservation(stage: str, out_dir: str, selected: int, trajectories: bool = False) -> None:
    """Every selected rollout has step labels or a reject; with trajectories, rejects alone are the expected result
    (TRAJECTORY), not a runner that lost the rows."""
    labeled, rejected = labeled_or_rejected(out_dir)
    reconcile(
        stage, inputs=selected, outputs=labeled, rejects=rejected, unit="selected rollouts", allow_empty=trajectories
    )


def metrics_record(done: Finished, manifest: dict, chosen: dict) -> dict:
    this_run = counter_totals(done.result, NAMESPACE)  # continuations generated now (not from the cache), rollouts
    return {**step_stats(done.tmp), "selection": chosen, "rejects": manifest["rejects"], "this_run": this_run}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name", help="the key under `steps:` in params.yaml")
    parser.add_argument("--rollouts", default="data/rollouts", help="the rollouts folder to take step labels of")
    parser.add_argument("--model", default="models/policy", help="the policy that writes continuations")
    parser.add_argument("--out", default=None, help="default: data/steps/NAME")
    parser.add_argument("--cache", default=None, help="continuation and judge call cache (kept across runs)")
    parser.add_argument("--metrics", default=None, help="write the stage's DVC metrics JSON here")
    args = absolute_args(parser.parse_args(argv), "rollouts", "model", "out")
    args.cache = cache_arg(args.cache)
    setup_logging()
    beam_cfg = load_beam_config()
    params = load_section(StepsParams, "steps", key=args.name)
    resolve(args.name, params)  # fail on a bad config before any work
    policies = read_manifest(args.rollouts).get("policies", {})  # the upstream stage finished
    model_dir = absolute(continuation_model(args.name, params.policy, policies, args.model))
    out = args.out or f"data/steps/{args.name}"
    stage = f"steps@{args.name}"
    last_id, chosen = selection(args.rollouts, params)
    budget = admission(args.name, params, args.rollouts, args.model, args.cache)
    over = budget.over if budget else frozenset()
    episodes = trajectory_count(args.rollouts) > 0  # an environment's episodes: rejected, their turns are the steps
    run_stage(
        stage,
        out,
        beam_cfg,
        lambda p, tmp: build(
            p,
            args.name,
            params,
            args.rollouts,
            model_dir,
            tmp,
            args.cache,
            last_id,
            chosen["selected"],
            over,
            episodes,
        ),
        ManifestSpec(
            STEP_LABEL_V1,
            params,
            {"rollouts": args.rollouts, "model": str(Path(model_dir) / FINGERPRINT_FILE)},
            extra={"selection": chosen, "spend": spent(args.name, params, args.rollouts, args.model, over)},
        ),
        check=lambda tmp, result: check_conservation(stage, tmp, chosen["selected"], episodes),
        metrics=args.metrics,
        metrics_record=lambda done, manifest: metrics_record(done, manifest, chosen),
        budget=budget,
    )


if __name__ == "__main__":
    main()
