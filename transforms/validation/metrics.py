"""DVC metrics of one pipeline run, computed from the stage output folders (folders in, plain dict out).

Deterministic: keys are sorted when written, floats are rounded to 6 digits, and a share or mean over zero rows is
null (never a silent 0).

    stages.<stage>          rows and rejects by reason, from each folder's _manifest.json
                            (prompts, rollouts, labels/<name>, datasets/<name>)
    rollouts                count, finish_reason counts, mean_n_tokens, pass_rate (share of `pass_labeler`'s
                            labels with verdict "correct")
    labels.<name>           count, share_correct, share_null_score, verdicts (counts)
    label_agreement         for each two labelers that both gave a correct/incorrect verdict on some rollouts
                            ("a|b"): n, agreement, cohen_kappa (judge vs verifier, judge vs judge), and
                            Krippendorff's alpha (nominal) over every labeler's verdicts ("all")
    datasets.<name>         for pair datasets: count, splits (counts), mean_margin, length_bias (share of pairs
                            whose chosen completion has more tokens than the rejected one)
"""

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rewardmill.pipelines.stage import read_manifest
from rewardmill.schemas import PAIR_V1
from rewardmill.schemas.common import schema_id

DIGITS = 6
PASS_LABELER = "math_answer"  # the rule verifier whose "correct" share is the policy's pass rate


def compute_metrics(
    prompts: str | Path,
    rollouts: str | Path,
    labels: str | Path,
    datasets: str | Path,
    pass_labeler: str = PASS_LABELER,
) -> dict[str, Any]:
    """Metrics dict for the stage folders; `labels` and `datasets` hold one subfolder per labeler / dataset."""
    label_dirs, dataset_dirs = subfolders(labels), subfolders(datasets)
    stages = {"prompts": stage_counts(prompts), "rollouts": stage_counts(rollouts)}
    stages |= {f"labels/{d.name}": stage_counts(d) for d in label_dirs}
    stages |= {f"datasets/{d.name}": stage_counts(d) for d in dataset_dirs}

    per_labeler = {d.name: label_metrics(d) for d in label_dirs}
    passing = per_labeler.get(pass_labeler)
    rollout_stats = {**rollout_metrics(rollouts), "pass_rate": passing["share_correct"] if passing else None}
    pairs = [d for d in dataset_dirs if read_manifest(d).get("schema") == schema_id(PAIR_V1)]
    pair_datasets = {d.name: pair_metrics(d) for d in pairs}
    return {
        "stages": stages,
        "rollouts": rollout_stats,
        "labels": per_labeler,
        "label_agreement": label_agreement(label_dirs),
        "datasets": pair_datasets,
    }


def subfolders(directory: str | Path) -> list[Path]:
    """Stage output folders under `directory` (sorted); `_`/`.`-prefixed names and the temp/old folders a
    killed stage may leave (`NAME.tmp-PID`, `NAME.old-PID`) are not outputs."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory}: missing; the upstream stages did not run (run `dvc repro`)")
    return sorted(
        p
        for p in directory.iterdir()
        if p.is_dir() and not p.name.startswith(("_", ".")) and not re.search(r"\.(tmp|old)-\d+$", p.name)
    )


def stage_counts(directory: str | Path) -> dict[str, Any]:
    manifest = read_manifest(directory)
    rejects = dict(sorted(manifest.get("rejects", {}).items()))
    return {"rows": manifest["rows"], "rejects": rejects, "rejected": sum(rejects.values())}


def read_columns(directory: str | Path, columns: list[str]) -> pa.Table:
    """The given columns of every data shard in a stage folder (`_rejects/` is a subfolder, so never matched)."""
    shards = sorted(Path(directory).glob("*.parquet"))
    if not shards:
        raise FileNotFoundError(f"{directory}: no *.parquet shards")
    return pa.concat_tables([pq.read_table(path, columns=columns) for path in shards])


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


def pair_metrics(directory: str | Path) -> dict[str, Any]:
    """Input columns: split, margin, chosen_n_tokens, rejected_n_tokens."""
    table = read_columns(directory, ["split", "margin", "chosen_n_tokens", "rejected_n_tokens"])
    longer = pc.greater(table.column("chosen_n_tokens"), table.column("rejected_n_tokens"))
    return {
        "count": table.num_rows,
        "splits": value_counts(table.column("split")),
        "mean_margin": rounded(pc.mean(table.column("margin")).as_py()),
        "length_bias": share(pc.sum(longer).as_py() or 0, table.num_rows),
    }


def value_counts(column: pa.ChunkedArray) -> dict[str, int]:
    """Counts per value, sorted by value; nulls are counted under "null"."""
    counts = Counter("null" if v is None else str(v) for v in column.to_pylist())
    return dict(sorted(counts.items()))


def share(part: int, total: int) -> float | None:
    return rounded(part / total) if total else None


def rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), DIGITS)
