"""A judge's labels follow its model, not its folder's path: swap the model behind `models/policy` and a cached
label stage labels again (issue: label@appeal returned the old model's labels from the cache)."""

import json
import shutil

import torch
from safetensors.torch import load_file, save_file

from rewardmill.pipelines import label
from rewardmill.schemas import ROLLOUT_V2
from rewardmill.transforms.io.parquet import read_rows, rows_to_table, write_table
from rewardmill.transforms.sampling.policy import FINGERPRINT_FILE, PolicyInfo, fingerprint
from tests.conftest import only_labelers, tiny_params
from tests.pipelines.test_label_and_assemble import rollout


def other_model(policy_dir, dest) -> None:
    """A different model in `dest`: the default one with its final norm halved (other logits, other P(yes)),
    fingerprinted as the model stage would."""
    shutil.copytree(policy_dir, dest)
    weights = load_file(str(dest / "model.safetensors"))
    weights["model.norm.weight"] = weights["model.norm.weight"] * torch.tensor(0.5)
    save_file(weights, str(dest / "model.safetensors"), metadata={"format": "pt"})
    info = PolicyInfo(name="other", source="test", fingerprint=fingerprint(dest))
    (dest / FINGERPRINT_FILE).write_text(json.dumps(info.__dict__))


def judged(folder) -> dict:
    return {r["rollout_id"]: (r["score"], r["confidence"], r["raw"]) for r in read_rows(str(folder))}


def test_a_swapped_judge_model_is_not_served_the_old_models_labels(tmp_path, params_file, policy_dir):
    rows = [rollout("p1", 0, "The answer is 4."), rollout("p1", 1, "I think it is 5."), rollout("p2", 0, "4")]
    rollouts = tmp_path / "rollouts"
    rollouts.mkdir()
    write_table(rows_to_table(rows, ROLLOUT_V2), str(rollouts / "part-00000-of-00001.parquet"))
    model = tmp_path / "models" / "policy"
    shutil.copytree(policy_dir, model)
    params = only_labelers(tiny_params(), ())
    params["labelers"] = {
        "judge": {"labeler": "reference_judge", "tasks": ["math"], "config": {"backend": {"model": str(model)}}}
    }
    params_file(params)
    cache = tmp_path / "cache" / "labels"

    def run(name: str, cached: bool = True):
        argv = ["judge", "--rollouts", str(rollouts), "--out", str(tmp_path / name)]
        label.main(argv + (["--cache", str(cache)] if cached else []))
        return judged(tmp_path / name)

    first = run("first")
    shutil.rmtree(model)
    other_model(policy_dir, model)  # `dvc repro` after a model.source change: same path, new weights
    after_swap = run("after_swap")
    fresh = run("fresh", cached=False)
    assert after_swap == fresh  # the new model's own labels
    assert after_swap != first  # and they differ: the old ones would have been stale
