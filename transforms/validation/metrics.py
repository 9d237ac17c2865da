"""DVC metrics of one pipeline run, computed from the stage output folders (folders in, plain dict out).

Deterministic: keys are sorted when written, floats are rounded to 6 digits, and a share or mean over zero rows is
null (never a silent 0).

    stages.<stage>          rows and rejects by reason, from each folder's _manifest.json
                            (prompts, rollouts, labels/<name>, steps/<name>, datasets/<name>, datasets/_rewards)
    rollouts                count, finish_reason counts, mean_n_tokens, pass_rate (share of `pass_labeler`'s
                            labels with verdict "correct")
    labels.<name>           count, share_correct, share_null_score, verdicts (counts)
    label_agreement         for each two labelers that both gave a correct/incorrect verdict on some rollouts
                            ("a|b"): n, agreement, cohen_kappa (judge vs verifier, judge vs judge), and
                            Krippendorff's alpha (nominal) over every labeler's verdicts ("all")
    datasets.<name>         pair datasets (PAIR_V2): count, splits, pair_types, mean_margin, mean_agreement,
                            mean_confidence, length_bias, length_ties (dataset_metrics.pair_metrics)
    rl.<name>, sft.<name>   RL_V1 / SFT_V1 datasets: pass rates and difficulty / rewards (dataset_metrics)
    prm.<name>              PRM_V1 datasets: rows, methods (counts), splits (counts), mean_steps, share_with_error
    rewards                 data/datasets/_rewards (REWARD_V1; {} when assemble wrote none): status counts, mean
                            reward, and the length_correlation of reward and n_tokens (dataset_metrics)
    split_leakage           prompts: how many prompt ids appear in both train and test across the datasets
    steps.<name>            per steps labeler (data/steps/<name>; no folder = {}): rollouts, steps, continuations,
                            continuations_per_step, share_with_error, ... (transforms.steps.stats.step_stats)
    step_agreement          for each two steps labelers ("a|b", sorted), on the rollouts both decided completely
                            (raw "complete", true when absent): n, first_error_agreement (share with the same
                            first_error_step), continuations {a, b} spent on those rollouts, continuation_ratio
                            (b's / a's: what b costs for the same decisions; null when a spent none)
"""

import json
from collections import Counter
from itertools import combinations
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from rewardmill.schemas import current_ids
from rewardmill.transforms.stage.outputs import read_manifest
from rewardmill.transforms.steps.stats import step_stats
from rewardmill.transforms.validation.dataset_metrics import (
    pair_metrics,
    prm_metrics,
    reasoning_length_correlation,
    reward_metrics,
    rl_metrics,
    sft_metrics,
)
from rewardmill.transforms.validation.folders import REWARDS, dataset_folders, read_columns, subfolders
from rewardmill.transforms.validation.split_suite import leaked_prompts, split_table
from rewardmill.transforms.validation.stats import rounded, share, value_counts

__all__ = ["compute_metrics", "read_columns", "rounded", "share", "subfolders", "value_counts"]

# kind of dataset -> (metrics key, dataset name: its every current schema version counts, metrics of one folder);
# pair datasets keep their historic key "datasets"
DATASET_METRICS = (
    ("datasets", "pair", pair_metrics),
    ("rl", "rl", rl_metrics),
    ("sft", "sft", sft_metrics),
    ("prm", "prm", prm_metrics),
)
PASS_LABELER = "math_answer"  # the rule verifier whose "correct" share is the policy's pass rate


def compute_metrics(
    prompts: str | Path,
    rollouts: str | Path,
    labels: str | Path,
    datasets: str | Path,
    pass_labeler: str = PASS_LABELER,
    steps: str | Path | None = None,
) -> dict[str, Any]:
    """Metrics dict for the stage folders; `labels`, `steps` and `datasets` hold one subfolder per labeler /
    steps labeler / dataset. `steps` may be None or missing (no steps stage ran): its metrics are then empty."""
    label_dirs, dataset_dirs = subfolders(labels), subfolders(datasets)
    step_dirs = subfolders(steps) if steps is not None and Path(steps).is_dir() else []
    rewards = Path(datasets) / REWARDS
    stages = {"prompts": stage_counts(prompts), "rollouts": stage_counts(rollouts)}
    stages |= {f"labels/{d.name}": stage_counts(d) for d in label_dirs}
    stages |= {f"steps/{d.name}": stage_counts(d) for d in step_dirs}
    stages |= {f"datasets/{d.name}": stage_counts(d) for d in dataset_folders(datasets)}  # configs and _rewards

    per_labeler = {d.name: label_metrics(d) for d in label_dirs}
    passing = per_labeler.get(pass_labeler)
    rollout_stats = {**rollout_metrics(rollouts), "pass_rate": passing["share_correct"] if passing else None}
    schemas = {d: read_manifest(d).get("schema") for d in dataset_dirs}
    kinds = {
        key: {d.name: measure(d) for d in dataset_dirs if schemas[d] in current_ids(name)}
        for key, name, measure in DATASET_METRICS
    }
    return {
        "stages": stages,
        "rollouts": rollout_stats,
        "labels": per_labeler,
        "label_agreement": label_agreement(label_dirs),
        **kinds,
        "rewards": reward_metrics(rewards) | reasoning_bias(rewards, rollouts) if rewards.is_dir() else {},
        "split_leakage": {"prompts": len(leaked_prompts(split_table(datasets)))},
        "steps": {d.name: step_stats(d) for d in step_dirs},
        "step_agreement": step_agreement(step_dirs),
    }


def stage_counts(directory: str | Path) -> dict[str, Any]:
    manifest = read_manifest(directory)
    rejects = dict(sorted(manifest.get("rejects", {}).items()))
    return {"rows": manifest["rows"], "rejects": rejects, "rejected": sum(rejects.values())}


def reasoning_bias(rewards: Path, rollouts: str | Path) -> dict[str, Any]:
    """{reasoning_length_correlation} where the rollouts counted reasoning tokens, else {} (the metrics of runs
    without reasoning stay as they were)."""
    found = reasoning_length_correlation(rewards, rollouts)
    return {} if found is None else {"reasoning_length_correlation": found}


def rollout_metrics(directory: str | Path) -> dict[str, Any]:
    """Input columns: finish_reason, n_tokens."""
    table = read_columns(directory, ["finish_reason", "n_tokens"])
    return {
        "count": table.num_rows,
        "finish_reason": value_counts(table.column("finish_reason")),
        "mean_n_tokens": rounded(pc.mean(table.column("n_tokens")).as_py()),
    }


def label_metrics(directory: str | Path) -> dict[str, Any]:
    """Input columns: verdict, score."""
    table = read_columns(directory, ["verdict", "score"])
    verdicts = value_counts(table.column("verdict"))
    return {
        "count": table.num_rows,
        "share_correct": share(verdicts.get("correct", 0), table.num_rows),
        "share_null_score": share(table.column("score").null_count, table.num_rows),
        "verdicts": verdicts,
    }


def binary_verdicts(directory: str | Path) -> dict[str, bool]:
    """rollout_id -> True (correct) / False (incorrect); other verdicts (abstain, error, timeout) are left out."""
    table = read_columns(directory, ["rollout_id", "verdict"])
    ids, verdicts = table.column("rollout_id").to_pylist(), table.column("verdict").to_pylist()
    return {i: v == "correct" for i, v in zip(ids, verdicts, strict=True) if v in ("correct", "incorrect")}


def label_agreement(label_dirs: list[Path]) -> dict[str, Any]:
    """How often labelers agree on the rollouts they both decided (a judge against a rule verifier is the
    judge's accuracy proxy; two judges, their reliability). Pairs with no shared rollout are left out."""
    from rewardmill.transforms.judges.agreement import judge_verifier_agreement, krippendorff_alpha

    verdicts = {d.name: binary_verdicts(d) for d in label_dirs}
    names = sorted(verdicts)
    result: dict[str, Any] = {}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            shared = sorted(verdicts[a].keys() & verdicts[b].keys())
            if not shared:
                continue
            stats = judge_verifier_agreement([verdicts[a][r] for r in shared], [verdicts[b][r] for r in shared])
            result[f"{a}|{b}"] = {
                "n": stats["n"],
                "agreement": rounded(stats["agreement"]),
                "cohen_kappa": rounded(stats["cohen_kappa"]),
            }
    if result:
        rollouts = sorted(set().union(*(v.keys() for v in verdicts.values())))
        ratings = [[verdicts[n].get(r) for r in rollouts] for n in names]
        result["all"] = {"labelers": names, "krippendorff_alpha": rounded(krippendorff_alpha(ratings, "nominal"))}
    return result


def step_decisions(directory: str | Path) -> dict[str, tuple[int, int]]:
    """rollout_id -> (first_error_step, continuations spent on it) for the rollouts a steps labeler decided
    completely: every step row's raw JSON has "complete" true or no "complete" key (or raw is null), and the rows
    agree on first_error_step. Input columns: rollout_id, first_error_step, n_continuations, raw."""
    table = read_columns(directory, ["rollout_id", "first_error_step", "n_continuations", "raw"])
    first_errors: dict[str, set[int]] = {}
    spent: Counter[str] = Counter()
    undecided: set[str] = set()
    columns = (table.column(c).to_pylist() for c in ("rollout_id", "first_error_step", "n_continuations", "raw"))
    for rollout_id, first_error, n, raw in zip(*columns, strict=True):
        first_errors.setdefault(rollout_id, set()).add(first_error)
        spent[rollout_id] += n
        if not decision_complete(raw, f"{directory}: rollout {rollout_id}"):
            undecided.add(rollout_id)
    return {
        rollout_id: (min(found), spent[rollout_id])
        for rollout_id, found in first_errors.items()
        if rollout_id not in undecided and len(found) == 1
    }


def decision_complete(raw: str | None, where: str = "") -> bool:
    """A step label's raw JSON -> whether its rollout's first error is settled (an absent flag means settled:
    methods other than binary search always decide)."""
    if raw is None:
        return True
    try:
        detail = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{where}: raw is not JSON: {exc}") from exc
    return not isinstance(detail, dict) or detail.get("complete", True) is not False


def step_agreement(step_dirs: list[Path]) -> dict[str, Any]:
    """For each two steps labelers (by folder name, sorted): how often they put the first error at the same step,
    and what each spent in continuations, on the rollouts both decided completely. Every pair is listed; with no
    shared rollout, n is 0 and the shares are null."""
    decisions = {d.name: step_decisions(d) for d in step_dirs}
    result: dict[str, Any] = {}
    for a, b in combinations(sorted(decisions), 2):
        shared = sorted(decisions[a].keys() & decisions[b].keys())
        same = sum(decisions[a][r][0] == decisions[b][r][0] for r in shared)
        spent_a = sum(decisions[a][r][1] for r in shared)
        spent_b = sum(decisions[b][r][1] for r in shared)
        result[f"{a}|{b}"] = {
            "n": len(shared),
            "first_error_agreement": share(same, len(shared)),
            "continuations": {a: spent_a, b: spent_b},
            "continuation_ratio": rounded(spent_b / spent_a) if spent_a else None,
        }
    return result
