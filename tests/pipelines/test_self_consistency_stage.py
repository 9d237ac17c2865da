"""Reference-free math prompts: the prompts stage keeps them behind `keep_unreferenced_math`, and the label stage's
self_consistency labeler labels their rollouts against the majority answer (a pseudo-reference)."""

import json

from rewardmill.pipelines import label
from rewardmill.schemas import ROLLOUT_V2
from rewardmill.transforms.io.parquet import read_rows, rows_to_table, write_table
from tests.conftest import only_labelers, tiny_params
from tests.pipelines.stage_data import make_prompts
from tests.pipelines.test_label_and_assemble import rollout

ANSWERS = {"p1": ["$9$", "The answer is $9$.", "$8$", "$9$"], "p2": ["$1$", "$2$", "$1$", "$2$"]}


def unreferenced_source(tmp_path) -> dict:
    path = tmp_path / "questions.jsonl"
    lines = [{"prompt": "What is 4 + 5?"}, {"prompt": "What is 7 - 3?", "reference": "4"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return {"name": "questions", "kind": "file", "path": str(path), "task": "math"}


def test_prompts_keep_unreferenced_math_only_behind_the_flag(tmp_path, params_file):
    params = tiny_params()
    params["prompts"]["sources"] = [unreferenced_source(tmp_path)]
    rejected = make_prompts(tmp_path / "strict", params_file, params)
    assert [r["reference"] for r in read_rows(str(rejected))] == ["4"]
    assert [r["reason"] for r in read_rows(str(rejected / "_rejects"))] == ["missing_reference"]
    params["prompts"]["keep_unreferenced_math"] = True
    kept = make_prompts(tmp_path / "kept", params_file, params)
    assert sorted(r["reference"] or "-" for r in read_rows(str(kept))) == ["-", "4"]


def test_self_consistency_labels_reference_free_rollouts(tmp_path, params_file):
    rows = [rollout(p, i, c, reference=None) for p, answers in ANSWERS.items() for i, c in enumerate(answers)]
    rollouts = tmp_path / "rollouts"
    rollouts.mkdir()
    write_table(rows_to_table(rows, ROLLOUT_V2), str(rollouts / "part-00000-of-00001.parquet"))
    params = only_labelers(tiny_params(), ("math_answer",))
    params["labelers"]["sc"] = {"labeler": "self_consistency", "config": {"min_vote_share": 0.5}}
    params_file(params)
    out, metrics = tmp_path / "labels", tmp_path / "sc.json"
    label.main(["sc", "--rollouts", str(rollouts), "--out", str(out), "--metrics", str(metrics)])
    labels = {r["rollout_id"]: r for r in read_rows(str(out))}
    # p1: 9 has 3 of 4 votes; p2: 1 and 2 tie, so no pseudo-reference and every rollout abstains
    assert [labels[f"p1-r{i}"]["score"] for i in range(4)] == [1.0, 1.0, 0.0, 1.0]
    assert {labels[f"p1-r{i}"]["confidence"] for i in range(4)} == {0.75}
    assert all(labels[f"p2-r{i}"]["score"] is None for i in range(4))
    assert "no majority" in labels["p2-r0"]["rationale"]
    summary = json.loads(metrics.read_text())["labeler"]
    assert summary["decided"] == 4 and summary["mean_vote_share"] == 0.75
