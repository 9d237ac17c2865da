"""The label stage with a reward model (conftest `reward_model_dir`, trained in the session): labels hold the model's
logits raw and their per-run z-scores as scores, pairwise mode gives Bradley-Terry confidences, a rerun is served
from the cache, and the rewards then go through assemble into pairs."""

import json

import pytest

from rewardmill.pipelines import assemble, label
from rewardmill.schemas import ROLLOUT_V2
from rewardmill.transforms.io.parquet import read_rows, rows_to_table, write_table
from rewardmill.transforms.labelers.reward_model import RewardModelConfig, RewardModelScorer, sigmoid
from tests.conftest import only_labelers, tiny_params
from tests.pipelines.test_label_and_assemble import MSG, rollout

COMPLETIONS = ["2 + 2 = 4. The answer is 4.", "The answer is 11.", "4", "Four, since two and two make four."]


@pytest.fixture
def rollouts(tmp_path):
    rows = [rollout(p, i, c) for p in ("p1", "p2") for i, c in enumerate(COMPLETIONS)]
    out = tmp_path / "data/rollouts"
    out.mkdir(parents=True)
    write_table(rows_to_table(rows, ROLLOUT_V2), str(out / "part-00000-of-00001.parquet"))
    return out


def run(tmp_path, params_file, rollouts, model, **config) -> tuple[list[dict], dict]:
    params = only_labelers(tiny_params(), ("math_answer",))
    params["labelers"]["rm"] = {"labeler": "reward_model", "config": {"model": str(model), **config}}
    params_file(params)
    out, metrics = tmp_path / "data/labels/rm", tmp_path / "rm.json"
    args = ["--rollouts", str(rollouts), "--out", str(out), "--cache", str(tmp_path / "cache")]
    label.main(["rm", *args, "--metrics", str(metrics)])
    return sorted(read_rows(str(out)), key=lambda r: r["rollout_id"]), json.loads(metrics.read_text())


def test_labels_are_z_scored_per_run_and_keep_the_logit(tmp_path, params_file, rollouts, reward_model_dir):
    labels, metrics = run(tmp_path, params_file, rollouts, reward_model_dir)
    assert len(labels) == 2 * len(COMPLETIONS) and metrics["labels"] == len(labels)
    logits = [json.loads(r["raw"])["reward"] for r in labels]
    direct = RewardModelScorer(RewardModelConfig(model=str(reward_model_dir)))
    assert logits[: len(COMPLETIONS)] == pytest.approx(
        [json.loads(one[0].raw)["reward"] for one in direct.label_many([(MSG, c) for c in COMPLETIONS])], abs=1e-4
    )
    mean = sum(logits) / len(logits)
    std = (sum((x - mean) ** 2 for x in logits) / len(logits)) ** 0.5
    assert [r["score"] for r in labels] == pytest.approx([sigmoid((x - mean) / std) for x in logits])
    assert {r["labeler"] for r in labels} == {"rm"} and {r["aspect"] for r in labels} == {"reward"}
    # a rerun computes nothing (the cache holds the logits) and writes the same labels
    again, _ = run(tmp_path, params_file, rollouts, reward_model_dir)
    assert again == labels


def test_pairwise_mode_and_assemble(tmp_path, params_file, rollouts, reward_model_dir):
    labels, _ = run(tmp_path, params_file, rollouts, reward_model_dir, mode="pairwise", normalize="sigmoid")
    by_prompt = {}
    for r in labels:
        by_prompt.setdefault(r["prompt_id"], []).append(r)
    for rows in by_prompt.values():  # each rollout: the Bradley-Terry probability of its surest comparison
        logits = [json.loads(r["raw"])["reward"] for r in rows]
        for r, x in zip(rows, logits, strict=True):
            assert r["confidence"] == pytest.approx(sigmoid(max(abs(x - o) for o in logits)))
            assert r["score"] == pytest.approx(sigmoid(x))
    # the reward model ranks within math_answer's verdicts: assemble builds pairs from both
    label.main(["math_answer", "--rollouts", str(rollouts), "--out", str(tmp_path / "data/labels/math_answer")])
    params = only_labelers(tiny_params(), ("math_answer",))
    params["labelers"]["rm"] = {"labeler": "reward_model", "config": {"model": str(reward_model_dir)}}
    params["assemble"]["filters"]["dedup"].update(exact=False, near_threshold=None)
    params.pop("steps")
    params_file(params)
    out = tmp_path / "data/datasets"
    args = ["--rollouts", str(rollouts), "--labels", str(tmp_path / "data/labels"), "--out", str(out)]
    assemble.main(args)
    pairs = read_rows(str(out / "pairs"))
    assert pairs and all(f"rm@{RewardModelScorer.version}" in p["label_sources"] for p in pairs)
