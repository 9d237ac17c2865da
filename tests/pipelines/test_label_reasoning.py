"""The label stage on ROLLOUT_V3 rows split by rollouts.reasoning: a trace cut off before its answer, or an answer only
inside the trace, gets no credit from any labeler, and the label says why; a finished answer is labeled as usual.

The rows are written by hand (the default model writes no `<think>` trace): the split itself is
transforms/sampling/reasoning.py's, and the rows are what the rollouts stage writes for each status."""

import pytest

from rewardmill.pipelines import label as label_stage
from rewardmill.schemas import ROLLOUT_V3
from rewardmill.transforms.config import from_dict
from rewardmill.transforms.io.parquet import read_rows, rows_to_table, write_table
from rewardmill.transforms.labelers.length import LengthPenaltyConfig, LengthPenaltyVerifier
from rewardmill.transforms.sampling.params import Sample
from rewardmill.transforms.sampling.reasoning import single_turn_columns, split_reasoning
from rewardmill.transforms.stage.outputs import write_manifest
from tests.conftest import tiny_params
from tests.pipelines.test_label_and_assemble import rollout

TEXTS = {
    "finished": "<think>2 + 2 is 4</think>\\boxed{4}",
    "cut": "<think>2 + 2 is 4, so the answer is \\boxed{4}",  # the right answer, but only in a trace that never closed
    "inside": "<think>\\boxed{4}</think>",  # the answer only inside the trace
    "plain": "\\boxed{4}",  # no trace at all
}


def v3_row(name: str, text: str) -> dict:
    split = split_reasoning(text)
    sample = Sample(index=0, seed=0, completion=text, n_tokens=len(text), finish_reason="stop", logprob_sum=-1.0)
    columns = single_turn_columns(sample, split)
    return {**rollout(name, 0, columns.pop("completion")), **columns, "reasoning_tokens": 3}


@pytest.mark.slow  # two label stages
def test_a_cut_trace_gets_no_credit_from_any_labeler_and_says_why(tmp_path, params_file):
    rollouts = tmp_path / "rollouts"
    rollouts.mkdir()
    rows = [v3_row(name, text) for name, text in TEXTS.items()]
    write_table(rows_to_table(rows, ROLLOUT_V3), str(rollouts / "part-00000-of-00001.parquet"))
    write_manifest(rollouts, stage="rollouts", schema=ROLLOUT_V3, config={}, extra={})
    params = tiny_params()
    # math_answer, and a labeler that would credit the empty answer (short is inside its band)
    params["labelers"] = {
        "math_answer": {"labeler": "math_answer", "config": {}},
        "short": {
            "labeler": "length",
            "tasks": ["math"],
            "config": {"unit": "chars", "target": 0, "penalize": "long"},
        },
    }
    params_file(params)
    # the premise: asked, the length labeler credits the empty answer a cut trace leaves
    short = LengthPenaltyVerifier(from_dict(LengthPenaltyConfig, params["labelers"]["short"]["config"], "short"))
    assert (short.label("", 0).verdict, short.label("", 0).score) == ("correct", 1.0)
    verdicts = {}
    for key in params["labelers"]:
        out = tmp_path / key
        label_stage.main([key, "--rollouts", str(rollouts), "--out", str(out)])
        verdicts[key] = {r["rollout_id"]: r for r in read_rows(str(out))}
    math = verdicts["math_answer"]
    assert (math["finished-r0"]["verdict"], math["finished-r0"]["score"]) == ("correct", 1.0)
    assert (math["plain-r0"]["verdict"], math["plain-r0"]["score"]) == ("correct", 1.0)
    for key, labels in verdicts.items():
        for name, why in (("cut", "cut off before its answer"), ("inside", "only inside the reasoning")):
            label = labels[f"{name}-r0"]
            assert (label["verdict"], label["score"]) == ("incorrect", 0.0), (key, label)
            assert why in label["rationale"], (key, label)
