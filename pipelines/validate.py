"""Stage `validate`: Great Expectations suites on rollouts and every dataset; JSON reports, Data Docs, DVC metrics
and plots.

One Beam element per target: data/rollouts, each data/datasets/<name>/ (pairs, rl, sft, prm: whatever assemble
wrote), data/datasets/_rewards (report "rewards") and the cross-config split check over data/datasets (report
"splits": no prompt in both train and test). The DoFn runs the suite for the folder's manifest schema and writes
reports/<name>.json. The driver then builds the Data Docs site in reports/data_docs/ from every suite and result,
writes metrics/validate.json (with the step labels' statistics and agreement when --steps holds any) and the plot
data in --plots, and exits non-zero, naming the dataset and the failed expectations, when any suite failed.
With `validate.view` it also writes reports/view.html: one static, offline page to look at the datasets, their
rejects and the labels behind each pair (the page `rewardmill view data/datasets` writes; transforms/view).
It also measures every configured rule labeler on the gold packs in --packs (`rewardmill audit`: precision, recall,
abstain rate, hack pass rate with intervals; judges only with `validate.audit_judges`) into `labeler_audit` of the
metrics, and fails when one's precision is below `validate.min_labeler_precision`, naming it.
"""

import argparse
import json
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from rewardmill.pipelines.audit import audit, for_metrics, precision_check
from rewardmill.schemas import PRM_V1, REWARD_V1, current_ids
from rewardmill.schemas.common import schema_id
from rewardmill.transforms.config import cache_root, load_section, read_params
from rewardmill.transforms.evaluation.gold_packs import PACKS_DIR, GoldPackError
from rewardmill.transforms.io import timings
from rewardmill.transforms.stage.outputs import MANIFEST, atomic_output, read_manifest, write_json_atomic
from rewardmill.transforms.stage.runner import load_beam_config, run_pipeline, setup_logging
from rewardmill.transforms.validation.dataset_metrics import kept_rewards
from rewardmill.transforms.validation.folders import REWARDS, read_columns, subfolders
from rewardmill.transforms.validation.label_qa import label_qa, render_html
from rewardmill.transforms.validation.label_qa import summary as qa_summary
from rewardmill.transforms.validation.metrics import compute_metrics
from rewardmill.transforms.validation.plots import write_plots
from rewardmill.transforms.validation.suites import SPLIT_CHECK
from rewardmill.transforms.view.model import DEFAULT_MAX_ROWS
from rewardmill.transforms.view.page import view_page

STAGE = "validate"
PAIR_SCHEMAS = current_ids("pair")  # pair_v2, and pair_v3 from trajectories
DATA_DOCS = "data_docs"  # the Data Docs site, under --reports
LABEL_QA_JSON, LABEL_QA_HTML = "label_qa.json", "label_qa.html"  # where the labelers disagree (label_qa.py)
VIEW_HTML = "view.html"  # the dataset viewer (validate.view)
DOCS_INPUT = "_docs"  # each target's suite and result JSON, under --reports while the stage runs (then removed)

log = logging.getLogger("rewardmill")


@dataclass(frozen=True)
class ValidateConfig:
    """params `validate`."""

    min_pairs: int = 1  # fewer pairs than this in a pair dataset fails the stage (0 = an empty dataset passes)
    min_rl_rows: int = 1  # fewer RL prompts than this fails the stage
    min_sft_rows: int = 0  # fewer SFT rows than this fails the stage
    # The evaluate stage's reward model must score chosen above rejected on at least this share of the held-out
    # pairs (metrics/evaluate.json); null = not checked
    min_rm_accuracy: float | None = None
    # Every audited labeler's precision on the gold packs (of the rows it calls correct, the share that are) must
    # reach this; null = not checked
    min_labeler_precision: float | None = 0.9
    # Also audit model-based labelers (judges, reward models): a model call per gold row, minutes on a CPU
    audit_judges: bool = False
    # At most this many gold rows per model-based labeler (a fixed sample, chosen by row id hash); null = all
    audit_judge_rows: int | None = 48
    view: bool = True  # write reports/view.html, the offline page to look at the datasets (rewardmill view)
    view_max_rows: int = DEFAULT_MAX_ROWS  # rows per dataset on that page (the first in id order); the rest counted

    def __post_init__(self):
        for name in ("min_pairs", "min_rl_rows", "min_sft_rows", "view_max_rows"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        for name in ("min_rm_accuracy", "min_labeler_precision"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        if self.audit_judge_rows is not None and self.audit_judge_rows < 1:
            raise ValueError(f"audit_judge_rows must be >= 1 or null, got {self.audit_judge_rows}")

    def min_rows(self) -> dict[str, int]:
        """Schema id -> the fewest rows that pass. An empty PRM dataset passes: tiny or strict steps settings can
        reject every rollout (assemble counts why, and metrics prm.<name>.rows shows it); so do empty rewards and
        split checks (their rows follow the rollouts and datasets, which have their own floors). Others: 1."""
        return {
            **dict.fromkeys(PAIR_SCHEMAS, self.min_pairs),
            **dict.fromkeys(current_ids("rl"), self.min_rl_rows),
            **dict.fromkeys(current_ids("sft"), self.min_sft_rows),
            schema_id(PRM_V1): 0,
            schema_id(REWARD_V1): 0,
            SPLIT_CHECK: 0,
        }


@dataclass(frozen=True)
class Target:
    """One folder to validate: report name, path, and the schema id its manifest records."""

    name: str
    directory: str
    schema: str | None


class ValidateDataset(beam.DoFn):
    """Target -> (report, docs): the report dict (dataset, schema, rows, success, statistics, expectations) and the
    suite and result JSON for Data Docs (None when the folder could not be validated); see validation.runner."""

    def __init__(self, min_rows: dict[str, int]):
        self.min_rows = min_rows  # schema id -> floor; unlisted schemas: 1

    def process(self, target: Target):
        from rewardmill.transforms.validation.runner import validate_target  # imports Great Expectations lazily

        min_rows = self.min_rows.get(target.schema or "", 1)
        report, docs = validate_target(target.directory, target.schema, dataset=target.name, min_rows=min_rows)
        beam.metrics.Metrics.counter(STAGE, "passed" if report["success"] else "failed").inc()
        yield report, docs


class WriteReport(beam.DoFn):
    """(report, docs) -> <reports>/<dataset>.json (sorted keys, no run ids or timestamps: same data, same bytes) and
    <reports>/_docs/<dataset>.json, which the driver turns into the Data Docs site."""

    def __init__(self, directory: str):
        self.directory = directory

    def process(self, element: tuple[dict[str, Any], dict[str, Any] | None]):
        report, docs = element
        path = FileSystems.join(self.directory, f"{report['dataset']}.json")
        with FileSystems.create(path) as fh:
            fh.write(report_json(report).encode())
        if docs is not None:
            with FileSystems.create(FileSystems.join(self.directory, DOCS_INPUT, f"{report['dataset']}.json")) as fh:
                fh.write(json.dumps(docs, sort_keys=True).encode())
        yield path


def report_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def targets(rollouts: str, datasets: str) -> list[Target]:
    """Rollouts, every dataset folder, _rewards (when assemble wrote it) and the split check; a folder without a
    manifest fails here, before any work."""
    found = [Target("rollouts", rollouts, read_manifest(rollouts).get("schema"))]
    found += [Target(d.name, str(d), read_manifest(d).get("schema")) for d in subfolders(datasets)]
    rewards = Path(datasets) / REWARDS
    if rewards.is_dir():
        found.append(Target("rewards", str(rewards), read_manifest(rewards).get("schema")))
    found.append(Target("splits", datasets, SPLIT_CHECK))
    names = [t.name for t in found]
    if len(set(names)) != len(names):
        raise SystemExit(f"{STAGE}: report names collide: {names} (a dataset named rollouts, rewards or splits?)")
    if not any(t.schema in PAIR_SCHEMAS for t in found):
        raise SystemExit(f"{STAGE}: no pair dataset ({sorted(PAIR_SCHEMAS)}) under {datasets}; run assemble first")
    return found


def build(p, cfg: ValidateConfig, found: list[Target], reports_dir: str) -> None:
    _ = (
        p
        | "Folders" >> beam.Create(found)
        | "Validate" >> beam.ParDo(ValidateDataset(cfg.min_rows()))
        | "Write reports" >> beam.ParDo(WriteReport(reports_dir))
    )


def build_data_docs(reports_dir: Path) -> None:
    """reports/_docs/*.json -> the Data Docs site in reports/data_docs/; the inputs are removed afterwards."""
    from rewardmill.transforms.validation.data_docs import build_site  # imports Great Expectations lazily

    inputs = reports_dir / DOCS_INPUT
    docs = [json.loads(p.read_text()) for p in sorted(inputs.glob("*.json"))] if inputs.is_dir() else []
    with timings.timed("validation"):
        build_site(docs, reports_dir / DATA_DOCS)
    shutil.rmtree(inputs, ignore_errors=True)


def plot_inputs(datasets: str) -> tuple[list[dict[str, Any]], list[float]]:
    """The kept rollouts' (rollout_id, reward, n_tokens, correct) from _rewards (none when it is missing) and
    every pair dataset's margins."""
    rewards = Path(datasets) / REWARDS
    points = kept_rewards(rewards) if rewards.is_dir() else []
    pairs = [d for d in subfolders(datasets) if read_manifest(d).get("schema") in PAIR_SCHEMAS]
    margins = [m for d in pairs for m in read_columns(d, ["margin"]).column("margin").to_pylist() if m is not None]
    return points, margins


def failure_message(reports: list[dict[str, Any]], reports_dir: str) -> str | None:
    """None when every report passed; else one block per failed dataset naming its failed expectations."""
    from rewardmill.transforms.validation.runner import describe_failures

    blocks = []
    for r in reports:
        if r["success"]:
            continue
        lines = describe_failures(r)
        what = "could not be validated" if r.get("error") else f"failed {len(lines)} expectation(s)"
        where = Path(reports_dir) / f"{r['dataset']}.json"
        blocks.append(f"dataset '{r['dataset']}' {what} (see {where}):\n  " + "\n  ".join(lines))
    docs = Path(reports_dir) / DATA_DOCS / "index.html"
    return f"{STAGE}: validation failed (Data Docs: {docs})\n" + "\n".join(blocks) if blocks else None


def rm_accuracy_check(minimum: float | None, evaluation: str | None) -> dict[str, Any] | None:
    """{min, accuracy, success, reason} of the evaluate stage's held-out reward-model accuracy against `minimum`;
    None when no minimum is set. Missing or switched-off evaluation fails, saying what to enable."""
    if minimum is None:
        return None
    check: dict[str, Any] = {"min": minimum, "accuracy": None, "success": False}
    if not evaluation or not Path(evaluation).exists():
        return {**check, "reason": f"no evaluation at {evaluation}: run the evaluate stage (dvc repro evaluate)"}
    metrics = json.loads(Path(evaluation).read_text())
    if not metrics.get("enabled"):
        return {**check, "reason": "evaluate.enabled is false: enable it or set validate.min_rm_accuracy: null"}
    reward_model = metrics.get("reward_model") or {}
    held_out = ((reward_model.get("test") or {}).get("all")) or {}
    if held_out.get("accuracy") is None:
        why = reward_model.get("error") or f"no held-out pairs in the test split of {metrics.get('dataset')}"
        return {**check, "reason": f"no held-out accuracy: {why}"}
    accuracy = held_out["accuracy"]
    interval = f"{held_out['ci_low']}..{held_out['ci_high']} over {held_out['n']} pairs"
    if accuracy < minimum:
        reason = f"reward model held-out pair accuracy {accuracy} ({interval}) is below validate.min_rm_accuracy"
        return {**check, "accuracy": accuracy, "reason": f"{reason} {minimum}"}
    return {**check, "accuracy": accuracy, "success": True, "reason": f"{accuracy} ({interval}) >= {minimum}"}


def labeler_audit(cfg: ValidateConfig, packs: str | None) -> dict[str, Any]:
    """`rewardmill audit` of params `labelers` on the gold packs (judges when cfg.audit_judges), with the precision
    check against cfg.min_labeler_precision under `check` (None when off): rule verifiers, and judges that gate or
    override (params assemble.aggregate), must reach it; a judge that only ranks is measured and shown."""
    params = read_params()
    aggregate = (params.get("assemble") or {}).get("aggregate") or {}
    deciders = frozenset([*(aggregate.get("gates") or ()), *(aggregate.get("overrides") or {})])
    try:
        report = audit(
            params.get("labelers") or {},
            Path(packs) if packs else PACKS_DIR,
            judges=cfg.audit_judges,
            cache_dir=f"{cache_root(params)}/labels",  # the label stages' judge calls: a rerun costs nothing
            judge_rows=cfg.audit_judge_rows,
        )
    except GoldPackError as exc:
        raise SystemExit(f"{STAGE}: {exc}") from exc
    return {**for_metrics(report), "check": precision_check(report, cfg.min_labeler_precision, deciders)}


def reward_weights(rewards: Path) -> dict[str, dict]:
    """The weight each judge's scores got in the reward (assemble's `reward_weights`), for the metrics beside the
    label QA that explains it: labeler -> {weight, source, kappa}; {} without a rewards manifest recording them."""
    if not (rewards / MANIFEST).is_file():
        return {}
    record = read_manifest(rewards).get("reward_weights") or {}
    return {name: {k: w.get(k) for k in ("weight", "source", "kappa")} for name, w in sorted(record.items())}


def rubric_validation(rewards: Path) -> dict[str, dict]:
    """How well each generated rubric set reproduced the gates' preferences (assemble's `rubric_validation`), for the
    metrics: labeler -> {rubric_set, pairs, accuracy, agreement, mean_accuracy, flagged, dropped}; {} without one."""
    if not (rewards / MANIFEST).is_file():
        return {}
    record = (read_manifest(rewards).get("rubric_validation") or {}).get("labelers") or {}
    keys = ("rubric_set", "rubrics_validated", "pairs", "accuracy", "agreement", "mean_accuracy", "flagged", "dropped")
    return {name: {k: r.get(k) for k in keys} for name, r in sorted(record.items())}


def spend_per_row(datasets: Path) -> dict[str, dict]:
    """Tokens and dollars per accepted row of each dataset config (assemble's manifest `spend`), for the metrics:
    config -> {rows, tokens_per_row, usd_per_row, usd, by_stage: {stage: usd per row}}; a config without one: left
    out."""
    found = {}
    for folder in sorted(p for p in datasets.iterdir() if p.is_dir() and (p / MANIFEST).is_file()):
        spend = read_manifest(folder).get("spend")
        if spend:
            found[folder.name] = {
                "rows": spend["rows"],
                "tokens_per_row": spend["per_row"]["tokens"],
                "usd_per_row": spend["per_row"]["cost_usd"],
                "usd": spend["total"]["cost_usd"],
                "by_stage": {stage: per["cost_usd"] for stage, per in spend["per_row"]["by_stage"].items()},
            }
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompts", default="data/prompts", help="the prompts folder")
    parser.add_argument("--rollouts", default="data/rollouts", help="the rollouts folder")
    parser.add_argument("--labels", default="data/labels", help="folder holding one subfolder per labeler")
    parser.add_argument("--steps", default="data/steps", help="one subfolder per steps labeler; may be missing")
    parser.add_argument("--datasets", default="data/datasets", help="folder holding one subfolder per dataset")
    parser.add_argument(
        "--reports", default="reports", help="where the GX reports, Data Docs, label QA and view.html go"
    )
    parser.add_argument("--metrics", default="metrics/validate.json", help="the DVC metrics JSON to write")
    parser.add_argument("--plots", default="plots", help="folder for the DVC plot data (CSV)")
    parser.add_argument("--evaluation", default=None, help="the evaluate stage's metrics (validate.min_rm_accuracy)")
    parser.add_argument("--packs", default=None, help="the gold packs the labelers are audited on (default: shipped)")
    args = parser.parse_args(argv)
    setup_logging()
    cfg = load_section(ValidateConfig, STAGE)
    start = time.monotonic()
    log.info("%s: starting", STAGE)
    found = targets(args.rollouts, args.datasets)
    # also checks every input
    metrics = compute_metrics(args.prompts, args.rollouts, args.labels, args.datasets, steps=args.steps)

    audited = labeler_audit(cfg, args.packs)
    qa = label_qa(subfolders(args.labels), args.rollouts, Path(args.datasets) / REWARDS)
    metrics["label_qa"] = qa_summary(qa)
    metrics["reward_weights"] = reward_weights(Path(args.datasets) / REWARDS)
    if validated := rubric_validation(Path(args.datasets) / REWARDS):
        metrics["rubric_validation"] = validated
    if spent := spend_per_row(Path(args.datasets)):
        metrics["spend"] = spent
    with atomic_output(args.reports) as folder:  # local folders: DVC metrics and plots, and HTML pages
        tmp = Path(folder)
        run_pipeline(lambda p: build(p, cfg, found, str(tmp)), load_beam_config())
        reports = [json.loads((tmp / f"{t.name}.json").read_text()) for t in found]
        build_data_docs(tmp)
        (tmp / LABEL_QA_JSON).write_text(report_json(qa))
        (tmp / LABEL_QA_HTML).write_text(render_html(qa), encoding="utf-8")
        if cfg.view:
            page = view_page(args.datasets, labels=args.labels, max_rows=cfg.view_max_rows)
            (tmp / VIEW_HTML).write_text(page, encoding="utf-8")
    with atomic_output(args.plots) as folder:
        write_plots(Path(folder), *plot_inputs(args.datasets))
    for r in reports:
        stats = r.get("statistics") or {}
        log.info(
            "%s: %s (%s, %s rows): %s, %s of %s expectations failed",
            STAGE,
            r["dataset"],
            r["schema"],
            r["rows"],
            "passed" if r["success"] else "FAILED",
            stats.get("unsuccessful"),
            stats.get("evaluated"),
        )

    metrics["validation"] = {
        r["dataset"]: {"success": r["success"], "failed_expectations": (r.get("statistics") or {}).get("unsuccessful")}
        for r in reports
    }
    rm_check = rm_accuracy_check(cfg.min_rm_accuracy, args.evaluation)
    if rm_check is not None:
        metrics["rm_accuracy"] = rm_check
    metrics["labeler_audit"] = audited
    write_json_atomic(args.metrics, metrics)
    log.info(
        "%s: done in %.1fs: reports, Data Docs (%s) and label QA (%s) in %s, metrics in %s, plots in %s",
        STAGE,
        time.monotonic() - start,
        DATA_DOCS,
        LABEL_QA_HTML,
        args.reports,
        args.metrics,
        args.plots,
    )
    message = failure_message(reports, args.reports)
    if rm_check is not None and not rm_check["success"]:
        message = "\n".join(filter(None, [message, f"{STAGE}: {rm_check['reason']}"]))
    check = audited["check"]
    if check is not None and not check["success"]:
        message = "\n".join(filter(None, [message, *(f"{STAGE}: {failure}" for failure in check["failures"])]))
    if message:
        raise SystemExit(message)  # printed once on stderr; exit status 1


if __name__ == "__main__":
    main()
