"""`rewardmill audit`: each configured labeler's precision, recall, abstain rate and hack pass rate on the gold packs.

Measures every params `labelers:` entry (or the --labeler keys) with its params config on the gold pack rows for
it (transforms/evaluation/gold_packs.py says which rows), prints a table and, with --output, writes the JSON the
validate stage also records under `labeler_audit` in metrics/validate.json. Intervals are 95% Wilson intervals.

Model-based labelers (judges, reward models) call their model on every row they are measured on: they run unless
--skip-judges (their calls go through the judge's own call cache when its backend sets `cache_dir`). Labelers that
compare the rollouts of one prompt (pairwise judges, self-consistency) are reported as not measured: gold rows are
single completions.

    rewardmill audit                                  # every labeler in params.yaml
    rewardmill audit --labeler math_answer --output audit.json
    rewardmill audit --skip-judges --packs my/packs   # rule verifiers only, on other packs
"""

import argparse
import hashlib
import logging
import sys
from pathlib import Path
from typing import Any

from rewardmill.transforms.config import ConfigError, from_dict, read_params, to_plain
from rewardmill.transforms.evaluation import audit_cache
from rewardmill.transforms.evaluation.audit import measure_settled, share, text_table
from rewardmill.transforms.evaluation.gold_packs import PACKS_DIR, GoldPackError, GoldRow, load_packs, rows_for
from rewardmill.transforms.labelers import LABELERS, UnknownLabeler
from rewardmill.transforms.labelers.base import uses_groups
from rewardmill.transforms.labelers.cache import call_cache_dir
from rewardmill.transforms.labelers.contract import CallCachingLabeler, declared_tasks, has_hook, tear_down
from rewardmill.transforms.labelers.judge_base import JudgeLabeler
from rewardmill.transforms.labelers.params import LabelerParams, resolve
from rewardmill.transforms.labelers.reward_model import RewardModelScorer
from rewardmill.transforms.labelers.tiered import TieredVerifier, resolve_tiers
from rewardmill.transforms.stage.outputs import write_json_atomic
from rewardmill.transforms.stage.runner import setup_logging

log = logging.getLogger("rewardmill")
MODEL_BASED = (JudgeLabeler, RewardModelScorer)  # labelers that call a model for every row


def needs_model(cls, config) -> bool:
    """A judge or reward model, or tiers with one among them."""
    if issubclass(cls, TieredVerifier):
        return any(needs_model(inner, inner_config) for inner, inner_config in resolve_tiers(config))
    return issubclass(cls, MODEL_BASED)


def sample_rows(rows: list[GoldRow], n: int) -> list[GoldRow]:
    """`n` of `rows` chosen by the hash of their ids (the same rows whatever the packs' order), in their order."""
    keep = set(sorted(range(len(rows)), key=lambda i: hashlib.sha256(rows[i].id.encode()).hexdigest())[:n])
    return [row for i, row in enumerate(rows) if i in keep]


def audit_labeler(
    key: str,
    raw: Any,
    rows: list[GoldRow],
    judges: bool,
    confidence: float,
    cache_dir: str | None = None,
    judge_rows: int | None = None,
    packs_digest: str | None = None,
) -> dict[str, Any]:
    """The audit of params entry `labelers.<key>` (`raw`): its metrics, or `skipped` saying why it was not measured.
    `cache_dir`: the label stages' cache folder, whose call cache a judge's calls go through (reruns cost nothing),
    and beside which a rule verifier's settled result is kept (transforms/evaluation/audit_cache.py; `packs_digest`
    is part of its key); `judge_rows`: at most this many rows for a model-based labeler (a hash-chosen sample;
    None = all)."""
    params = from_dict(LabelerParams, raw if raw is not None else {}, f"labelers.{key}")
    cls, config = resolve(key, params)
    model_based = needs_model(cls, config)
    head = {"labeler": params.labeler, "version": str(cls.version), "model_based": model_based}
    if model_based and not judges:
        return {**head, "skipped": "model-based: not run (judges skipped)"}
    if uses_groups(cls, config):
        return {**head, "skipped": "compares the rollouts of a prompt: gold rows are single completions"}
    kept = None
    if cache_dir and packs_digest:
        sample = judge_rows if model_based else None  # a judge is measured on a sample of this many rows
        kept = audit_cache.result_path(cache_dir, cls, config, params.tasks, packs_digest, confidence, sample)
        result = audit_cache.read_result(kept)
        if result is not None:
            log.info("audit: %s (%s): the result kept for this code, config and packs", key, params.labeler)
            return result
    labeler = cls(config)
    if cache_dir and model_based and has_hook(labeler, CallCachingLabeler):
        labeler.set_call_cache(call_cache_dir(cache_dir))
    tasks = params.tasks if params.tasks is not None else declared_tasks(labeler)
    tasks_of = {k: declared_tasks(c) for k, c in LABELERS.items()}
    chosen, how, left_out = rows_for(rows, params.labeler, tasks, to_plain(config), tasks_of)
    head |= {"tasks": None if tasks is None else list(tasks), "rows_from": how}
    if not chosen:
        return {**head, "rows": 0, "left_out": left_out, "skipped": "no gold rows for it or its tasks"}
    if model_based and judge_rows is not None and len(chosen) > judge_rows:
        left_out = {**left_out, "judge_rows": len(chosen) - judge_rows}
        chosen = sample_rows(chosen, judge_rows)
    log.info("audit: %s (%s) on %d gold rows", key, params.labeler, len(chosen))
    try:
        result, settled = measure_settled(labeler, chosen, confidence)
    finally:
        tear_down(labeler)
    left_out = {**left_out, **{k: left_out.get(k, 0) + n for k, n in result.pop("left_out").items()}}
    result = {**head, "packs": sorted({r.pack for r in chosen}), **result, "left_out": left_out}
    if kept and settled:
        audit_cache.keep_result(kept, result)
    return result


def audit(
    labelers: dict[str, Any],
    packs: Path = PACKS_DIR,
    keys: list[str] | None = None,
    judges: bool = True,
    confidence: float = 0.95,
    cache_dir: str | None = None,
    judge_rows: int | None = None,
) -> dict[str, Any]:
    """{packs, pack_rows, confidence, labelers: {key: audit}} for the params `labelers` entries `keys` (default:
    all); with `cache_dir` (validate's: the label stages' cache folder) judges' calls go through the call cache and
    rule verifiers' settled results are kept beside it (`rewardmill audit` passes none: it always measures). An
    unknown key or a bad pack raises ConfigError / GoldPackError naming it."""
    unknown = [k for k in keys or () if k not in labelers]
    if unknown:
        raise ConfigError(f"audit: no labeler {unknown} in params `labelers`; configured: {sorted(labelers)}")
    rows = load_packs(packs)
    if not rows:
        log.warning("audit: no gold pack rows in %s: nothing is measured", packs)
    digest = audit_cache.rows_digest(rows) if cache_dir else None
    results = {
        key: audit_labeler(key, labelers[key], rows, judges, confidence, cache_dir, judge_rows, digest)
        for key in keys or sorted(labelers)
    }
    return {"packs": str(packs), "pack_rows": len(rows), "confidence": confidence, "labelers": results}


def precision_check(
    report: dict[str, Any], minimum: float | None, deciders: frozenset[str] = frozenset()
) -> dict[str, Any] | None:
    """{min, success, failures, ranks_only, reason} of the measured labelers' precision against `minimum`; None when
    no minimum is set. Precision is enforced where a labeler's verdict decides correctness: every rule verifier, and a
    model-based labeler only when it is one of `deciders` (the assemble gates and overrides); a judge that only ranks
    within a correctness class is measured and listed under `ranks_only`. A labeler not measured, or that called no
    row correct (precision undefined), does not fail."""
    if minimum is None:
        return None
    failures, ranks_only = [], []
    for key, r in sorted(report["labelers"].items()):
        if r.get("model_based") and key not in deciders:
            ranks_only.append(key)
            continue
        precision = r.get("precision") or {}
        if precision.get("value") is not None and precision["value"] < minimum:
            wrong = [d["id"] for d in r.get("disagreements", []) if d.get("called_correct") and d["gold"] != "correct"]
            failures.append(
                f"labeler '{key}' ({r['labeler']}) has precision {share(precision)} on the gold packs, below "
                f"validate.min_labeler_precision {minimum}; credited wrong rows: {wrong}"
            )
    reason = "; ".join(failures) if failures else f"every measured labeler's precision >= {minimum}"
    return {"min": minimum, "success": not failures, "failures": failures, "ranks_only": ranks_only, "reason": reason}


def for_metrics(report: dict[str, Any]) -> dict[str, Any]:
    """The report with each disagreement reduced to its row id (the full rows are `rewardmill audit`'s)."""
    labelers = {
        key: {**r, "disagreements": [d["id"] for d in r["disagreements"]]} if "disagreements" in r else r
        for key, r in report["labelers"].items()
    }
    return {**report, "labelers": labelers}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="rewardmill audit", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--labeler", action="append", metavar="KEY", help="a params `labelers` key (repeatable)")
    parser.add_argument("--packs", type=Path, default=PACKS_DIR, help="folder of gold packs (*.jsonl)")
    parser.add_argument("--output", type=Path, default=None, help="write the results as JSON here")
    parser.add_argument("--skip-judges", action="store_true", help="do not run model-based labelers")
    parser.add_argument("--confidence", type=float, default=0.95, help="interval confidence level")
    parser.add_argument(
        "--judge-rows", type=int, default=None, help="at most this many gold rows per judge (a fixed sample)"
    )
    args = parser.parse_args(argv)
    setup_logging()
    try:
        labelers = read_params().get("labelers") or {}
        report = audit(
            labelers, args.packs, args.labeler, not args.skip_judges, args.confidence, judge_rows=args.judge_rows
        )
    except (ConfigError, GoldPackError, UnknownLabeler) as exc:
        print(f"rewardmill audit: error: {exc}", file=sys.stderr)
        return 2
    print(text_table(report["labelers"]))
    if args.output is not None:
        write_json_atomic(str(args.output), report)
        log.info("audit: wrote %s", args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
