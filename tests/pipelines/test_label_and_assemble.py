"""label@NAME and assemble drivers on hand-made rollouts (no model needed)."""

import json

import pytest

from rewardmill.pipelines import assemble, label
from rewardmill.schemas import ROLLOUT_V2
from rewardmill.transforms.config import ConfigError
from rewardmill.transforms.io.parquet import read_rows, rows_to_table, write_table
from rewardmill.transforms.labelers.code_tests import CodeTestsVerifier
from rewardmill.transforms.labelers.math_answer import MathAnswerVerifier
from rewardmill.transforms.stage.outputs import count_rejects
from tests.conftest import only_labelers, tiny_params

MSG = [{"role": "user", "content": "What is 2 + 2?"}]


def rollout(prompt_id: str, index: int, completion: str, reference: str | None = "4", finish: str = "stop") -> dict:
    return {
        "rollout_id": f"{prompt_id}-r{index}",
        "prompt_id": prompt_id,
        "task": "math",
        "messages": MSG,
        "reference": reference,
        "tests": None,
        "constraints": None,
        "rubric": None,
        "split": "train",
        "sample_index": index,
        "completion": completion,
        "n_tokens": len(completion),
        "finish_reason": finish,
        "logprob_sum": -1.0,
        "policy": {"name": "m", "fingerprint": "f", "backend": "transformers"},
        "sampling": "{}",
        "seed": index,
    }


ROLLOUTS = [
    rollout("p1", 0, "\\boxed{4}"),
    rollout("p1", 1, "\\boxed{5}"),
    rollout("p1", 2, "\\boxed{4} again"),  # pair
    rollout("p2", 0, "\\boxed{3}"),
    rollout("p2", 1, "\\boxed{5}"),  # tie (both wrong)
    rollout("p3", 0, "\\boxed{4}", reference=None),
    rollout("p3", 1, "\\boxed{4}", reference=None),  # unscorable
]


@pytest.fixture
def rollouts_dir(tmp_path):
    out = tmp_path / "data/rollouts"
    out.mkdir(parents=True)
    write_table(rows_to_table(ROLLOUTS, ROLLOUT_V2), str(out / "part-00000-of-00001.parquet"))
    return out


@pytest.mark.slow
def test_label_then_assemble(tmp_path, params_file, rollouts_dir):
    params = only_labelers(tiny_params(), ("math_answer", "code_tests"))  # the rule verifiers
    params["assemble"]["filters"]["dedup"].update(exact=False, near_threshold=None)  # every prompt asks MSG
    params.pop("steps")  # pairs only (tests/pipelines/test_assemble_prm.py covers the PRM output)
    params_file(params)
    labels_dir = tmp_path / "data/labels"
    label.main(["math_answer", "--rollouts", str(rollouts_dir), "--out", str(labels_dir / "math_answer")])
    labels = {r["rollout_id"]: r for r in read_rows(str(labels_dir / "math_answer"))}
    assert len(labels) == len(ROLLOUTS)
    assert labels["p1-r0"]["verdict"] == "correct" and labels["p1-r1"]["verdict"] == "incorrect"
    assert labels["p3-r0"]["verdict"] == "abstain" and labels["p3-r0"]["score"] is None
    manifest = json.loads((labels_dir / "math_answer/_manifest.json").read_text())
    assert manifest["labeler_version"] == MathAnswerVerifier.version and manifest["rows"] == len(ROLLOUTS)
    # code_tests applies to code prompts only: every math row is counted as not applicable, none is labeled
    label.main(["code_tests", "--rollouts", str(rollouts_dir), "--out", str(labels_dir / "code_tests")])
    manifest = json.loads((labels_dir / "code_tests/_manifest.json").read_text())
    assert manifest["rows"] == 0 and manifest["not_applicable"] == {"math": len(ROLLOUTS)}

    out = tmp_path / "data/datasets"
    assemble.main(["--rollouts", str(rollouts_dir), "--labels", str(labels_dir), "--out", str(out)])
    pairs = read_rows(str(out / "pairs"))
    assert sorted((p["pair_type"], p["chosen_rollout_id"], p["rejected_rollout_id"]) for p in pairs) == [
        ("best_vs_worst", "p1-r0", "p1-r1"),  # tie between r0 and r2 at the top broken by the lower rollout_id
        ("correct_vs_incorrect", "p1-r2", "p1-r1"),  # (r0, r1) is best_vs_worst's already: kept once
    ]
    assert pairs[0]["label_sources"] == [f"math_answer@{MathAnswerVerifier.version}"] and pairs[0]["margin"] == 1.0
    assert pairs[0]["chosen_correct"] is True and pairs[0]["rejected_correct"] is False
    # every prompt without a pair of a strategy says why, per strategy
    assert sorted((r["row_id"], r["reason"]) for r in read_rows(str(out / "pairs/_rejects"))) == [
        ("p2/best_vs_worst", "tie"),
        ("p2/correct_vs_incorrect", "tie"),  # the shared reasons come before the strategy's own
        ("p3/best_vs_worst", "too_few_scored"),  # no reference: nothing scored
        ("p3/correct_vs_incorrect", "too_few_scored"),
    ]
    assert count_rejects(out / "_rewards") == {"missing_score": 2}
    manifest = json.loads((out / "pairs/_manifest.json").read_text())
    assert manifest["rows"] == 2 and manifest["pair_types"] == {"best_vs_worst": 1, "correct_vs_incorrect": 1}
    assert manifest["counts"]["rollouts"] == len(ROLLOUTS) and manifest["counts"]["pairs_repeated"] == 1
    assert manifest["labeler_versions"] == {"math_answer": [MathAnswerVerifier.version]}
    rl = {r["prompt_id"]: r for r in read_rows(str(out / "rl"))}
    assert (rl["p1"]["pass_rate"], rl["p2"]["difficulty"], rl["p3"]["difficulty"]) == (2 / 3, "unsolved", "unverified")
    assert [r["rollout_id"] for r in read_rows(str(out / "sft"))] == ["p1-r0"]


def test_gates_must_name_defined_labelers(tmp_path, params_file, rollouts_dir):
    params = only_labelers(tiny_params(), ("math_answer",))
    params["assemble"]["aggregate"]["weights"] = {"math_judge": 1.0}  # no such labeler in params
    params_file(params)
    with pytest.raises(ConfigError, match="math_judge"):
        assemble.main(["--rollouts", str(rollouts_dir), "--labels", str(tmp_path / "l"), "--out", str(tmp_path / "o")])
    assert not (tmp_path / "o").exists()


def test_unknown_labeler_config_key_fails_before_work(tmp_path, params_file, rollouts_dir):
    params = tiny_params()
    params["labelers"]["math_answer"]["config"]["timeout"] = 3  # typo of timeout_seconds
    params_file(params)
    with pytest.raises(ConfigError, match="timeout"):
        label.main(["math_answer", "--rollouts", str(rollouts_dir), "--out", str(tmp_path / "l")])
    assert not (tmp_path / "l").exists()


def test_unknown_labeler_name(tmp_path, params_file, rollouts_dir):
    params_file(tiny_params())
    with pytest.raises(ConfigError, match="labelers.nope"):
        label.main(["nope", "--rollouts", str(rollouts_dir), "--out", str(tmp_path / "l")])


def test_code_labels_and_the_manifest_name_the_sandbox(tmp_path, params_file):
    """label@code_tests on an honest and a hacking completion: the hack scores 0, and the stage manifest says which
    sandbox mechanism ran every label."""
    tests = json.dumps({"style": "asserts", "asserts": ["assert add(1, 2) == 3"]})
    honest = "```python\ndef add(a, b):\n    return a + b\n```"
    hack = "```python\nclass Any:\n    def __eq__(self, other):\n        return True\n\n"
    hack += "def add(a, b):\n    return Any()\n```"
    rows = [
        {**rollout("c1", i, text), "task": "code", "reference": None, "tests": tests}
        for i, text in enumerate((honest, hack))
    ]
    src = tmp_path / "rollouts"
    src.mkdir()
    write_table(rows_to_table(rows, ROLLOUT_V2), str(src / "part-00000-of-00001.parquet"))
    params_file(only_labelers(tiny_params(), ("code_tests",)))
    out = tmp_path / "labels"
    label.main(["code_tests", "--rollouts", str(src), "--out", str(out)])
    assert {r["rollout_id"]: r["score"] for r in read_rows(str(out))} == {"c1-r0": 1.0, "c1-r1": 0.0}
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["summary"] == {"isolation": {"bwrap": 2}}
    assert manifest["labeler_version"] == CodeTestsVerifier.version
