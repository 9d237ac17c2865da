"""`rewardmill plan`: what every stage of the DAG would send before it sends anything.

From params and the caches' state (params `cache.root`), per stage: the units it reads and how many its caches
answer whole, the model requests it would send (judge calls, policy samples, prefixes to continue) and those its
call caches answer, input tokens, the most output tokens, and money at params `prices`. A stage whose input is not
built yet says which `dvc repro` target makes it. A plan predicts the whole run the params describe: when the rollouts
stage will rerun (its output missing, or its manifest's params hash, prompts digest or policy fingerprints differ from
what params and inputs give now), the label and steps stages are planned against the rollouts it will write, not
the stale ones on disk (transforms/planning/upstream.py). The label, steps and rollouts stages use the same plans to
admit work under their `budget`, always against the rows they are handed.

rewardmill plan                         # every stage
rewardmill plan --stage label@appeal    # one stage (repeat --stage for more), as dvc.yaml names it
rewardmill plan --json                  # machine-readable

A plan of every stage (no --stage) ends with two more parts. With params `targets` set: the rounds `rewardmill repro`
would run to meet them, from the rates of the dataset on disk (or targets.assumed_yield before one is built), and what
the prompts they add would send. With a dataset on disk: the tokens and dollars per accepted row of each config, split
by stage (the run without caches over the rows it gave; at the targets' final size when targets are set).
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

from rewardmill.pipelines.settings import stage_names
from rewardmill.schemas import PROMPT_V1
from rewardmill.transforms.config import from_dict, load_section, params_hash, read_params
from rewardmill.transforms.io import storage
from rewardmill.transforms.io.parquet import read_rows
from rewardmill.transforms.labelers.params import LabelerParams, rubric_set
from rewardmill.transforms.planning.label_plan import plan_label_stage
from rewardmill.transforms.planning.rollout_plan import plan_rollouts_stage
from rewardmill.transforms.planning.rubrics_plan import plan_rubrics_stage
from rewardmill.transforms.planning.spend import Prices, Spend, StagePlan
from rewardmill.transforms.planning.stages import (
    Paths,
    Rollouts,
    load_prices,
    on_disk,
    plan_paths,
)
from rewardmill.transforms.planning.steps_plan import plan_steps_stage
from rewardmill.transforms.planning.upstream import predicted_rollouts, stale_reasons
from rewardmill.transforms.stage.outputs import MANIFEST, digest_path, read_manifest
from rewardmill.transforms.targets.params import TargetsConfig
from rewardmill.transforms.targets.plan import plan_row_costs, plan_targets
from rewardmill.transforms.targets.sizes import source_sizes
from rewardmill.transforms.targets.yields import count_columns, observe

DATASET_CONFIGS = ("pairs", "pairs_by_aspect", "prm", "rl", "sft")  # assemble's outputs with rows to cost
NO_CALLS = ("model", "prompts", "assemble", "evaluate", "validate", "export")  # compute only, no model calls


def prompts_note(paths: Paths) -> str | None:
    """A note when data/prompts is not what params `prompts` describe (the plan does not predict prompts)."""
    from rewardmill.pipelines.prompts import STAGE, PromptsConfig

    if not storage.exists(storage.join(paths.prompts, MANIFEST)):
        return None
    recorded = read_manifest(paths.prompts).get("params_hash")
    if recorded == params_hash(load_section(PromptsConfig, STAGE)):
        return None
    return (
        f"{paths.prompts} was built from other `prompts` params than params.yaml's: planned against the prompts on "
        "disk; `dvc repro prompts` first for an exact plan"
    )


def rollouts_to_plan(paths: Paths, cfg=None) -> Rollouts:
    """The rollouts the stages after `rollouts` will read in the run params describe (see the module docstring)."""
    from rewardmill.pipelines.rollouts import STAGE, RolloutsConfig, policies_record

    cfg = cfg or load_section(RolloutsConfig, STAGE)
    built = storage.exists(paths.rollouts)
    if built and not storage.exists(storage.join(paths.rollouts, MANIFEST)):  # hand-made: nothing to compare with
        return on_disk(paths)
    if not storage.exists(paths.prompts) or not Path(paths.model).is_dir():  # nothing to compare with or sample from
        return on_disk(paths)  # or, when not built either, `dvc repro rollouts` (which builds prompts and model)
    members = cfg.pool(paths.model)
    manifest = read_manifest(paths.rollouts) if built else None
    fingerprints = {m.name: m.info.fingerprint for m in members}  # as policies_record writes them
    reasons = stale_reasons(manifest, params_hash(cfg), {"prompts": digest_path(paths.prompts)}, fingerprints)
    if not reasons:
        return on_disk(paths)
    prompts = read_rows(paths.prompts, PROMPT_V1)
    rows, pending = predicted_rollouts(prompts, members, cfg.sampling(), paths.rollouts_cache)
    note = (
        f"planned against the {len(rows)} rollouts the rollouts stage will write ({len(prompts)} prompts x "
        f"{len(members)} {'policies' if len(members) > 1 else 'policy'} x n={cfg.n}), not {paths.rollouts}: "
        f"{'; '.join(reasons)}"
    )
    if pending:
        note += (
            f". {len(pending)} of them are not sampled yet: each counts as judged, at "
            f"max_new_tokens={cfg.max_new_tokens} tokens, and as the longest step search (an upper bound)"
        )
    return Rollouts(rows, policies_record(members), frozenset(pending), note, max_new_tokens=cfg.max_new_tokens)


def dag_stages() -> list[str]:
    """Every stage as dvc.yaml names it, in DAG order."""
    return stage_names(read_params())


def plan_stage(
    stage: str, paths: Paths, prices: Prices, seen: set[str], rollouts: Rollouts | None = None
) -> StagePlan:
    """`seen`: what the stages planned before this one will send (they share the caches, in DAG order);
    `rollouts`: what the label and steps stages will read (default: `rollouts_to_plan`)."""
    kind, _, name = stage.partition("@")
    if stage == "rollouts":
        from rewardmill.pipelines.rollouts import STAGE, RolloutsConfig

        plan = plan_rollouts_stage(paths, prices, load_section(RolloutsConfig, STAGE))
        note = prompts_note(paths)
        if note:
            plan.notes.append(note)
        return plan
    if kind == "rubrics" and name:
        return plan_rubrics_stage(name, paths, prices, seen=seen, rollouts=rollouts)
    if kind == "label" and name:
        return plan_label_stage(name, paths, prices, seen=seen, rollouts=rollouts or rollouts_to_plan(paths))
    if kind == "steps" and name:
        return plan_steps_stage(name, paths, prices, seen=seen, rollouts=rollouts or rollouts_to_plan(paths))
    if stage in NO_CALLS:
        plan = StagePlan(stage, "-")
        plan.notes.append("computes in-process; no model calls to plan")
        return plan
    raise ValueError(f"unknown stage {stage!r}; stages: {dag_stages()}")


def render(plans: list[StagePlan]) -> str:
    """A fixed-width table, then each stage's notes and the totals."""
    head = f"{'stage':24s} {'rows':>7s} {'cached':>7s} {'requests':>9s} {'cached':>7s} {'tokens in':>10s} "
    head += f"{'out (max)':>10s} {'USD':>9s}"
    lines = [head, "-" * len(head)]
    quiet = [p.stage for p in plans if p.stage in NO_CALLS]
    plans = [p for p in plans if p.stage not in NO_CALLS]
    for p in plans:
        bound = "<=" if p.bound else ""
        cost = f"{p.send.cost:.4f}" + ("?" if p.send.unpriced else "")
        lines.append(
            f"{p.stage:24s} {p.rows:7d} {p.rows_cached:7d} {bound + str(p.send.requests):>9s} {p.cached:7d} "
            f"{p.send.tokens_in:10d} {p.send.tokens_out:10d} {cost:>9s}"
        )
    total = sum(p.send.cost for p in plans)
    lines.append(f"{'total':24s} {'':7s} {'':7s} {sum(p.send.requests for p in plans):9d} "
                 f"{sum(p.cached for p in plans):7d} {sum(p.send.tokens_in for p in plans):10d} "
                 f"{sum(p.send.tokens_out for p in plans):10d} {total:9.4f}")  # fmt: skip
    if quiet:
        lines.append(f"  {', '.join(quiet)}: compute in-process, no model calls to plan")
    for p in plans:
        for note in p.notes:
            lines.append(f"  {p.stage}: {note}")
        if p.send.unpriced:
            lines.append(
                f"  {p.stage}: no price for {sorted(p.send.unpriced)} (params prices.models): cost not counted"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="rewardmill plan", description=__doc__.split("\n\n")[1])
    parser.add_argument("--stage", action="append", help="a stage as dvc.yaml names it (repeatable); default: all")
    parser.add_argument("--json", action="store_true", help="print one JSON object per stage, in a list")
    parser.add_argument("--prompts", default="data/prompts")
    parser.add_argument("--rollouts", default="data/rollouts")
    parser.add_argument("--model", default="models/policy")
    parser.add_argument("--rubrics", default="data/rubrics")
    parser.add_argument("--datasets", default="data/datasets", help="assemble's output (params targets: the rates)")
    parser.add_argument("--cache-root", default=None, help="default: params cache.root")
    args = parser.parse_args(argv)
    paths = plan_paths(
        args.cache_root, prompts=args.prompts, rollouts=args.rollouts, model=args.model, rubrics=args.rubrics
    )
    prices = load_prices()
    stages = args.stage or dag_stages()
    seen: set[str] = set()
    downstream = any(s.partition("@")[0] in ("rubrics", "label", "steps") for s in stages)
    rollouts = rollouts_to_plan(paths) if downstream else None  # once: every label and steps stage reads the same
    plans = [plan_stage(stage, paths, prices, seen, rollouts) for stage in stages]
    parts = whole_run(args, paths, prices) if not args.stage else []
    if args.json:
        json.dump([p.summary() for p in plans] + [part.summary() for part in parts], sys.stdout, indent=2)
        print()
    else:
        print(render(plans))
        for part in parts:
            print("\n".join(part.render()))


def whole_run(args, paths: Paths, prices: Prices) -> list:
    """The parts of a plan of the whole DAG beyond its stages: the rounds params `targets` ask for
    (transforms/targets/plan.py) and the tokens and money per accepted row of each dataset config on disk. Both
    price a prompt by the calling stages' plan without caches (what it costs the first time), per prompt on disk."""
    params = read_params()
    targets = from_dict(TargetsConfig, params.get("targets") or {}, "targets")
    built = [c for c in DATASET_CONFIGS if storage.exists(storage.join(args.datasets, c, MANIFEST))]
    if not targets.wanted and not built:
        return []
    sources = list(params["prompts"]["sources"])
    full, prompts = without_caches(args, prices) if storage.exists(paths.prompts) else ({}, 0)
    parts = []
    ratio = 1.0
    if targets.wanted:
        total = Spend()
        for spend in full.values():
            total.add(spend)
        plan = plan_targets(targets, sources, paths.prompts, args.datasets, total, prompts)
        parts.append(plan)
        ratio = plan.prompts_ratio
    if built and prompts:
        growable = {raw["name"] for i, raw in enumerate(sources) if source_sizes(raw, f"prompts.sources[{i}]")}
        graded = frozenset(filter(None, (rubric_set(n, p) for n, p in labelers(params).items())))
        parts.append(plan_row_costs(full, observe(paths.prompts, args.datasets, built), growable, ratio, graded))
    return parts


def labelers(params: dict) -> dict[str, LabelerParams]:
    return {name: load_section(LabelerParams, "labelers", key=name) for name in params.get("labelers") or {}}


def without_caches(args, prices: Prices) -> tuple[dict[str, Spend], int]:
    """({stage: what it sends for the prompts on disk with no cache}, the prompts on disk)."""
    prompts = sum(count_columns(args.prompts, ["prompt_id"], "prompts").values())
    full = {}
    with tempfile.TemporaryDirectory() as empty:
        bare = plan_paths(empty, prompts=args.prompts, rollouts=args.rollouts, model=args.model, rubrics=args.rubrics)
        rollouts = rollouts_to_plan(bare)
        for stage in dag_stages():
            if stage not in NO_CALLS:
                full[stage] = plan_stage(stage, bare, prices, set(), rollouts).send
    return full, prompts


if __name__ == "__main__":
    main()
