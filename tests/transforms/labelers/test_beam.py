import dataclasses
import pickle

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.beam import NOT_APPLICABLE, REJECTED, LabelAll, LabelRollouts
from rewardmill.transforms.labelers.math_answer import MathAnswerConfig, MathAnswerVerifier

ROWS = [
    {"rollout_id": "r1", "prompt_id": "p", "completion": "\\boxed{4}", "reference": "4"},
    {"rollout_id": "r2", "prompt_id": "p", "completion": "\\boxed{5}", "reference": "4"},
    {"rollout_id": "r3", "prompt_id": "p", "completion": "\\boxed{5}", "reference": None},
    {"rollout_id": "r4", "prompt_id": "p", "completion": "no reference column"},
]


class Exploding(MathAnswerVerifier):
    def label(self, completion, reference):
        raise RuntimeError("boom")


def test_main_and_dead_letter_outputs():
    with TestPipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
        out = (
            p
            | beam.Create(ROWS)
            | beam.ParDo(LabelRollouts(MathAnswerVerifier, MathAnswerConfig(), "math")).with_outputs(
                REJECTED, main="labels"
            )
        )
        verdicts = out.labels | "verdicts" >> beam.Map(lambda r: (r["rollout_id"], r["verdict"], r["labeler"]))
        assert_that(
            verdicts,
            equal_to([("r1", "correct", "math"), ("r2", "incorrect", "math"), ("r3", "abstain", "math")]),
            label="labels",
        )
        reasons = out[REJECTED] | "reasons" >> beam.Map(lambda r: (r["row_id"], r["reason"]))
        assert_that(reasons, equal_to([("r4", "missing_column")]), label="rejects")


def test_a_raising_labeler_gives_error_labels_not_a_failed_stage():
    with TestPipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
        out = p | beam.Create(ROWS[:2]) | beam.ParDo(LabelRollouts(Exploding, MathAnswerConfig(), "math"))
        assert_that(
            out | beam.Map(lambda r: (r["verdict"], r["score"], "boom" in r["rationale"])),
            equal_to([("error", None, True)] * 2),
        )


def test_dofn_pickles():
    dofn = pickle.loads(pickle.dumps(LabelRollouts(MathAnswerVerifier, MathAnswerConfig(timeout_seconds=3), "m")))
    assert dofn.config.timeout_seconds == 3 and dofn.key == "m"


class MathOnly(MathAnswerVerifier):
    tasks = ("math",)


class Counting(MathAnswerVerifier):
    calls_file = None

    def label(self, completion, reference):
        with open(self.calls_file, "a") as fh:
            fh.write(completion + "\n")
        return super().label(completion, reference)


def test_rows_of_other_tasks_are_routed_away_and_counted():
    rows = [{**ROWS[0], "task": "math"}, {**ROWS[1], "task": "code"}]
    with TestPipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
        out = (
            p
            | beam.Create(rows)
            | beam.ParDo(LabelRollouts(MathOnly, MathAnswerConfig(), "math")).with_outputs(
                REJECTED, NOT_APPLICABLE, main="labels"
            )
        )
        assert_that(out.labels | "ids" >> beam.Map(lambda r: r["rollout_id"]), equal_to(["r1"]), label="labels")
        assert_that(out[NOT_APPLICABLE], equal_to([("code", "r2")]), label="routed")


def test_second_run_reads_the_cache_instead_of_labeling(tmp_path):
    Counting.calls_file = str(tmp_path / "calls")
    cache = str(tmp_path / "cache")
    rows = ROWS[:3] + [{**ROWS[0], "rollout_id": "r1-copy"}]  # the copy has the same content: one computation
    for run in range(2):
        with TestPipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
            out = p | beam.Create(rows) | beam.ParDo(LabelRollouts(Counting, MathAnswerConfig(), "m", cache))
            assert_that(
                out | beam.Map(lambda r: r["verdict"]), equal_to(["correct", "incorrect", "abstain", "correct"])
            )
        calls = (tmp_path / "calls").read_text().splitlines()
        assert len(calls) == 3, f"run {run}: {calls}"  # run 2 computed nothing


def test_params_tasks_override_the_labelers_own_and_rows_without_a_task_are_labeled():
    rows = [{**ROWS[0], "task": "math"}, {**ROWS[1], "task": "puzzle"}, {**ROWS[0], "rollout_id": "r9"}]
    with TestPipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
        out = (
            p
            | beam.Create(rows)
            | beam.ParDo(LabelRollouts(MathOnly, MathAnswerConfig(), "m", tasks=("puzzle",))).with_outputs(
                REJECTED, NOT_APPLICABLE, main="labels"
            )
        )
        ids = out.labels | "ids" >> beam.Map(lambda r: r["rollout_id"])
        assert_that(ids, equal_to(["r2", "r9"]), label="labels")
        assert_that(out[NOT_APPLICABLE], equal_to([("math", "r1")]), label="routed")


class LongestOfGroup:
    """A group labeler for the wrapper's tests: 1.0 for the longest completion of each prompt, else 0.0."""

    name = "longest"
    version = "1"
    reads = ("completion",)
    tasks = ("math",)
    calls_file = None

    @dataclasses.dataclass(frozen=True)
    class Config:
        pass

    def __init__(self, config=None):
        self.config = config

    def label(self, completion):
        raise AssertionError("a group labeler is called through label_group")

    def label_group(self, rows):
        with open(self.calls_file, "a") as fh:
            fh.write(f"{len(rows)}\n")
        longest = max(len(completion) for (completion,) in rows)
        return [Label(float(len(c) == longest), 1.0, "correct" if len(c) == longest else "incorrect") for (c,) in rows]


@pytest.mark.slow
def test_group_labelers_see_each_prompts_rollouts_together_and_are_cached(tmp_path):
    LongestOfGroup.calls_file = str(tmp_path / "calls")
    rows = [
        {"rollout_id": "a1", "prompt_id": "a", "task": "math", "completion": "x"},
        {"rollout_id": "a2", "prompt_id": "a", "task": "math", "completion": "xxx"},
        {"rollout_id": "a3", "prompt_id": "a", "task": "code", "completion": "xxxxx"},  # routed away before grouping
        {"rollout_id": "b1", "prompt_id": "b", "task": "math", "completion": "yy"},
        {"rollout_id": "b2", "prompt_id": "b", "task": "math"},  # no completion: rejected, not in the group
    ]
    for _ in range(2):
        with TestPipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
            dofn = LabelRollouts(LongestOfGroup, LongestOfGroup.Config(), "longest", str(tmp_path / "cache"))
            out = p | beam.Create(rows) | LabelAll(dofn)
            scores = out.labels | "scores" >> beam.Map(lambda r: (r["rollout_id"], r["score"]))
            assert_that(scores, equal_to([("a1", 0.0), ("a2", 1.0), ("b1", 1.0)]), label="labels")
            assert_that(out[NOT_APPLICABLE], equal_to([("code", "a3")]), label="routed")
            reasons = out[REJECTED] | "reasons" >> beam.Map(lambda r: (r["row_id"], r["reason"]))
            assert_that(reasons, equal_to([("b2", "missing_column")]), label="rejects")
    assert sorted((tmp_path / "calls").read_text().split()) == ["1", "2"]  # one call per prompt, none on rerun
