"""Stage `label@NAME`: run one labeler from params `labelers.NAME` over every rollout (data/labels/NAME/).

With `--metrics`, also writes the stage's DVC metrics (metrics/labels/NAME.json): rows, rejects and verdicts,
mean score and confidence, the labeler's own dataset statistics (`summarize`: swap consistency of a pairwise
judge, a panel's agreement, ...) and this run's judge calls and tokens (Beam counters; cache hits included).

A judge labeler is first probed (transforms/judges/probes.py): fixed attack completions (master keys, empty symbols,
special-token and prompt injections) on `probe_prompts` of the run's prompts. Its false-positive rate goes in the
metrics (`probes`) and the manifest; the assemble stage refuses a judge above `max_probe_fpr` as a gate or an
override (pipelines/assemble.py check_judge_roles).

A judge call that still fails after its retries rejects its rollout (`judge_call_failed`). When more than
`max_failed_calls` of the rollouts the labeler took on are lost that way, the stage fails (`FailedCallsError`: one
line, exit status 2) and renames nothing into place, so DVC records no stage that silently lost its rows; the calls
that succeeded are in the call and label caches, and a rerun sends only the rest.
"""

import argparse
from dataclasses import dataclass
from typing import Any

import apache_beam as beam
import polars as pl
import pyarrow as pa

from rewardmill.schemas import LABEL_V1, PROMPT_V1, ROLLOUT_V2, ROLLOUT_V3, RUBRIC_V1
from rewardmill.schemas.common import schema_id
from rewardmill.schemas.rubric import ALL_PROMPTS
from rewardmill.transforms.batch.client import BatchPending
from rewardmill.transforms.batch.rounds import batch_backends, batch_pass
from rewardmill.transforms.config import load_section
from rewardmill.transforms.errors import UserError
from rewardmill.transforms.io import storage
from rewardmill.transforms.io.json_file import WriteJson, pop_json
from rewardmill.transforms.io.parquet import ReadStageOutput, WriteSortedParquet, read_rows
from rewardmill.transforms.judges import probes
from rewardmill.transforms.labelers.base import uses_groups
from rewardmill.transforms.labelers.beam import (
    NOT_APPLICABLE,
    REJECTED,
    USAGE_NAMESPACE,
    LabelAll,
    LabelRollouts,
)
from rewardmill.transforms.labelers.contract import GENERATED_RUBRIC, PROMPT_ONLY_COLUMNS, declared_tasks
from rewardmill.transforms.labelers.judge_base import JUDGE_CALL_FAILED, JudgeLabeler
from rewardmill.transforms.labelers.normalize import normalize_output
from rewardmill.transforms.labelers.params import LabelerParams, resolve, rubric_set
from rewardmill.transforms.labelers.stats import label_stats
from rewardmill.transforms.planning.label_plan import label_spend, plan_label_stage
from rewardmill.transforms.planning.stages import load_prices, plan_paths
from rewardmill.transforms.rubrics.record import rules_record
from rewardmill.transforms.stage.budget import StageBudget
from rewardmill.transforms.stage.conservation import ConservationError, id_frame, labeled_or_rejected, reconcile
from rewardmill.transforms.stage.outputs import (
    count_rejects,
    count_rows,
    manifest_or_none,
    read_manifest,
    write_rejects,
)
from rewardmill.transforms.stage.runner import (
    absolute_args,
    cache_arg,
    counter_totals,
    load_beam_config,
    setup_logging,
)
from rewardmill.transforms.stage.skeleton import ManifestSpec, run_stage

NOT_APPLICABLE_FILE = "_not_applicable.json"


class FailedCallsError(UserError):
    """More of a label stage's rollouts lost their judge call than its `max_failed_calls` allows."""


def rollouts_schema(rollouts_dir: str) -> pa.Schema:
    """What the stage reads of the rollouts: all of ROLLOUT_V3 from v3 rollouts (trajectory labelers read `turns` and
    the environment's reward; a trace cut off before its answer is labeled with no credit, by no labeler:
    transforms/labelers/beam.py), else ROLLOUT_V2."""
    try:
        written = read_manifest(rollouts_dir).get("schema")
    except FileNotFoundError:  # rollouts made by hand (a file, a test) have no manifest: read as v2
        written = None
    if written == schema_id(ROLLOUT_V3):
        return ROLLOUT_V3
    return ROLLOUT_V2


def build(
    p,
    name: str,
    params: LabelerParams,
    rollouts_dir: str,
    out_dir: str,
    cache_dir: str | None = None,
    flush_every: int = 64,
    total: int | None = None,
    over_budget: frozenset[str] = frozenset(),
    prompts_dir: str | None = None,
    rubrics_dir: str | None = None,
) -> None:
    cls, config = resolve(name, params)
    dofn = LabelRollouts(cls, config, name, cache_dir, flush_every, total, tasks=params.tasks)
    if over_budget:
        dofn.over_budget(over_budget, f"params labelers.{name}.budget ({params.budget.describe()})")
    read = ReadStageOutput(rollouts_dir, rollouts_schema(rollouts_dir))
    rows = p | "Read rollouts" >> read
    if prompts_dir is not None:  # a labeler that reads what only the prompts keep (their metadata)
        metadata = (
            p
            | "Read prompts" >> ReadStageOutput(prompts_dir, PROMPT_V1)
            | "Prompt metadata" >> beam.Map(lambda r: (r["prompt_id"], r["metadata"]))
        )
        rows = rows | "Join prompt metadata" >> beam.Map(with_metadata, beam.pvalue.AsDict(metadata))
    if rubrics_dir is not None:  # a labeler that grades against a generated rubric set
        rubrics = (
            p
            | "Read rubrics" >> ReadStageOutput(rubrics_dir, RUBRIC_V1)
            | "Rubric criteria" >> beam.Map(lambda r: (r["prompt_id"], r["criteria"]))
        )
        rows = rows | "Join rubrics" >> beam.Map(with_rubric, beam.pvalue.AsDict(rubrics))
    labeled = rows | f"Label {name}" >> LabelAll(dofn)
    _ = labeled.labels | "Write labels" >> WriteSortedParquet(
        out_dir, LABEL_V1, sort_key=lambda r: f"{r['rollout_id']}\x00{r['aspect']}", num_shards=params.num_shards
    )
    write_rejects(labeled[REJECTED], out_dir)
    # Rows of tasks this labeler does not handle are neither labels nor rejects: count them by task.
    _ = (
        labeled[NOT_APPLICABLE]
        | "Task of routed rows" >> beam.Map(lambda item: item[0] or "unknown")
        | "Count by task" >> beam.combiners.Count.PerElement()
        | "All counts" >> beam.combiners.ToDict()
        | "Write counts" >> beam.ParDo(WriteJson(storage.join(out_dir, NOT_APPLICABLE_FILE)))
    )


def with_metadata(row: dict[str, Any], metadata: dict[str, str | None]) -> dict[str, Any]:
    """The rollout with its prompt's metadata (a new dict: the row handed in is not changed)."""
    return {**row, "metadata": metadata.get(row["prompt_id"])}


def with_rubric(row: dict[str, Any], rubrics: dict[str, list]) -> dict[str, Any]:
    """The rollout with its prompt's generated rubric, or a rule set's (ALL_PROMPTS); None: the stage wrote neither."""
    return {**row, GENERATED_RUBRIC: rubrics.get(row["prompt_id"], rubrics.get(ALL_PROMPTS))}


def rubrics_needed(name: str, params: LabelerParams, rubrics: str | None) -> str | None:
    """The generated rubric set's folder when the labeler grades against one (None otherwise), or a clear error."""
    chosen = rubric_set(name, params)
    if chosen is None:
        return None
    if rubrics is None:
        raise UserError(
            f"labeler {name!r} grades against rubric set {chosen!r}: run the stage with --rubrics data/rubrics "
            "(dvc.yaml's label stage passes it)"
        )
    folder = storage.join(rubrics, chosen)
    storage.check_readable(folder, f"rubric set {chosen!r} (stage rubrics@{chosen})")
    return folder


def prompts_needed(cls, prompts: str | None, name: str) -> str | None:
    """--prompts when the labeler reads a prompt-only column (None otherwise), or a clear error when it is missing."""
    wanted = sorted(set(cls.reads) & set(PROMPT_ONLY_COLUMNS))
    if not wanted:
        return None
    if prompts is None:
        raise UserError(
            f"labeler {name!r} reads the prompts' {wanted}: run the stage with --prompts data/prompts (dvc.yaml's "
            "label stage passes it)"
        )
    storage.check_readable(prompts, "prompts")
    return prompts


def check_not_all_errors(stage: str, out_dir: str) -> None:
    """A labeler that scored nothing and raised on some rows (a missing helper, a broken environment: every row it
    tried) fails the stage instead of handing assemble a column of errors and abstentions."""
    labels = id_frame(out_dir, ["score", "verdict", "rationale"])
    errors = labels.filter(pl.col("verdict") == "error")
    if errors.height and labels["score"].is_null().all():
        raise ConservationError(
            f"{stage}: no label has a score and {errors.height} of {labels.height} are errors; nothing was written. "
            f"First: {errors['rationale'][0]}"
        )


def check_conservation(stage: str, out_dir: str, rollouts: int, not_applicable: dict[str, int]) -> None:
    """Every rollout has labels, a reject, or a task this labeler does not handle."""
    labeled, rejected = labeled_or_rejected(out_dir)
    reconcile(
        stage,
        inputs=rollouts,
        outputs=labeled,
        rejects=rejected,
        not_applicable=sum(not_applicable.values()),
        unit="rollouts",
    )


def check_failed_calls(stage: str, name: str, limit: float, failed: int, labeled: int, usage: dict[str, int]) -> None:
    """Fail when `failed` of the `failed + labeled` rollouts the labeler took on lost their judge call, a share above
    `limit`. The message gives the counts, this run's calls (`usage`: Beam counters, {} when the runner keeps none)
    and what to do."""
    taken = failed + labeled
    if not failed or failed / taken <= limit:
        return
    calls = ", ".join(f"{key} {usage[key]}" for key in ("requests", "retries", "failures") if key in usage)
    if "concurrency_limit" in usage:
        lowered = usage.get("concurrency_decreases", 0)  # a counter that never moved is not reported
        calls += f", concurrency limit at the end {usage['concurrency_limit']} (lowered {lowered}x)"
    raise FailedCallsError(
        f"{stage}: {failed} of {taken} rollouts ({failed / taken:.0%}) lost their judge call after its retries "
        f"({JUDGE_CALL_FAILED}{'; ' + calls if calls else ''}), above labelers.{name}.max_failed_calls {limit}; "
        "the stage's output was not written, and the calls that succeeded are cached, so a rerun sends only the "
        "rest. Check that the judge server is up and not overloaded (its log), lower the backend's max_concurrency, "
        "raise its request_timeout, or raise max_failed_calls knowingly"
    )


def probe(name: str, params: LabelerParams, cls, config, rollouts_dir: str, cache_dir: str | None) -> dict | None:
    """The judge's attack-probe report (None for a labeler that is no judge, or probe_prompts 0). The assemble stage
    refuses a judge above max_probe_fpr as a gate or an override (it reads this report from the manifest), so an
    experiment on assemble's params reruns assemble, not the label stages."""
    if not issubclass(cls, JudgeLabeler) or params.probe_prompts <= 0:
        return None
    labeler = cls(config)
    tasks = params.tasks if params.tasks is not None else declared_tasks(labeler)  # as LabelRollouts routes
    report = probes.probe_judge(
        labeler,
        rollouts_dir,
        params.probe_prompts,
        tasks=tasks,
        cache_dir=cache_dir,
        grouped=uses_groups(cls, config),
        max_fpr=params.max_probe_fpr,
    )
    return report


@dataclass(frozen=True)
class Checked:
    """What the label stage reads from its finished folder, before the manifest."""

    not_applicable: dict[str, int]  # rows of tasks the labeler does not handle, by task (a side file, removed)
    usage: dict[str, int]  # this run's judge calls and tokens (Beam counters; {} when the runner keeps none)
    stats: dict[str, Any]  # label_stats: the metrics, and the labeler's own summary for the manifest


def check_output(stage: str, name: str, params: LabelerParams, cls, config, total: int, tmp: str, result) -> Checked:
    """The finished labels made whole-run (normalize_run), then checked: conservation, failed judge calls, not all
    errors."""
    not_applicable = dict(sorted((pop_json(storage.join(tmp, NOT_APPLICABLE_FILE)) or {}).items()))
    normalize_output(tmp, cls, config)  # scores over the whole run (reward models), before anything reads them
    check_conservation(stage, tmp, total, not_applicable)
    usage = counter_totals(result, USAGE_NAMESPACE)
    failed = count_rejects(tmp).get(JUDGE_CALL_FAILED, 0)
    check_failed_calls(stage, name, params.max_failed_calls, failed, labeled_or_rejected(tmp)[0], usage)
    check_not_all_errors(stage, tmp)
    stats = label_stats(tmp, cls)  # the labeler's own summary (e.g. which sandbox ran code) goes in the manifest
    return Checked(not_applicable, usage, stats)


def rubric_facts(folder: str | None) -> dict[str, Any]:
    """The rubric set a labeler graded against, for its manifest: its name and rubric count, what the set cost (its
    stage's `spend`, which assemble counts once per dataset config), and for a learned rule set (autorule) the kept
    rules with their measured agreement (the card's table)."""
    if folder is None:
        return {}
    rows = read_rows(folder, RUBRIC_V1)
    rules = [rules_record(r) for r in rows if r["prompt_id"] == ALL_PROMPTS]
    facts = {"rubric_set": str(folder).rstrip("/").rsplit("/", 1)[-1], "rubrics": len(rows)}
    spend = (manifest_or_none(folder) or {}).get("spend")
    return facts | ({"rules": rules[0]} if rules else {}) | ({"rubric_set_spend": spend} if spend else {})


def send_batches(
    name: str, params: LabelerParams, config, rollouts: str, cache: str | None, rubrics: str | None, over: frozenset
) -> dict | None:
    """The batch pass (transforms/batch/rounds.py) over the rollouts the budget admitted, before the pipeline: its
    record, or None when no backend of the labeler batches."""
    if not batch_backends(config):
        return None
    paths = plan_paths(rollouts=rollouts, label_cache=cache, **({"rubrics": rubrics} if rubrics else {}))
    rows = [r for r in read_rows(rollouts, rollouts_schema(rollouts)) if r["prompt_id"] not in over]
    try:
        return batch_pass(name, params, config, paths, rows)
    except (BatchPending, ValueError) as exc:
        raise UserError(f"label@{name}: {exc}") from exc


def spent(name: str, params: LabelerParams, rollouts: str, cache: str | None, rubrics: str | None, over) -> dict:
    """The manifest's `spend`: what the labels rest on (transforms/planning/spent.py), over the admitted rollouts."""
    paths = plan_paths(rollouts=rollouts, label_cache=cache, **({"rubrics": rubrics} if rubrics else {}))
    rows = [r for r in read_rows(rollouts, rollouts_schema(rollouts)) if r["prompt_id"] not in over]
    return label_spend(name, params, paths, rows, load_prices())


def manifest_extra(
    params: LabelerParams,
    cls,
    checked: Checked,
    probed: dict | None,
    rubrics: dict,
    batched: dict | None,
    spend: dict,
) -> dict[str, Any]:
    return (
        {
            "labeler": params.labeler,
            "labeler_version": cls.version,
            "not_applicable": checked.not_applicable,
            "spend": spend,
        }
        | ({"summary": checked.stats["labeler"]} if "labeler" in checked.stats else {})
        | ({"probes": probed} if probed else {})
        | rubrics
        | ({"batch": batched} if batched else {})
    )


def metrics_record(checked: Checked, manifest: dict, probed: dict | None) -> dict[str, Any]:
    probed_metrics = {"probes": probes.summary(probed)} if probed else {}
    return (
        {
            **checked.stats,
            "not_applicable": checked.not_applicable,
            "rejects": manifest["rejects"],
            "usage": checked.usage,
            "spend": manifest["spend"],
        }
        | probed_metrics
        | ({"batch": manifest["batch"]} if "batch" in manifest else {})
    )


def admission(name: str, params: LabelerParams, rollouts_dir: str, cache_dir: str | None) -> StageBudget | None:
    """Which prompts fit under the stage's budget (None: no budget), from its plan over the caches' state."""
    if not params.budget.limited:
        return None
    paths = plan_paths(rollouts=rollouts_dir, label_cache=None)  # cache-blind: the admission depends on inputs only
    plan = plan_label_stage(name, paths, load_prices(), params)
    return StageBudget.admit(f"labelers.{name}.budget", plan, params.budget)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name", help="the key under `labelers:` in params.yaml")
    parser.add_argument("--rollouts", default="data/rollouts", help="the rollouts folder to label")
    parser.add_argument("--out", default=None, help="default: data/labels/NAME")
    parser.add_argument("--cache", default=None, help="per-record label cache folder (kept across runs)")
    parser.add_argument("--cache-flush-every", type=int, default=64, help="labels per cache segment file")
    parser.add_argument("--metrics", default=None, help="write the stage's DVC metrics JSON here")
    parser.add_argument("--prompts", default=None, help="the prompts, for a labeler that reads their metadata")
    parser.add_argument("--rubrics", default=None, help="the generated rubric sets, for a labeler graded by one")
    args = absolute_args(parser.parse_args(argv), "rollouts", "out", "prompts", "rubrics")
    args.cache = cache_arg(args.cache)
    setup_logging()
    beam_cfg = load_beam_config()
    params = load_section(LabelerParams, "labelers", key=args.name)
    cls, config = resolve(args.name, params)  # fail on a bad labeler config before any work
    out = args.out or f"data/labels/{args.name}"
    storage.check_readable(args.rollouts, "rollouts")
    prompts = prompts_needed(cls, args.prompts, args.name)
    rubrics = rubrics_needed(args.name, params, args.rubrics)
    total = count_rows(args.rollouts)  # every one is accounted for (check_conservation)
    stage = f"label@{args.name}"
    budget = admission(args.name, params, args.rollouts, args.cache)
    over = budget.over if budget else frozenset()
    probed = probe(args.name, params, cls, config, args.rollouts, args.cache)  # fails fast on a gate that is fooled
    batched = send_batches(args.name, params, config, args.rollouts, args.cache, args.rubrics, over)
    run_stage(
        stage,
        out,
        beam_cfg,
        lambda p, tmp: build(
            p, args.name, params, args.rollouts, tmp, args.cache, args.cache_flush_every, total, over, prompts, rubrics
        ),
        ManifestSpec(
            LABEL_V1,
            params,
            {"rollouts": args.rollouts}
            | ({"prompts": prompts} if prompts else {})
            | ({"rubrics": rubrics} if rubrics else {}),
            extra=lambda done: manifest_extra(
                params,
                cls,
                done.checked,
                probed,
                rubric_facts(rubrics),
                batched,
                spent(args.name, params, args.rollouts, args.cache, args.rubrics, over),
            ),
        ),
        check=lambda tmp, result: check_output(stage, args.name, params, cls, config, total, tmp, result),
        metrics=args.metrics,
        metrics_record=lambda done, manifest: metrics_record(done.checked, manifest, probed),
        budget=budget,
    )


if __name__ == "__main__":
    main()
