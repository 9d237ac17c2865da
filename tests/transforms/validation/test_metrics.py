"""DVC metrics from stage folders: exact values on a known project, empty inputs, and missing inputs."""

import json
import shutil

import pytest

from rewardmill.schemas import LABEL_V1, ROLLOUT_V2
from rewardmill.transforms.validation.metrics import compute_metrics, rounded, share, value_counts
from tests.transforms.validation.conftest import label_row, rollout_row, write_stage


def metrics_of(data, **kwargs):
    return compute_metrics(data / "prompts", data / "rollouts", data / "labels", data / "datasets", **kwargs)


def test_metrics_of_known_project(project):
    assert metrics_of(project) == {
        "stages": {
            "prompts": {"rows": 2, "rejects": {"duplicate_prompt": 1}, "rejected": 1},
            "rollouts": {"rows": 4, "rejects": {}, "rejected": 0},
            "labels/math_answer": {"rows": 4, "rejects": {}, "rejected": 0},
            "datasets/pairs": {"rows": 3, "rejects": {"tie": 2}, "rejected": 2},
        },
        # n_tokens 10..13; rollout 3 hit max_new_tokens; 2 of 4 math_answer labels are correct
        "rollouts": {"count": 4, "finish_reason": {"length": 1, "stop": 3}, "mean_n_tokens": 11.5, "pass_rate": 0.5},
        "labels": {
            "math_answer": {
                "count": 4,
                "share_correct": 0.5,
                "share_null_score": 0.25,
                "verdicts": {"correct": 2, "incorrect": 1, "timeout": 1},
            }
        },
        "label_agreement": {},  # one labeler: nothing to compare
        # margins 0.75, 0.75, 1.0; chosen longer than rejected in pairs 1 and 2 (30 > 20), not in pair 0 (12 < 20)
        "datasets": {
            "pairs": {"count": 3, "splits": {"test": 1, "train": 2}, "mean_margin": 0.833333, "length_bias": 0.666667}
        },
        # no steps folder given, no prm dataset
        "steps": {},
        "step_agreement": {},
        "prm": {},
    }


def test_metrics_are_deterministic_json(project):
    first = json.dumps(metrics_of(project), sort_keys=True)
    assert first == json.dumps(metrics_of(project), sort_keys=True)
    assert "NaN" not in first


def test_pass_rate_is_null_without_the_pass_labeler(project):
    assert metrics_of(project, pass_labeler="judge")["rollouts"]["pass_rate"] is None


def test_empty_folders_give_null_shares_not_zero(project):
    shutil.rmtree(project / "labels" / "math_answer")
    write_stage(project / "labels" / "judge", [], LABEL_V1, "label")
    write_stage(project / "rollouts", [], ROLLOUT_V2, "rollouts")
    metrics = metrics_of(project, pass_labeler="judge")
    empty = {"count": 0, "share_correct": None, "share_null_score": None, "verdicts": {}}
    assert metrics["labels"] == {"judge": empty}
    assert metrics["rollouts"] == {"count": 0, "finish_reason": {}, "mean_n_tokens": None, "pass_rate": None}


def test_only_pair_datasets_get_pair_metrics(project):
    write_stage(project / "datasets" / "rl_prompts", [rollout_row(0)], ROLLOUT_V2, "assemble")
    metrics = metrics_of(project)
    assert metrics["stages"]["datasets/rl_prompts"]["rows"] == 1
    assert sorted(metrics["datasets"]) == ["pairs"]


def test_verdict_counts_follow_the_data(project):
    rows = [label_row(0, "correct", 1.0), label_row(1, "abstain", None)]
    write_stage(project / "labels" / "math_answer", rows, LABEL_V1, "label")
    assert metrics_of(project)["labels"]["math_answer"]["verdicts"] == {"abstain": 1, "correct": 1}


def test_label_agreement_between_two_labelers_on_shared_rollouts(project):
    verdicts = ["correct", "incorrect", "correct", "abstain"]  # math_answer's: correct, incorrect, correct, timeout
    judge = [
        {**label_row(i, v, None if v == "abstain" else float(v == "correct")), "labeler": "judge"}
        for i, v in enumerate(verdicts)
    ]
    write_stage(project / "labels" / "judge", judge, LABEL_V1, "label")
    agreement = metrics_of(project)["label_agreement"]
    shared = agreement["judge|math_answer"]
    assert shared["n"] == 3  # rollout 3: the judge abstained and math_answer timed out
    assert shared["agreement"] == round(
        sum(a == b for a, b in zip(verdicts[:3], ["correct", "incorrect", "correct"], strict=True)) / 3, 6
    )
    assert agreement["all"]["labelers"] == ["judge", "math_answer"]


@pytest.mark.parametrize("missing", ["prompts", "rollouts", "labels", "datasets", "datasets/pairs/_manifest.json"])
def test_missing_input_names_the_folder(project, missing):
    target = project / missing
    target.unlink() if target.is_file() else shutil.rmtree(target)
    with pytest.raises(FileNotFoundError, match=missing.split("/")[0]):
        metrics_of(project)


def test_helpers():
    import pyarrow as pa

    assert value_counts(pa.chunked_array([["b", None, "a", "b"]])) == {"a": 1, "b": 2, "null": 1}
    assert share(1, 3) == 0.333333 and share(0, 0) is None
    assert rounded(None) is None and rounded(2) == 2.0
