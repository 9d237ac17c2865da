"""Stage `rubrics@NAME`: a generated rubric for each chosen prompt, from params `rubrics.NAME` (data/rubrics/NAME/).

The chosen prompts are those of `tasks` and `split`, the first `max_prompts` by prompt id (ids are hashes: a fixed
pseudo-random sample). Each gets a rubric (criteria with weights and kinds, RUBRIC_V1) or a reject with its reason
(transforms/rubrics/writer.py); never an empty rubric. A `rubric_judge` labeler with `rubrics: NAME` grades rollouts
against them. Writer calls are greedy and cached by the writer's fingerprint (the judges' call cache under --cache's
parent), the rank labeler's labels by the label stages' cache (--cache), so a killed stage resumes and writes the same
bytes, and a rank labeler that already ran as a label stage costs nothing here. The manifest's `spend` is what the
rubrics rest on (transforms/planning/rubrics_plan.py rubrics_spend); each label stage graded by the set copies it,
and assemble counts it once in each dataset config's cost per accepted row.
"""

import argparse
import json
import math

import apache_beam as beam

from rewardmill.schemas import PROMPT_V1, ROLLOUT_V2, RUBRIC_V1
from rewardmill.transforms.config import load_section
from rewardmill.transforms.io.parquet import ReadStageOutput, WriteSortedParquet, read_rows, stable_shard
from rewardmill.transforms.planning.rubrics_plan import rubrics_spend
from rewardmill.transforms.planning.stages import load_prices, plan_paths
from rewardmill.transforms.rubrics.beam import NAMESPACE, REJECTED, WriteRubrics, with_rollouts
from rewardmill.transforms.rubrics.params import RubricsParams
from rewardmill.transforms.rubrics.selection import chosen_prompts
from rewardmill.transforms.rubrics.stats import rubric_stats
from rewardmill.transforms.rubrics.writer import RubricWriter
from rewardmill.transforms.stage.conservation import ConservationError, labeled_or_rejected, reconcile
from rewardmill.transforms.stage.outputs import count_rejects, write_rejects
from rewardmill.transforms.stage.runner import (
    absolute_args,
    cache_arg,
    counter_totals,
    load_beam_config,
    setup_logging,
)
from rewardmill.transforms.stage.skeleton import Finished, ManifestSpec, run_stage


def build(p, writer: RubricWriter, prompts_dir: str, rollouts_dir: str | None, out_dir: str, chosen: list[str]):
    params = writer.params
    wanted = frozenset(chosen)
    prompts = (
        p
        | "Read prompts" >> ReadStageOutput(prompts_dir, PROMPT_V1)
        | "Chosen prompts" >> beam.Filter(lambda row: row["prompt_id"] in wanted)
        | "Key prompts" >> beam.Map(lambda row: (row["prompt_id"], row))
    )
    if rollouts_dir is not None:  # contrastive or refine: the prompt's rollouts, ranked by the rank labeler
        rollouts = (
            p
            | "Read rollouts" >> ReadStageOutput(rollouts_dir, ROLLOUT_V2)
            | "Their rollouts" >> beam.Filter(lambda row: row["prompt_id"] in wanted)
            | "Key rollouts" >> beam.Map(lambda row: (row["prompt_id"], row))
        )
    else:
        rollouts = p | "No rollouts" >> beam.Create([])
    # autorule learns one rule set from every chosen prompt's pair: one chunk
    n_chunks = 1 if params.mode == "autorule" else max(1, math.ceil(len(chosen) / params.chunk_size))
    written = (
        {"prompt": prompts, "rollouts": rollouts}
        | "Group" >> beam.CoGroupByKey()
        | "With rollouts" >> beam.Map(with_rollouts)
        | "Key by chunk" >> beam.Map(lambda item: (stable_shard(item[0]["prompt_id"], n_chunks), item))
        | "Chunks" >> beam.GroupByKey()
        | "Chunk in id order" >> beam.MapTuple(lambda _, items: sorted(items, key=lambda i: i[0]["prompt_id"]))
        | f"Write {writer.stage}"
        >> beam.ParDo(WriteRubrics(writer, total=len(chosen))).with_outputs(REJECTED, main="rubrics")
    )
    _ = written.rubrics | "Write rubrics" >> WriteSortedParquet(
        out_dir, RUBRIC_V1, sort_key=lambda r: r["prompt_id"], num_shards=params.num_shards
    )
    write_rejects(written[REJECTED], out_dir)


def check_conservation(stage: str, out_dir: str, chosen: int, autorule: bool = False) -> None:
    """Every chosen prompt has a rubric or a reject (autorule: gave its pair to the rule set, or a reject); a stage
    that wrote no rubric at all fails, saying why (its rejects are removed with the temp folder, so their reasons go
    in the message)."""
    written, rejected = labeled_or_rejected(out_dir, id_column="prompt_id")
    if autorule:  # one row for every prompt, naming the prompts whose pairs it learned from
        written = sum(len(json.loads(row["evidence"])["prompts"]) for row in read_rows(out_dir, RUBRIC_V1))
    try:
        reconcile(stage, inputs=chosen, outputs=written, rejects=rejected, unit="prompts", allow_empty=chosen == 0)
    except ConservationError as exc:
        reasons = ", ".join(f"{reason} {n}" for reason, n in sorted(count_rejects(out_dir).items()))
        raise ConservationError(f"{exc.args[0]}. Reject reasons: {reasons or 'none'}") from None


def metrics_record(done: Finished, manifest: dict) -> dict:
    return {
        **rubric_stats(done.tmp),
        "rejects": manifest["rejects"],
        "spend": manifest["spend"],
        "this_run": counter_totals(done.result, NAMESPACE),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name", help="the key under `rubrics:` in params.yaml")
    parser.add_argument("--prompts", default="data/prompts")
    parser.add_argument("--rollouts", default="data/rollouts", help="read in contrastive mode and for refine")
    parser.add_argument("--out", default=None, help="default: data/rubrics/NAME")
    parser.add_argument("--cache", default=None, help="the label stages' cache (labels; judge calls beside it)")
    parser.add_argument("--metrics", default=None, help="write the stage's DVC metrics JSON here")
    args = absolute_args(parser.parse_args(argv), "prompts", "rollouts", "out")
    args.cache = cache_arg(args.cache)
    setup_logging()
    beam_cfg = load_beam_config()
    params = load_section(RubricsParams, "rubrics", key=args.name)
    out = args.out or f"data/rubrics/{args.name}"
    stage = f"rubrics@{args.name}"
    chosen = chosen_prompts(args.prompts, params)
    writer = RubricWriter(args.name, params, args.cache)
    rollouts = args.rollouts if params.needs_ranking else None
    inputs = {"prompts": args.prompts, **({"rollouts": rollouts} if rollouts else {})}

    def spent() -> dict:  # what the rubrics rest on (transforms/planning/spent.py), once the run has cached them
        paths = plan_paths(prompts=args.prompts, rollouts=args.rollouts, label_cache=args.cache)
        return rubrics_spend(args.name, paths, load_prices())

    run_stage(
        stage,
        out,
        beam_cfg,
        lambda p, tmp: build(p, writer, args.prompts, rollouts, tmp, chosen),
        ManifestSpec(RUBRIC_V1, params, inputs, extra=lambda done: {"chosen_prompts": len(chosen), "spend": spent()}),
        check=lambda tmp, result: check_conservation(stage, tmp, len(chosen), params.mode == "autorule"),
        metrics=args.metrics,
        metrics_record=metrics_record,
    )


if __name__ == "__main__":
    main()
