"""Tiny stage output folders (prompts, rollouts, labels, steps, pairs, prm) with known values, written the way stages
write them.

The builders are plain functions so tests/pipelines/test_validate.py can import them too.
"""

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rewardmill.pipelines.stage import REJECTS_DIR, reject, write_manifest
from rewardmill.schemas import LABEL_V1, PAIR_V1, PROMPT_V1, REJECT_V1, ROLLOUT_V2

USER = [{"role": "user", "content": "What is 2 + 3?"}]


def _id(*parts: Any) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:16]


def answer(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


def prompt_row(i: int) -> dict[str, Any]:
    return {
        "prompt_id": _id("prompt", i),
        "source": "arithmetic",
        "task": "math",
        "messages": USER,
        "reference": "5",
        "tests": None,
        "rubric": None,
        "constraints": None,
        "split": "test" if i == 0 else "train",
        "metadata": None,
    }


def rollout_row(i: int, **overrides: Any) -> dict[str, Any]:
    row = {
        "rollout_id": _id("rollout", i),
        "prompt_id": _id("prompt", i // 2),
        "task": "math",
        "messages": USER,
        "reference": "5",
        "tests": None,
        "constraints": None,
        "rubric": None,
        "split": "train",
        "sample_index": i % 2,
        "completion": f"answer {i}",
        "n_tokens": 10 + i,
        "finish_reason": "length" if i == 3 else "stop",
        "logprob_sum": -1.5,
        "policy": {"name": "tiny", "fingerprint": "f" * 64, "backend": "transformers"},
        "sampling": "{}",
        "seed": i,
    }
    return {**row, **overrides}


def label_row(i: int, verdict: str, score: float | None) -> dict[str, Any]:
    return {
        "rollout_id": _id("rollout", i),
        "prompt_id": _id("prompt", i // 2),
        "labeler": "math_answer",
        "labeler_version": "1",
        "aspect": "correctness",
        "score": score,
        "confidence": 1.0,
        "verdict": verdict,
        "rationale": None,
        "raw": None,
    }


def pair_row(i: int, **overrides: Any) -> dict[str, Any]:
    """A valid PAIR_V1 row; margin == score_chosen - score_rejected exactly."""
    row = {
        "pair_id": _id("pair", i),
        "prompt_id": _id("prompt", i),
        "prompt": USER,
        "chosen": answer("5"),
        "rejected": answer(f"wrong {i}"),
        "score_chosen": 1.0,
        "score_rejected": 0.25,
        "margin": 0.75,
        "confidence": 1.0,
        "agreement": 1.0,
        "pair_type": "best_vs_worst",
        "chosen_rollout_id": _id("rollout", 2 * i),
        "rejected_rollout_id": _id("rollout", 2 * i + 1),
        "chosen_n_tokens": 12 if i == 0 else 30,
        "rejected_n_tokens": 20,
        "label_sources": ["math_answer@1"],
        "task": "math",
        "split": "train",
    }
    return {**row, **overrides}


STEPS = ["2 + 3 = 5.", "So x = 5.", "The answer is 5."]


def prm_row(i: int, **overrides: Any) -> dict[str, Any]:
    """A valid PRM_V1 row of three steps: none wrong for even i, the last one wrong (first_error_step 2) for odd i."""
    first_error = 2 if i % 2 else -1
    soft = [1.0, 0.5, 0.0 if first_error == 2 else 1.0]
    row = {
        "prompt_id": _id("prompt", i // 2),
        "rollout_id": _id("rollout", i),
        "prompt": USER[0]["content"],
        "completions": STEPS,
        "labels": [first_error < 0 or s < first_error for s in range(len(STEPS))],
        "soft_labels": soft,
        "first_error_step": first_error,
        "method": "mc",
        "labeler": "mc",
        "min_score": min(soft),
        "last_score": soft[-1],
        "task": "math",
        "split": "test" if i == 0 else "train",
    }
    return {**row, **overrides}


def step_label_rows(
    labeler: str,
    i: int,
    first_error: int,
    continuations: int = 4,
    n_steps: int = 3,
    complete: bool | None = True,
    method: str = "mc",
) -> list[dict[str, Any]]:
    """STEP_LABEL_V1 rows of rollout i by `labeler`: `continuations` spent per step; `complete` None = no flag."""
    raw = json.dumps({} if complete is None else {"complete": complete})
    text = "".join(f"step {s}. " for s in range(n_steps))
    return [
        {
            "rollout_id": _id("rollout", i),
            "prompt_id": _id("prompt", i // 2),
            "labeler": labeler,
            "labeler_version": "1",
            "step_index": s,
            "n_steps": n_steps,
            "step_text": f"step {s}. ",
            "char_start": text.index(f"step {s}. "),
            "char_end": text.index(f"step {s}. ") + len(f"step {s}. "),
            "score": None if 0 <= first_error < s else float(first_error < 0 or s < first_error),
            "hard_label": None if 0 <= first_error < s else (first_error < 0 or s < first_error),
            "method": method,
            "n_continuations": continuations,
            "first_error_step": first_error,
            "raw": raw,
        }
        for s in range(n_steps)
    ]


def relaxed(schema: pa.Schema) -> pa.Schema:
    """`schema` with every field nullable, to write deliberately broken rows (Parquet refuses nulls otherwise)."""
    return pa.schema([f.with_nullable(True) for f in schema], metadata=schema.metadata)


def write_stage(
    directory: Path,
    rows: list[dict[str, Any]],
    schema: pa.Schema,
    stage: str = "test",
    rejects: dict[str, int] | None = None,
) -> Path:
    """One data shard, a `_rejects/` shard with `rejects` {reason: count}, and the manifest, like a stage writes."""
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), directory / "part-00000-of-00001.parquet")
    bad = [reject(stage, f"row{n}", reason) for reason, count in (rejects or {}).items() for n in range(count)]
    (directory / REJECTS_DIR).mkdir(exist_ok=True)
    rejects_file = directory / REJECTS_DIR / "part-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(bad, schema=REJECT_V1), rejects_file)
    write_manifest(directory, stage=stage, schema=schema, config={})
    return directory


# 3 pairs (2 train, 1 test); 4 rollouts; 4 math_answer labels (2 correct, 1 incorrect, 1 timeout with null score).
PAIRS = [pair_row(0), pair_row(1), pair_row(2, split="test", score_rejected=0.0, margin=1.0)]
VERDICTS = [("correct", 1.0), ("incorrect", 0.0), ("correct", 1.0), ("timeout", None)]


def write_project(root: Path, pairs: list[dict[str, Any]] | None = None, pair_schema: pa.Schema = PAIR_V1) -> Path:
    """data/{prompts,rollouts,labels/math_answer,datasets/pairs} under `root`, all valid unless `pairs` says so."""
    data = root / "data"
    write_stage(data / "prompts", [prompt_row(i) for i in range(2)], PROMPT_V1, "prompts", {"duplicate_prompt": 1})
    write_stage(data / "rollouts", [rollout_row(i) for i in range(4)], ROLLOUT_V2, "rollouts")
    labels = [label_row(i, v, s) for i, (v, s) in enumerate(VERDICTS)]
    write_stage(data / "labels" / "math_answer", labels, LABEL_V1, "label")
    write_stage(data / "datasets" / "pairs", PAIRS if pairs is None else pairs, pair_schema, "assemble", {"tie": 2})
    return data


@pytest.fixture
def project(tmp_path) -> Path:
    """A valid data/ folder under tmp_path (see write_project)."""
    return write_project(tmp_path)
