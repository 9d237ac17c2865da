"""DVC metrics from stage folders: exact values on a known project, empty inputs, and missing inputs."""

import json
import shutil

import pytest

from rewardmill.schemas import LABEL_V1, PAIR_V2, REWARD_V1, RL_V1, ROLLOUT_V2, SFT_V1
from rewardmill.transforms.validation.metrics import compute_metrics, rounded, share, value_counts
from tests.transforms.validation.conftest import (
    PAIRS,
    label_row,
    pair_row,
    reward_row,
    rl_row,
    rollout_row,
    write_project,
    write_stage,
)


def metrics_of(data, **kwargs):
    return compute_metrics(data / "prompts", data / "rollouts", data / "labels", data / "datasets", **kwargs)


def test_metrics_of_known_project(project):
    assert metrics_of(project) == {
        "stages": {
            "prompts": {"rows": 2, "rejects": {"duplicate_prompt": 1}, "rejected": 1},
            "rollouts": {"rows": 4, "rejects": {}, "rejected": 0},
            "labels/math_answer": {"rows": 4, "rejects": {}, "rejected": 0},
            # rejects by reason per config, from each manifest
            "datasets/_rewards": {"rows": 6, "rejects": {}, "rejected": 0},
            "datasets/pairs": {"rows": 3, "rejects": {"tie": 2}, "rejected": 2},
            "datasets/rl": {"rows": 4, "rejects": {"duplicate_prompt": 1}, "rejected": 1},
            "datasets/sft": {"rows": 2, "rejects": {"below_min_reward": 1, "no_correct_rollout": 1}, "rejected": 2},
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
            "pairs": {
                "count": 3,
                "splits": {"test": 1, "train": 2},
                "pair_types": {"best_vs_worst": 3},
                "mean_margin": 0.833333,
                "mean_agreement": 1.0,
                "mean_confidence": 1.0,
                "length_bias": 0.666667,
                "length_ties": 0.0,
            }
        },
        # pass rates 1, 0, 0.5 and one prompt nothing verified (left out of the mean)
        "rl": {
            "rl": {
                "rows": 4,
                "splits": {"test": 1, "train": 3},
                "difficulty": {"easy": 1, "medium": 1, "unsolved": 1, "unverified": 1},
                "mean_pass_rate": 0.5,
                "share_zero_pass": 0.25,
                "share_all_pass": 0.25,
            }
        },
        # rewards 1.0 and 0.75, 12 and 20 tokens
        "sft": {
            "sft": {
                "rows": 2,
                "splits": {"test": 1, "train": 1},
                "mean_reward": 0.875,
                "mean_n_tokens": 16.0,
                "share_correct": 1.0,
            }
        },
        "prm": {},  # no prm dataset
        # 4 kept rollouts: (n_tokens, reward) = (10, 1.0), (20, 0.25), (30, 1.0), (40, 0.5); sxy = -3.75, sxx = 500,
        # syy = 0.421875 -> pearson -3.75 / sqrt(210.9375); ranks (1, 3.5), (2, 1), (3, 3.5), (4, 2) -> -1 / sqrt(22.5)
        "rewards": {
            "rows": 6,
            "status": {"kept": 4, "low_confidence": 1, "missing_score": 1},
            "kept": 4,
            "mean_reward": 0.6875,
            "mean_confidence": 1.0,
            "mean_agreement": None,  # one label per rollout: no agreement
            "length_correlation": {"n": 4, "pearson": -0.258199, "spearman": -0.210819},
        },
        "split_leakage": {"prompts": 0},
        # no steps folder given
        "steps": {},
        "step_agreement": {},
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


def test_datasets_are_measured_by_manifest_schema(project):
    write_stage(project / "datasets" / "other", [rollout_row(0)], ROLLOUT_V2, "assemble")  # no dataset metrics
    write_stage(project / "datasets" / "rl_hard", [rl_row(5, 2, 2, 0)], RL_V1, "assemble")  # a second RL config
    metrics = metrics_of(project)
    assert metrics["stages"]["datasets/other"]["rows"] == 1
    assert sorted(metrics["datasets"]) == ["pairs"] and sorted(metrics["sft"]) == ["sft"]
    assert sorted(metrics["rl"]) == ["rl", "rl_hard"] and metrics["rl"]["rl_hard"]["share_zero_pass"] == 1.0


def test_without_new_configs_their_metrics_are_empty(tmp_path):
    data = write_project(tmp_path, configs=False)  # an assemble that wrote pairs only
    metrics = metrics_of(data)
    assert (metrics["rl"], metrics["sft"], metrics["rewards"]) == ({}, {}, {})
    assert sorted(s for s in metrics["stages"] if s.startswith("datasets/")) == ["datasets/pairs"]


@pytest.mark.parametrize(
    ("pairs", "expected"),
    [
        (PAIRS, 0),  # every prompt in one split
        # prompt 0's pairs in train and in test: one prompt, however many rows
        ([*PAIRS, pair_row(0, pair_id="p", split="test"), pair_row(0, pair_id="q", split="test")], 1),
    ],
)
def test_split_leakage_counts_prompts(tmp_path, pairs, expected):
    assert metrics_of(write_project(tmp_path, pairs=pairs))["split_leakage"] == {"prompts": expected}


def test_split_leakage_across_configs(project):
    # prompt 3 is a train prompt in rl; a second pair config puts it in test
    write_stage(project / "datasets" / "leaky", [pair_row(3, split="test")], PAIR_V2, "assemble")
    assert metrics_of(project)["split_leakage"] == {"prompts": 1}


@pytest.mark.parametrize(
    ("rows", "correlation"),
    [
        ([], {"n": 0, "pearson": None, "spearman": None}),  # no rewards
        # two points say nothing
        ([reward_row(0, 1.0, True, 10), reward_row(1, 0.0, False, 20)], {"n": 2, "pearson": None, "spearman": None}),
        # the same reward whatever the length: no variance
        ([reward_row(i, 0.5, None, 10 + i) for i in range(4)], {"n": 4, "pearson": None, "spearman": None}),
        # longer is better, exactly linear
        ([reward_row(i, i / 4, None, 10 + i) for i in range(4)], {"n": 4, "pearson": 1.0, "spearman": 1.0}),
        # rejected and unscored rollouts are left out
        (
            [reward_row(i, i / 4, None, 10 + i) for i in range(3)]
            + [
                reward_row(5, 0.0, None, 99, status="low_confidence"),
                reward_row(6, None, None, 1, status="missing_score"),
            ],
            {"n": 3, "pearson": 1.0, "spearman": 1.0},
        ),
    ],
)
def test_length_correlation(project, rows, correlation):
    write_stage(project / "datasets" / "_rewards", rows, REWARD_V1, "assemble")
    assert metrics_of(project)["rewards"]["length_correlation"] == correlation


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


@pytest.mark.parametrize(
    "missing",
    ["prompts", "rollouts", "labels", "datasets", "datasets/pairs/_manifest.json", "datasets/rl/_manifest.json"],
)
def test_missing_input_names_the_folder(project, missing):
    target = project / missing
    target.unlink() if target.is_file() else shutil.rmtree(target)
    with pytest.raises(FileNotFoundError, match=missing.split("/")[0]):
        metrics_of(project)


def test_empty_configs_give_null_means(project):
    write_stage(project / "datasets" / "rl", [], RL_V1, "assemble")
    write_stage(project / "datasets" / "sft", [], SFT_V1, "assemble")
    metrics = metrics_of(project)
    assert metrics["rl"]["rl"] == {
        "rows": 0,
        "splits": {},
        "difficulty": {},
        "mean_pass_rate": None,
        "share_zero_pass": None,
        "share_all_pass": None,
    }
    assert metrics["sft"]["sft"]["mean_reward"] is None and metrics["sft"]["sft"]["share_correct"] is None


def test_helpers():
    import pyarrow as pa

    assert value_counts(pa.chunked_array([["b", None, "a", "b"]])) == {"a": 1, "b": 2, "null": 1}
    assert share(1, 3) == 0.333333 and share(0, 0) is None
    assert rounded(None) is None and rounded(2) == 2.0
