"""Process-reward metrics: steps labelers' statistics, their agreement on first errors and cost, and PRM counts."""

import json
from pathlib import Path

import pytest

from rewardmill.schemas import PRM_V1, STEP_LABEL_V1
from rewardmill.transforms.io.parquet import rows_to_table, write_table
from rewardmill.transforms.stage.outputs import write_manifest
from rewardmill.transforms.validation.metrics import compute_metrics, decision_complete, step_agreement
from tests.transforms.validation.conftest import prm_row, step_label_rows, write_stage


def write_steps(directory: Path, rows: list[dict]) -> Path:
    """A steps stage output folder: one STEP_LABEL_V1 shard and its manifest."""
    directory.mkdir(parents=True)
    write_table(rows_to_table(rows, STEP_LABEL_V1, str(directory)), str(directory / "part-00000-of-00001.parquet"))
    write_manifest(directory, stage="steps", schema=STEP_LABEL_V1, config={})
    return directory


def rows(labeler: str, decisions: dict[int, tuple[int, bool | None]], continuations: int, **kwargs) -> list[dict]:
    """{rollout: (first_error_step, complete)} -> the labeler's step rows, `continuations` spent per step."""
    return [
        row
        for i, (first_error, complete) in decisions.items()
        for row in step_label_rows(labeler, i, first_error, continuations, complete=complete, **kwargs)
    ]


@pytest.fixture
def steps_dir(tmp_path) -> Path:
    """Three steps labelers over rollouts 0..4, three steps each (see the comments for what they share)."""
    steps = tmp_path / "steps"
    # mc: 4 continuations per step, every rollout decided; errors in rollouts 1, 2 and 3
    write_steps(steps / "mc", rows("mc", {0: (-1, True), 1: (2, True), 2: (0, True), 3: (1, True)}, 4))
    # bs: 2 per step; disagrees on rollout 2, leaves rollout 3 undecided, alone on rollout 4
    bs = {0: (-1, True), 1: (2, True), 2: (1, True), 3: (-1, False), 4: (-1, True)}
    write_steps(steps / "bs", rows("bs", bs, 2, method="binary_search"))
    # judge: no continuations, no "complete" flag (a judge always decides); rollout 0's raw is null
    judge = rows("judge", {0: (-1, None), 1: (2, None)}, 0, method="judge")
    first = judge[0]["rollout_id"]
    write_steps(steps / "judge", [{**r, "raw": None} if r["rollout_id"] == first else r for r in judge])
    return steps


def test_step_agreement_on_completely_decided_shared_rollouts(steps_dir):
    assert step_agreement(sorted(steps_dir.iterdir())) == {
        # rollouts 0, 1 (both by judge): same first errors; bs spent 2 x 3 steps on each, the judge nothing
        "bs|judge": {
            "n": 2,
            "first_error_agreement": 1.0,
            "continuations": {"bs": 12, "judge": 0},
            "continuation_ratio": 0.0,
        },
        # rollouts 0, 1, 2 (3 is undecided by bs, 4 is bs's alone): rollout 2's first error differs; mc spends twice
        "bs|mc": {
            "n": 3,
            "first_error_agreement": 0.666667,
            "continuations": {"bs": 18, "mc": 36},
            "continuation_ratio": 2.0,
        },
        # the judge spent no continuations: no ratio
        "judge|mc": {
            "n": 2,
            "first_error_agreement": 1.0,
            "continuations": {"judge": 0, "mc": 24},
            "continuation_ratio": None,
        },
    }


def test_step_agreement_lists_pairs_without_shared_rollouts(tmp_path):
    write_steps(tmp_path / "a", rows("a", {0: (-1, True)}, 1))
    write_steps(tmp_path / "b", rows("b", {0: (1, False), 1: (-1, True)}, 1))  # rollout 0 undecided
    expected = {"n": 0, "first_error_agreement": None, "continuations": {"a": 0, "b": 0}, "continuation_ratio": None}
    assert step_agreement([tmp_path / "a", tmp_path / "b"]) == {"a|b": expected}
    assert step_agreement([tmp_path / "a"]) == {}


def test_rollout_whose_rows_disagree_on_the_first_error_is_not_a_decision(tmp_path):
    a = rows("a", {0: (-1, True), 1: (-1, True)}, 1)
    broken = rows("b", {0: (-1, True), 1: (-1, True)}, 1)
    broken[-1] = {**broken[-1], "first_error_step": 2}  # rollout 1's last row says otherwise
    write_steps(tmp_path / "a", a)
    write_steps(tmp_path / "b", broken)
    assert step_agreement([tmp_path / "a", tmp_path / "b"])["a|b"]["n"] == 1


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, True),  # no detail: decided
        ("{}", True),  # no flag: decided (judge, consensus, mc)
        (json.dumps({"complete": True, "probes": [1]}), True),
        (json.dumps({"complete": False}), False),  # binary search ran out of budget
        ("[]", True),  # not an object: no flag
    ],
)
def test_decision_complete(raw, expected):
    assert decision_complete(raw) is expected


def test_raw_that_is_not_json_names_the_folder(tmp_path):
    bad = [{**r, "raw": "{oops"} for r in rows("a", {0: (-1, True)}, 1)]
    write_steps(tmp_path / "a", bad)
    write_steps(tmp_path / "b", rows("b", {0: (-1, True)}, 1))
    with pytest.raises(ValueError, match=r"a: rollout .* raw is not JSON"):
        step_agreement([tmp_path / "a", tmp_path / "b"])


def metrics_of(data: Path, steps: Path | None) -> dict:
    return compute_metrics(data / "prompts", data / "rollouts", data / "labels", data / "datasets", steps=steps)


def test_steps_metrics_per_labeler(project, steps_dir):
    metrics = metrics_of(project, steps_dir)
    assert sorted(metrics["steps"]) == ["bs", "judge", "mc"]
    mc = metrics["steps"]["mc"]
    # 4 rollouts x 3 steps x 4 continuations; errors in rollouts 1, 2, 3
    asked = ("rollouts", "steps", "continuations", "continuations_per_step", "share_with_error")
    assert {k: mc[k] for k in asked} == {
        "rollouts": 4,
        "steps": 12,
        "continuations": 48,
        "continuations_per_step": 4.0,
        "share_with_error": 0.75,
    }
    assert metrics["steps"]["judge"]["continuations_per_step"] == 0.0
    assert sorted(metrics["step_agreement"]) == ["bs|judge", "bs|mc", "judge|mc"]
    assert metrics["stages"]["steps/bs"] == {"rows": 15, "rejects": {}, "rejected": 0}
    assert metrics["datasets"] == metrics_of(project, None)["datasets"]  # the pair metrics are unchanged


@pytest.mark.parametrize("steps", [None, "missing"])
def test_no_steps_folder_gives_empty_step_metrics(project, tmp_path, steps):
    metrics = metrics_of(project, None if steps is None else tmp_path / steps)
    assert (metrics["steps"], metrics["step_agreement"], metrics["prm"]) == ({}, {}, {})
    assert not [stage for stage in metrics["stages"] if stage.startswith("steps/")]


def test_prm_metrics(project):
    rows_ = [
        prm_row(0),  # no error
        prm_row(1),  # error at step 2
        # prompt 2: the test split
        prm_row(4, completions=["a"], labels=[False], soft_labels=[0.0], first_error_step=0, method="judge"),
    ]
    write_stage(project / "datasets" / "prm", rows_, PRM_V1, "assemble", {"undecided_step": 1})
    metrics = metrics_of(project, None)
    assert metrics["prm"] == {
        "prm": {
            "rows": 3,
            "methods": {"judge": 1, "mc": 2},
            "splits": {"test": 1, "train": 2},
            "mean_steps": round(7 / 3, 6),
            "share_with_error": 0.666667,
        }
    }
    assert metrics["stages"]["datasets/prm"] == {"rows": 3, "rejects": {"undecided_step": 1}, "rejected": 1}
    assert sorted(metrics["datasets"]) == ["pairs"]  # a PRM dataset gets no pair metrics


def test_empty_prm_dataset_gives_null_shares(project):
    write_stage(project / "datasets" / "prm", [], PRM_V1, "assemble")  # an empty shard with nested columns
    expected = {"rows": 0, "methods": {}, "splits": {}, "mean_steps": None, "share_with_error": None}
    assert metrics_of(project, None)["prm"] == {"prm": expected}
