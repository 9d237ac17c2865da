"""Small hand-made rollouts and labels for the aggregation cores."""

import polars as pl


def label(rollout_id, labeler, score, verdict, confidence=1.0, aspect="correctness", version="1") -> dict:
    return {
        "rollout_id": rollout_id,
        "labeler": labeler,
        "labeler_version": version,
        "aspect": aspect,
        "score": score,
        "confidence": confidence,
        "verdict": verdict,
    }


def labels(*rows: dict) -> pl.DataFrame:
    schema = {
        "rollout_id": pl.String,
        "labeler": pl.String,
        "labeler_version": pl.String,
        "aspect": pl.String,
        "score": pl.Float64,
        "confidence": pl.Float64,
        "verdict": pl.String,
    }
    return pl.DataFrame(list(rows), schema=schema)


def rollouts(*specs: tuple, prompt_id: str = "p") -> pl.DataFrame:
    """specs: (rollout_id, n_tokens[, finish_reason[, prompt_id]])."""
    rows = []
    for spec in specs:
        rid, n = spec[0], spec[1]
        rows.append(
            {
                "rollout_id": rid,
                "prompt_id": spec[3] if len(spec) > 3 else prompt_id,
                "task": "math",
                "messages": [{"role": "user", "content": "What is 2 + 2?"}],
                "reference": "4",
                "tests": None,
                "constraints": None,
                "split": "train",
                "completion": f"completion of {rid}",
                "n_tokens": n,
                "finish_reason": spec[2] if len(spec) > 2 else "stop",
            }
        )
    return pl.DataFrame(rows, schema_overrides={"n_tokens": pl.Int32, "tests": pl.String, "constraints": pl.String})
