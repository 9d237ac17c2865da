"""Label QA for people: where the labelers disagree, and how each model-based labeler does against the gates.

In: every label folder (LABEL_V1), the rollouts (for texts) and `_rewards` (which gate decided each rollout).
Out: a plain dict (`reports/label_qa.json`; its counts also go to the metrics) and an HTML page
(`reports/label_qa.html`) with
- disagreement counts for every two labelers that both decided (correct/incorrect) some rollouts, as gate vs
  judge, judge vs judge or gate vs gate (a gate is a labeler that decided some rollout's correctness in `_rewards`);
- the `top` most confidently disputed rollouts, each once: ranked by its most confident disagreement (the less
  confident side of its most confident disagreeing pair), with the prompt, the completion, the reference and every
  labeler that decided it (on a disputed rollout each one disagrees with some other), verdicts and rationales;
- for every labeler that is not a gate, its confusion against the deciding gate (judge says correct / incorrect x
  the gate says correct / incorrect), its accuracy and its Cohen's kappa (agreement beyond chance: what a `measured`
  reward weight in assemble is, floored at 0).
Deterministic: every ranking breaks ties by rollout id and labeler names.
"""

import html
from dataclasses import asdict
from pathlib import Path
from typing import Any

import polars as pl

from rewardmill.transforms.aggregate.measured_weights import agreements
from rewardmill.transforms.aggregate.reward import WHOLE
from rewardmill.transforms.io.parquet import list_shards

DECIDED = ("correct", "incorrect")
TOP = 20
TEXT_CHARS = 600  # of each text shown in a disagreement


def label_qa(label_dirs: list[Path], rollouts: str | Path, rewards: str | Path | None, top: int = TOP) -> dict:
    labels = _labels(label_dirs)
    gates = _gates(rewards)
    decided = labels.filter(pl.col("verdict").is_in(DECIDED))
    pairs = (
        decided.join(decided, on="rollout_id", suffix="_b")
        .filter(pl.col("labeler") < pl.col("labeler_b"))
        .with_columns(disagree=pl.col("verdict") != pl.col("verdict_b"))
    )
    kind = (
        pl.when(pl.col("labeler").is_in(gates) & pl.col("labeler_b").is_in(gates))
        .then(pl.lit("gate_vs_gate"))
        .when(pl.col("labeler").is_in(gates) | pl.col("labeler_b").is_in(gates))
        .then(pl.lit("gate_vs_judge"))
        .otherwise(pl.lit("judge_vs_judge"))
    )
    counts = (
        pairs.group_by("labeler", "labeler_b")
        .agg(n=pl.len(), disagree=pl.col("disagree").sum())
        .with_columns(kind=kind, share=(pl.col("disagree") / pl.col("n")).round(6))
        .sort("labeler", "labeler_b")
    )
    # one entry per rollout, however many pairs of labelers disagree on it
    worst = (
        pairs.filter(pl.col("disagree"))
        .group_by("rollout_id")
        .agg(strength=pl.min_horizontal("confidence", "confidence_b").max())
        .sort(["strength", "rollout_id"], descending=[True, False])
        .head(top)
    )
    ids = worst["rollout_id"].to_list()
    texts = _texts(rollouts, ids)
    sides = decided.filter(pl.col("rollout_id").is_in(ids)).sort("rollout_id", "labeler")
    by_rollout = {rid: [_side(r) for r in part.iter_rows(named=True)] for (rid,), part in sides.group_by("rollout_id")}
    disagreements = [
        {
            "rollout_id": row["rollout_id"],
            "strength": round(row["strength"], 6),
            **texts.get(row["rollout_id"], {}),
            "labels": by_rollout[row["rollout_id"]],
        }
        for row in worst.iter_rows(named=True)
    ]
    return {
        "gates": sorted(gates),
        "pairs": [
            {k: r[k] for k in ("labeler", "labeler_b", "kind", "n", "disagree", "share")}
            for r in counts.iter_rows(named=True)
        ],
        "disagreements": disagreements,
        "confusion": _confusion(decided, rewards, gates),
    }


def summary(report: dict) -> dict[str, Any]:
    """The counts of a report, for the DVC metrics (no texts)."""
    return {
        "pairs": {
            f"{p['labeler']}|{p['labeler_b']}": {"n": p["n"], "disagree": p["disagree"]} for p in report["pairs"]
        },
        "confusion": report["confusion"],
    }


def _labels(label_dirs: list[Path]) -> pl.DataFrame:
    columns = ["rollout_id", "labeler", "aspect", "score", "confidence", "verdict", "rationale"]
    frames = [pl.read_parquet(path, columns=columns) for d in label_dirs for path in list_shards(str(d))]
    if not frames:
        return pl.DataFrame(schema={c: pl.Float64 if c in ("score", "confidence") else pl.String for c in columns})
    # one decided verdict per (rollout, labeler): the first whole aspect (labelers with several aspects rate each)
    return (
        pl.concat(frames)
        .filter(WHOLE)
        .sort("rollout_id", "labeler", "aspect")
        .unique(["rollout_id", "labeler"], keep="first")
    )


def _gates(rewards: str | Path | None) -> list[str]:
    if rewards is None or not Path(rewards).is_dir():
        return []
    paths = list_shards(str(rewards))
    if not paths:
        return []
    decided = pl.concat([pl.read_parquet(p, columns=["verified_by"]) for p in paths])["verified_by"].drop_nulls()
    return sorted(decided.unique().to_list())


def _texts(rollouts: str | Path, ids: list[str]) -> dict[str, dict[str, str | None]]:
    if not ids:
        return {}
    found: dict[str, dict[str, str | None]] = {}
    for path in list_shards(str(rollouts)):
        frame = pl.read_parquet(path, columns=["rollout_id", "messages", "completion", "reference"])
        for row in frame.filter(pl.col("rollout_id").is_in(ids)).iter_rows(named=True):
            users = [m["content"] for m in row["messages"] or [] if m["role"] == "user"]
            found[row["rollout_id"]] = {
                "prompt": (users[-1] if users else "")[:TEXT_CHARS],
                "completion": (row["completion"] or "")[:TEXT_CHARS],
                "reference": row["reference"],
            }
    return found


def _side(row: dict) -> dict[str, Any]:
    return {
        "labeler": row["labeler"],
        "verdict": row["verdict"],
        "confidence": round(row["confidence"], 6),
        "rationale": (row["rationale"] or "")[:TEXT_CHARS],
    }


def _confusion(decided: pl.DataFrame, rewards: str | Path | None, gates: list[str]) -> dict[str, dict]:
    if not gates:
        return {}
    paths = list_shards(str(rewards))
    truth = pl.concat([pl.read_parquet(p, columns=["rollout_id", "correct"]) for p in paths]).drop_nulls("correct")
    judges = sorted(set(decided["labeler"].to_list()) - set(gates))
    out = {}
    for labeler, a in agreements(decided, truth, judges).items():  # the cells a `measured` reward weight reads
        if a.n:
            kappa = None if a.kappa is None else round(a.kappa, 6)
            out[labeler] = {**asdict(a), "n": a.n, "accuracy": round(a.accuracy, 6), "kappa": kappa}
    return out


def render_html(report: dict) -> str:
    """The report as one self-contained page (every text escaped)."""

    def table(header: list[str], rows: list[list[Any]]) -> str:
        head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
        return f"<table><tr>{head}</tr>{body}</table>"

    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>Label QA</title><style>"
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top;text-align:left}"
        "pre{white-space:pre-wrap;max-width:60em}</style></head><body>",
        "<h1>Label QA: where the labelers disagree</h1>",
        "<p>Gates (labelers that decided correctness in _rewards): "
        f"{html.escape(', '.join(report['gates']) or '-')}</p>",
        "<h2>Disagreements per pair of labelers</h2>",
        table(
            ["labeler", "labeler", "kind", "both decided", "disagree", "share"],
            [[p["labeler"], p["labeler_b"], p["kind"], p["n"], p["disagree"], p["share"]] for p in report["pairs"]],
        ),
        "<h2>Each judge against the deciding gate</h2>",
        table(
            [
                "labeler",
                "says correct, gate correct",
                "says correct, gate incorrect",
                "says incorrect, gate correct",
                "says incorrect, gate incorrect",
                "n",
                "accuracy",
                "kappa (beyond chance)",
            ],
            [
                [
                    name,
                    c["correct_correct"],
                    c["correct_incorrect"],
                    c["incorrect_correct"],
                    c["incorrect_incorrect"],
                    c["n"],
                    c["accuracy"],
                    "-" if c["kappa"] is None else c["kappa"],
                ]
                for name, c in report["confusion"].items()
            ],
        ),  # fmt: skip
        f"<h2>The {len(report['disagreements'])} most confidently disputed rollouts</h2>",
    ]
    for d in report["disagreements"]:
        parts.append(
            f"<h3>{html.escape(d['rollout_id'])} (its most confident disagreement, by the less confident side: "
            f"{d['strength']})</h3>"
            f"<p><b>Prompt</b></p><pre>{html.escape(str(d.get('prompt', '')))}</pre>"
            f"<p><b>Completion</b></p><pre>{html.escape(str(d.get('completion', '')))}</pre>"
            f"<p><b>Reference</b>: {html.escape(str(d.get('reference')))}</p>"
            + table(
                ["labeler", "verdict", "confidence", "rationale"],
                [[s["labeler"], s["verdict"], s["confidence"], s["rationale"]] for s in d["labels"]],
            )
        )
    parts.append("</body></html>\n")
    return "\n".join(parts)
