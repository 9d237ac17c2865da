"""Stage `validate` with process rewards: data/datasets/prm is validated and reported, step labels get metrics."""

import json

import pytest

from rewardmill.pipelines.validate import main
from rewardmill.schemas import PRM_V1, STEP_LABEL_V1
from tests.pipelines.test_validate import PARAMS, outputs, stage_args
from tests.transforms.validation.conftest import prm_row, relaxed, step_label_rows, write_project, write_stage

PRM_ROWS = [prm_row(0), prm_row(1), prm_row(1, labeler="judge", method="judge", soft_labels=[None] * 3)]


def write_process_rewards(root, prm_rows=PRM_ROWS, prm_schema=PRM_V1) -> None:
    """data/steps/{judge,mc} (rollouts 0 and 1; mc's rollout 1 wrong at step 2, the judge's at step 1) and
    data/datasets/prm beside write_project's folders."""
    data = root / "data"
    mc = [*step_label_rows("mc", 0, -1, 4), *step_label_rows("mc", 1, 2, 4)]
    judge = [*step_label_rows("judge", 0, -1, 0, method="judge"), *step_label_rows("judge", 1, 1, 0, method="judge")]
    write_stage(data / "steps" / "mc", mc, STEP_LABEL_V1, "steps")
    write_stage(data / "steps" / "judge", judge, STEP_LABEL_V1, "steps")
    write_stage(data / "datasets" / "prm", prm_rows, prm_schema, "assemble", {"undecided_step": 1})


def test_prm_dataset_is_validated_and_step_labels_get_metrics(tmp_path, params_file):
    write_project(tmp_path)
    write_process_rewards(tmp_path)
    params_file(PARAMS)
    main(stage_args(tmp_path))

    first = outputs(tmp_path)
    assert sorted(first) == [
        "metrics/validate.json",
        "reports/pairs.json",
        "reports/prm.json",
        "reports/rollouts.json",
    ]
    prm = json.loads(first["reports/prm.json"])
    assert prm["success"] and prm["schema"] == "prm_v1" and prm["rows"] == len(PRM_ROWS)
    assert "_labels_match_first_error" in {e["column"] for e in prm["expectations"]}

    metrics = json.loads(first["metrics/validate.json"])
    assert metrics["validation"]["prm"] == {"success": True, "failed_expectations": 0}
    assert metrics["prm"]["prm"]["rows"] == 3 and metrics["prm"]["prm"]["methods"] == {"judge": 1, "mc": 2}
    assert metrics["steps"]["mc"]["continuations"] == 24 and metrics["steps"]["judge"]["continuations"] == 0
    assert metrics["step_agreement"] == {
        "judge|mc": {
            "n": 2,
            "first_error_agreement": 0.5,  # rollout 1: step 1 vs step 2
            "continuations": {"judge": 0, "mc": 24},
            "continuation_ratio": None,  # the judge spent no continuations
        }
    }
    assert metrics["stages"]["datasets/prm"]["rejected"] == 1 and metrics["stages"]["steps/mc"]["rows"] == 6

    main(stage_args(tmp_path))  # same inputs, same bytes
    assert outputs(tmp_path) == first


def test_broken_prm_dataset_fails_naming_the_expectation(tmp_path, params_file):
    write_project(tmp_path)
    bad = prm_row(3, labels=[True, True, True])  # its first error (step 2) labelled correct
    write_process_rewards(tmp_path, prm_rows=[*PRM_ROWS, bad], prm_schema=relaxed(PRM_V1))
    params_file(PARAMS)
    with pytest.raises(SystemExit) as exc:
        main(stage_args(tmp_path))
    message = str(exc.value.code)
    assert "dataset 'prm' failed 1" in message
    assert "expect_column_values_to_be_in_set(_labels_match_first_error)" in message
    assert bad["rollout_id"] in message and "'pairs'" not in message
    metrics = json.loads((tmp_path / "metrics" / "validate.json").read_text())
    assert metrics["validation"]["prm"] == {"success": False, "failed_expectations": 1}
    assert metrics["validation"]["pairs"]["success"]


def test_empty_prm_dataset_passes(tmp_path, params_file):
    # every rollout's step labels can be rejected by assemble (tiny settings); the rejects say why
    write_project(tmp_path)
    write_process_rewards(tmp_path, prm_rows=[])
    params_file(PARAMS)
    main(stage_args(tmp_path))
    metrics = json.loads((tmp_path / "metrics" / "validate.json").read_text())
    assert metrics["validation"]["prm"] == {"success": True, "failed_expectations": 0}
    assert metrics["prm"]["prm"]["rows"] == 0 and metrics["prm"]["prm"]["mean_steps"] is None
