"""The evaluate stage on a small pair dataset: it trains a real reward model (TRL's RewardTrainer, from the default
policy) on the train split and measures it on the test split, or measures a given one; each labeler's accuracy on
the verified pairs; validate.min_rm_accuracy turns the held-out accuracy into a build gate."""

import json

import pytest

from rewardmill.pipelines import evaluate
from rewardmill.pipelines.validate import rm_accuracy_check
from rewardmill.schemas import LABEL_V1, PAIR_V2
from rewardmill.transforms.evaluation.pair_accuracy import pair_accuracy
from rewardmill.transforms.io.parquet import rows_to_table, write_table
from rewardmill.transforms.labelers.reward_model import RewardModelConfig, RewardModelScorer
from rewardmill.transforms.stage.outputs import write_manifest
from tests.conftest import preference_pairs, tiny_params

TRAIN, TEST = 12, 6


def pair_row(i: int, pair: dict, split: str) -> dict:
    verified = i % 3 != 0  # every third pair: no gate decided it
    return {
        "pair_id": f"pair{i}",
        "prompt_id": f"p{i}",
        **pair,
        "score_chosen": 1.0,
        "score_rejected": 0.0,
        "margin": 1.0,
        "confidence": 1.0,
        "agreement": 1.0,
        "pair_type": "correct_vs_incorrect" if verified else "best_vs_worst",
        "chosen_rollout_id": f"p{i}-c",
        "rejected_rollout_id": f"p{i}-r",
        "chosen_n_tokens": 12,
        "rejected_n_tokens": 6,
        "chosen_correct": True if verified else None,
        "rejected_correct": False if verified else None,
        "scores_chosen": [],
        "scores_rejected": [],
        "label_sources": ["gate@1"],
        "task": "math",
        "split": split,
    }


def label_row(labeler: str, rollout_id: str, score: float | None) -> dict:
    return {
        "rollout_id": rollout_id,
        "prompt_id": rollout_id.split("-")[0],
        "labeler": labeler,
        "labeler_version": "1",
        "aspect": "correctness",
        "score": score,
        "confidence": 1.0,
        "verdict": "abstain" if score is None else "correct" if score >= 0.5 else "incorrect",
        "rationale": None,
        "raw": None,
    }


@pytest.fixture
def data(tmp_path):
    pairs = [pair_row(i, p, "train" if i < TRAIN else "test") for i, p in enumerate(preference_pairs(TRAIN + TEST))]
    folder = tmp_path / "data/datasets/pairs"
    folder.mkdir(parents=True)
    write_table(rows_to_table(pairs, PAIR_V2), str(folder / "train-00000-of-00001.parquet"))
    write_manifest(folder, stage="assemble", schema=PAIR_V2, config={}, extra={"gates": ["gate"]})
    labels = {
        "gate": [label_row("gate", f"p{i}-{s}", float(s == "c")) for i in range(TRAIN + TEST) for s in "cr"],
        # scores the verified pairs' rejected side higher on even pairs, and cannot score odd pairs' chosen side
        "judge": [
            label_row("judge", f"p{i}-{s}", None if (i % 2 and s == "c") else float((s == "c") == (i % 4 == 1)))
            for i in range(TRAIN + TEST)
            for s in "cr"
        ],
    }
    for name, rows in labels.items():
        (tmp_path / "data/labels" / name).mkdir(parents=True)
        write_table(
            rows_to_table(rows, LABEL_V1), str(tmp_path / "data/labels" / name / "part-00000-of-00001.parquet")
        )
    return tmp_path, pairs


def run(tmp_path, params_file, policy_dir, **section) -> dict:
    params = tiny_params()
    params["evaluate"] = {**params["evaluate"], "enabled": True, **section}  # off in the shipped params
    params_file(params)
    metrics = tmp_path / "metrics/evaluate.json"
    args = ["--datasets", str(tmp_path / "data/datasets"), "--labels", str(tmp_path / "data/labels")]
    evaluate.main([*args, "--model", str(policy_dir), "--metrics", str(metrics)])
    return json.loads(metrics.read_text())


def test_trains_a_reward_model_and_measures_it_on_the_test_split(data, params_file, policy_dir):
    tmp_path, pairs = data
    train = {"max_steps": 3, "batch_size": 4, "max_length": 96}
    metrics = run(tmp_path, params_file, policy_dir, train=train)
    rm = metrics["reward_model"]
    assert (rm["source"], rm["base"], rm["train_pairs"], rm["test_pairs"]) == ("trained", "policy", TRAIN, TEST)
    assert rm["train"]["pairs"] == TRAIN and rm["train"]["trained_pairs"] == TRAIN and rm["train"]["steps"] == 3
    held_out = rm["test"]["all"]
    assert held_out["n"] == TEST and 0 <= held_out["ci_low"] <= held_out["accuracy"] <= held_out["ci_high"] <= 1
    verified_test = sum(p["chosen_correct"] is True for p in pairs[TRAIN:])
    assert rm["test"]["verified"]["n"] == verified_test
    # labelers on the verified pairs of every split: the gate is right by construction, the judge as constructed
    verified = [i for i in range(TRAIN + TEST) if i % 3]
    assert metrics["verified_pairs"] == len(verified)
    assert (
        metrics["labelers"]["gate/correctness"]["accuracy"] == 1.0 and metrics["labelers"]["gate/correctness"]["gate"]
    )
    judge = metrics["labelers"]["judge/correctness"]
    scored = [i for i in verified if i % 2 == 0]  # odd pairs' chosen side has no score
    right = [i for i in scored if i % 4 == 1]
    assert (judge["gate"], judge["pairs"], judge["scored"]) == (False, len(verified), len(scored))
    assert judge["accuracy"] == pytest.approx(len(right) / len(scored))
    assert not list(tmp_path.glob("**/rewardmill-evaluate-*"))  # the trained model is scratch


def test_a_given_reward_model_is_measured_as_a_direct_scoring_would(data, params_file, policy_dir, reward_model_dir):
    tmp_path, pairs = data
    metrics = run(tmp_path, params_file, policy_dir, reward_model=str(reward_model_dir))
    rm = metrics["reward_model"]
    assert rm["source"] == "given" and "train" not in rm
    scorer = RewardModelScorer(RewardModelConfig(model=str(reward_model_dir), normalize="sigmoid"))
    assert rm["test"] == pair_accuracy(scorer, pairs[TRAIN:], **metrics["bootstrap"])
    # validate's gate reads this file: a minimum at the accuracy passes
    path = tmp_path / "metrics/evaluate.json"
    accuracy = rm["test"]["all"]["accuracy"]
    assert rm_accuracy_check(accuracy, str(path))["success"]
    # the same test pairs the wrong way round: the model now orders right exactly those it ordered wrong, and a
    # minimum above that fails naming the figures
    swapped = [{**p, "chosen": p["rejected"], "rejected": p["chosen"]} if p["split"] == "test" else p for p in pairs]
    write_table(rows_to_table(swapped, PAIR_V2), str(tmp_path / "data/datasets/pairs/train-00000-of-00001.parquet"))
    again = run(tmp_path, params_file, policy_dir, reward_model=str(reward_model_dir))["reward_model"]["test"]
    assert again["ties"] == rm["test"]["ties"] == 0
    assert again["all"]["accuracy"] == pytest.approx(1 - accuracy)
    failed = rm_accuracy_check(round(1 - accuracy, 6) + 0.01, str(path))
    assert not failed["success"] and "below validate.min_rm_accuracy" in failed["reason"]
    assert f"over {TEST} pairs" in failed["reason"]


def test_switched_off_records_only_that(data, params_file, policy_dir):
    tmp_path, _ = data
    assert run(tmp_path, params_file, policy_dir, enabled=False) == {"enabled": False}
    check = rm_accuracy_check(0.5, str(tmp_path / "metrics/evaluate.json"))
    assert not check["success"] and "evaluate.enabled is false" in check["reason"]


def test_no_train_pairs_is_reported_and_fails_the_gate(data, params_file, policy_dir):
    tmp_path, pairs = data
    only_test = [{**p, "split": "test"} for p in pairs]
    write_table(rows_to_table(only_test, PAIR_V2), str(tmp_path / "data/datasets/pairs/train-00000-of-00001.parquet"))
    rm = run(tmp_path, params_file, policy_dir)["reward_model"]
    assert rm == {"train_pairs": 0, "test_pairs": len(pairs), "source": "trained", "error": rm["error"]}
    assert "no train pairs" in rm["error"]
    check = rm_accuracy_check(0.5, str(tmp_path / "metrics/evaluate.json"))
    assert not check["success"] and "no held-out accuracy: no train pairs" in check["reason"]


@pytest.mark.parametrize(
    "section, message",
    [
        ({"dataset": "missing"}, "missing"),  # no such dataset folder
        ({"train": {"trainable": "lora"}}, "trainable' must be one of"),
        ({"bootstrap": {"confidence": 1.5}}, "confidence must be in"),
        ({"typo": 1}, "unknown key"),
    ],
)
def test_bad_settings_fail_naming_the_problem(data, params_file, policy_dir, section, message):
    tmp_path, _ = data
    with pytest.raises((SystemExit, ValueError, FileNotFoundError), match=message):
        run(tmp_path, params_file, policy_dir, **section)


def test_gate_is_off_by_default_and_names_a_missing_evaluation(tmp_path):
    assert rm_accuracy_check(None, None) is None
    check = rm_accuracy_check(0.6, str(tmp_path / "nowhere.json"))
    assert not check["success"] and "run the evaluate stage" in check["reason"]


def test_switched_off_says_so_in_one_line_with_the_param_that_turns_it_on(data, params_file, stage_log):
    tmp_path, _ = data
    run(tmp_path, params_file, tmp_path / "no-model", enabled=False)  # off: no model is read
    lines = [r.getMessage() for r in stage_log.records]
    (line,) = [m for m in lines if "evaluate.enabled" in m]
    assert line.startswith("evaluate: off (params evaluate.enabled is false)")
    assert "`dvc exp run -S evaluate.enabled=true`" in line
    assert not any("None" in m or "accuracy" in m for m in lines)


HELD_OUT = {"n": 6, "accuracy": 0.5, "ci_low": 0.166667, "ci_high": 0.833333}


@pytest.mark.parametrize(
    "metrics, expected",
    [
        # off: what turns it on, no accuracy at all
        ({"enabled": False}, "evaluate: off (params evaluate.enabled is false): no reward model trained or measured; "
         "turn it on with `dvc exp run -S evaluate.enabled=true`; metrics in m.json"),
        # measured: the accuracy and its interval
        ({"enabled": True, "dataset": "pairs", "verified_pairs": 4, "labelers": {"a": {}},
          "reward_model": {"test_pairs": 6, "test": {"all": HELD_OUT}}},
         "evaluate: reward model accuracy on 6 held-out pairs: 0.500 (0.95 interval 0.167..0.833); 1 labelers "
         "measured on 4 verified pairs; metrics in m.json"),
        # an empty test split: why, and the param that sets its share
        ({"enabled": True, "dataset": "pairs", "verified_pairs": 0, "labelers": {},
          "reward_model": {"test_pairs": 0, "test": {"all": {"n": 0, "accuracy": None}}}},
         "evaluate: reward model not measured: no held-out pairs: the pairs dataset's test split is empty (params "
         "prompts.test_fraction sets its share of prompts); 0 labelers measured on 0 verified pairs; metrics in "
         "m.json"),
        # nothing to train on: the stage's own reason
        ({"enabled": True, "dataset": "pairs", "verified_pairs": 2, "labelers": {},
          "reward_model": {"test_pairs": 3, "error": "no train pairs: nothing to train a reward model on"}},
         "evaluate: reward model not measured: no train pairs: nothing to train a reward model on; 0 labelers "
         "measured on 2 verified pairs; metrics in m.json"),
        # every held-out pair too long to score
        ({"enabled": True, "dataset": "pairs", "verified_pairs": 2, "labelers": {},
          "reward_model": {"test_pairs": 3, "test": {"all": {"n": 0, "accuracy": None}}}},
         "evaluate: reward model not measured: all 3 held-out pairs are longer than evaluate.train.max_length; 0 "
         "labelers measured on 2 verified pairs; metrics in m.json"),
    ],
)  # fmt: skip
def test_summary_line(metrics, expected):
    assert evaluate.summary(metrics, 0.95, "m.json") == expected
