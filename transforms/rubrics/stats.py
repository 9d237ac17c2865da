"""A rubrics stage's metrics, read from its finished folder: how many rubrics, how many criteria and of what kind,
and how many the refine round rewrote."""

from rewardmill.transforms.io.parquet import list_shards, read_table

DIGITS = 6


def rubric_stats(directory: str) -> dict:
    rows = [
        row for path in list_shards(directory) for row in read_table(path, columns=["criteria", "refined"]).to_pylist()
    ]
    criteria = [c for row in rows for c in row["criteria"]]
    hard = sum(c["kind"] == "hard" for c in criteria)
    return {
        "rubrics": len(rows),
        "criteria": len(criteria),
        "mean_criteria": round(len(criteria) / len(rows), DIGITS) if rows else None,
        "hard_share": round(hard / len(criteria), DIGITS) if criteria else None,
        "refined_rubrics": sum(row["refined"] > 0 for row in rows),
        "refined_criteria": sum(row["refined"] for row in rows),
    }
