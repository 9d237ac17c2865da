"""The prompts and label stages with reasoning-gym: a `reasoning_gym` prompt source keeps each entry in the prompt's
metadata, and the `reasoning_gym` label stage joins that metadata from --prompts (the rollouts do not carry it), so
every label equals the task's own score_answer on the entry reasoning-gym made. Rollouts written from the prompts,
one right and one wrong answer each (the label, not the policy, is under test here)."""

import json

import pytest

from rewardmill.pipelines import label
from rewardmill.schemas import ROLLOUT_V2
from rewardmill.transforms.errors import UserError
from rewardmill.transforms.io.parquet import read_rows, rows_to_table, write_table
from tests.conftest import tiny_params
from tests.pipelines.stage_data import make_prompts

pytestmark = pytest.mark.slow  # two Beam stages

TASKS = {"leg_counting": {"count": 3, "seed": 1}, "countdown": {"count": 3, "seed": 2}}


def rollouts_of(prompts: list[dict], out) -> None:
    rows = []
    for p in prompts:
        for index, answer in enumerate([p["reference"], "0"]):
            rows.append({**{k: p[k] for k in ("prompt_id", "task", "messages", "reference", "tests", "constraints",
                                              "rubric", "split")},  # fmt: skip
                         "rollout_id": f"{p['prompt_id'][:8]}-{index}", "sample_index": index,
                         "completion": f"<answer>{answer}</answer>", "n_tokens": 3, "finish_reason": "stop",
                         "logprob_sum": -1.0, "policy": {"name": "m", "fingerprint": "f", "backend": "transformers"},
                         "sampling": "{}", "seed": index})  # fmt: skip
    out.mkdir(parents=True)
    write_table(rows_to_table(rows, ROLLOUT_V2), str(out / "part-00000-of-00001.parquet"))


def test_labels_are_the_tasks_scores_with_the_prompts_metadata_joined(tmp_path, params_file):
    from reasoning_gym import create_dataset

    params = tiny_params()
    params["prompts"]["sources"] = [{"name": "rg", "kind": "reasoning_gym", "tasks": TASKS}]
    params["labelers"] = {"rg": {"labeler": "reasoning_gym", "tasks": ["reasoning"]}}
    prompts_dir = make_prompts(tmp_path, params_file, params)
    prompts = read_rows(str(prompts_dir))
    assert len(prompts) == 6 and {p["task"] for p in prompts} == {"reasoning"}
    rollouts = tmp_path / "data/rollouts"
    rollouts_of(prompts, rollouts)
    out = tmp_path / "labels"
    with pytest.raises(UserError, match="--prompts data/prompts"):  # said, not six rows of missing columns
        label.main(["rg", "--rollouts", str(rollouts), "--out", str(out)])
    label.main(["rg", "--rollouts", str(rollouts), "--out", str(out), "--prompts", str(prompts_dir)])

    by_id = {p["prompt_id"]: p for p in prompts}
    rows = {r["rollout_id"]: r for r in read_rows(str(rollouts))}
    labels = read_rows(str(out))
    assert len(labels) == 12
    for lab in labels:
        rollout = rows[lab["rollout_id"]]
        spec = json.loads(by_id[rollout["prompt_id"]]["metadata"])["reasoning_gym"]
        dataset = create_dataset(spec["task"], seed=spec["seed"], size=TASKS[spec["task"]]["count"])
        answer = rollout["completion"].removeprefix("<answer>").removesuffix("</answer>")
        assert lab["score"] == dataset.score_answer(answer, dataset[spec["index"]]), lab
    assert {lab["verdict"] for lab in labels} == {"correct", "incorrect"}
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["inputs"].keys() >= {"rollouts", "prompts"}
