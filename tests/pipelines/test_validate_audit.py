"""Stage `validate` audits the configured labelers on the gold packs: metrics `labeler_audit`, and a precision below
`validate.min_labeler_precision` fails the stage naming the labeler and its precision."""

import json

import pytest

from rewardmill.pipelines.validate import ValidateConfig, main
from rewardmill.transforms.config import ConfigError
from tests.pipelines.test_audit import MATH, gold, write_packs
from tests.pipelines.test_validate import PARAMS, stage_args
from tests.transforms.validation.conftest import write_project

LABELERS = {"math_answer": {"labeler": "math_answer", "tasks": ["math"]}, "panel": {"labeler": "panel_judge"}}


@pytest.mark.slow
def test_low_precision_fails_the_stage_naming_the_labeler(tmp_path, params_file):
    write_project(tmp_path, configs=False)
    # a gold row that says a right answer is wrong: math_answer credits it, so half its credit is "wrong"
    packs = write_packs(tmp_path / "packs", [MATH[0], gold("math/mislabeled/1", "wrong", "\\boxed{4}")])
    params_file({**PARAMS, "labelers": LABELERS, "validate": {"view": False, "min_labeler_precision": 0.9}})
    with pytest.raises(SystemExit) as exc:
        main([*stage_args(tmp_path), "--packs", str(packs)])
    message = str(exc.value.code)
    assert "validate: labeler 'math_answer' (math_answer) has precision 0.50 (0.09..0.91, n=2)" in message
    assert "below validate.min_labeler_precision 0.9; credited wrong rows: ['math/mislabeled/1']" in message
    audit = json.loads((tmp_path / "metrics" / "validate.json").read_text())["labeler_audit"]  # still written
    assert audit["check"]["success"] is False
    assert audit["labelers"]["math_answer"]["precision"]["value"] == 0.5
    assert audit["labelers"]["math_answer"]["disagreements"] == ["math/mislabeled/1"]  # ids only in the metrics
    assert audit["labelers"]["panel"]["skipped"].startswith("model-based: not run")  # validate.audit_judges: false


def test_defaults_and_bad_values():
    assert (ValidateConfig().min_labeler_precision, ValidateConfig().audit_judges) == (0.9, False)
    with pytest.raises(ValueError, match="min_labeler_precision must be in"):
        ValidateConfig(min_labeler_precision=1.5)


def test_a_bad_pack_fails_naming_file_and_line(tmp_path, params_file):
    write_project(tmp_path, configs=False)
    packs = write_packs(tmp_path / "packs", [{**MATH[0], "gold": "yes"}])
    params_file({**PARAMS, "labelers": LABELERS, "validate": {"view": False}})
    with pytest.raises(SystemExit, match=r"validate: .*math.jsonl:1: a `honest` row must have gold 'correct'"):
        main([*stage_args(tmp_path), "--packs", str(packs)])


def test_a_typo_in_the_new_keys_fails(tmp_path, params_file):
    params_file({**PARAMS, "validate": {"min_labeler_precision": None, "min_labeler_precison": 1}})
    with pytest.raises(ConfigError, match="min_labeler_precison"):  # a typo is an unknown key
        main(stage_args(tmp_path))
