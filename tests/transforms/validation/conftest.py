"""Tiny stage output folders (prompts, rollouts, labels, steps, and the datasets pairs, rl, sft, prm, _rewards) with
known values, written the way stages write them (rows from rows.py).

The builders are plain functions so tests/pipelines/test_validate.py can import them too.
"""

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rewardmill.schemas import (
    LABEL_V1,
    PAIR_V2,
    PRM_V1,
    PROMPT_V1,
    REJECT_V1,
    REWARD_V1,
    RL_V1,
    ROLLOUT_V2,
    SFT_V1,
    STEP_LABEL_V1,
)
from rewardmill.transforms.stage.outputs import REJECTS_DIR, reject, write_manifest
from tests.transforms.validation.rows import (  # re-exported: tests import every builder from here
    STEPS,
    USER,
    _id,
    answer,
    label_row,
    pair_row,
    prm_row,
    prompt_row,
    reward_row,
    rl_row,
    rollout_row,
    scores,
    sft_row,
    split_of,
    step_label_rows,
)

__all__ = [
    "STEPS",
    "USER",
    "_id",
    "answer",
    "label_row",
    "pair_row",
    "prm_row",
    "prompt_row",
    "reward_row",
    "rl_row",
    "rollout_row",
    "scores",
    "sft_row",
    "split_of",
    "step_label_rows",
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
    extra: dict[str, Any] | None = None,
) -> Path:
    """One data shard, a `_rejects/` shard with `rejects` {reason: count}, and the manifest (with `extra` keys), like
    a stage writes."""
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), directory / "part-00000-of-00001.parquet")
    bad = [reject(stage, f"row{n}", reason) for reason, count in (rejects or {}).items() for n in range(count)]
    (directory / REJECTS_DIR).mkdir(exist_ok=True)
    rejects_file = directory / REJECTS_DIR / "part-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(bad, schema=REJECT_V1), rejects_file)
    write_manifest(directory, stage=stage, schema=schema, config={}, extra=extra)
    return directory


# 3 pairs (2 train, 1 test); 4 rollouts; 4 math_answer labels (2 correct, 1 incorrect, 1 timeout with null score).
PAIRS = [pair_row(0), pair_row(1), pair_row(2, score_rejected=0.0, margin=1.0)]
VERDICTS = [("correct", 1.0), ("incorrect", 0.0), ("correct", 1.0), ("timeout", None)]
# 4 prompts: 2/2 passed (easy), 0/2 (unsolved), 1/2 (medium, the test prompt), none verified (unverified)
RL_ROWS = [rl_row(0, 2, 2, 2), rl_row(1, 2, 2, 0), rl_row(2, 2, 2, 1), rl_row(3, 2, 0, 0, mean_reward=None)]
SFT_ROWS = [sft_row(0), sft_row(2, reward=0.75, n_tokens=20)]
# 6 rollouts: 4 kept (n_tokens 10..40), one no labeler scored, one below min_confidence
REWARDS = [
    reward_row(0, 1.0, True, 10),
    reward_row(1, 0.25, False, 20),
    reward_row(2, 1.0, True, 30),
    reward_row(3, None, None, 13, status="missing_score"),
    reward_row(4, 0.5, True, 40),
    reward_row(5, 0.0, False, 15, status="low_confidence", confidence=0.1),
]
PAIR_MANIFEST = {
    "labelers": ["math_answer"],
    "labeler_versions": {"math_answer": "1"},
    "pair_types": {"best_vs_worst": 3},
}


def write_project(
    root: Path, pairs: list[dict[str, Any]] | None = None, pair_schema: pa.Schema = PAIR_V2, configs: bool = True
) -> Path:
    """data/{prompts,rollouts,labels/math_answer,datasets/pairs} under `root`, plus (`configs`) datasets/{rl,sft,
    _rewards}; all valid unless `pairs` says so."""
    data = root / "data"
    write_stage(data / "prompts", [prompt_row(i) for i in range(2)], PROMPT_V1, "prompts", {"duplicate_prompt": 1})
    write_stage(data / "rollouts", [rollout_row(i) for i in range(4)], ROLLOUT_V2, "rollouts")
    labels = [label_row(i, v, s) for i, (v, s) in enumerate(VERDICTS)]
    write_stage(data / "labels" / "math_answer", labels, LABEL_V1, "label")
    datasets = data / "datasets"
    pairs = PAIRS if pairs is None else pairs
    write_stage(datasets / "pairs", pairs, pair_schema, "assemble", {"tie": 2}, PAIR_MANIFEST)
    if configs:
        write_stage(datasets / "rl", RL_ROWS, RL_V1, "assemble", {"duplicate_prompt": 1})
        write_stage(datasets / "sft", SFT_ROWS, SFT_V1, "assemble", {"no_correct_rollout": 1, "below_min_reward": 1})
        write_stage(datasets / "_rewards", REWARDS, REWARD_V1, "assemble")
    return data


PRM_ROWS = [prm_row(0), prm_row(1), prm_row(1, labeler="judge", method="judge", soft_labels=[None] * 3)]


def write_process_rewards(
    root: Path, prm_rows: list[dict[str, Any]] | None = None, prm_schema: pa.Schema = PRM_V1
) -> None:
    """data/steps/{judge,mc} (rollouts 0 and 1; mc's rollout 1 wrong at step 2, the judge's at step 1) and
    data/datasets/prm (PRM_ROWS unless `prm_rows`) beside write_project's folders."""
    data = root / "data"
    mc = [*step_label_rows("mc", 0, -1, 4), *step_label_rows("mc", 1, 2, 4)]
    judge = [*step_label_rows("judge", 0, -1, 0, method="judge"), *step_label_rows("judge", 1, 1, 0, method="judge")]
    write_stage(data / "steps" / "mc", mc, STEP_LABEL_V1, "steps")
    write_stage(data / "steps" / "judge", judge, STEP_LABEL_V1, "steps")
    rows = PRM_ROWS if prm_rows is None else prm_rows
    write_stage(data / "datasets" / "prm", rows, prm_schema, "assemble", {"undecided_step": 1})


@pytest.fixture
def project(tmp_path) -> Path:
    """A valid data/ folder under tmp_path (see write_project)."""
    return write_project(tmp_path)
