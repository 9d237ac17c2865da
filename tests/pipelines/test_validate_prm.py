"""Stage `validate` with process rewards: a broken PRM dataset fails naming its rows, an empty one passes.

The valid PRM dataset, the step labels' metrics and the rerun are part of test_validate's valid project.
"""

import json

import pytest

from rewardmill.pipelines.validate import main
from rewardmill.schemas import PRM_V1
from tests.pipelines.test_validate import DOCS, PARAMS, RUN, stage_args
from tests.transforms.validation.conftest import PRM_ROWS, prm_row, relaxed, write_process_rewards, write_project


@pytest.mark.slow
def test_broken_prm_dataset_fails_naming_the_expectation(tmp_path, params_file):
    write_project(tmp_path, configs=False)
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
    page = (tmp_path / DOCS / "validations" / "prm" / RUN / "rewardmill-prm.html").read_text()
    assert "_labels_match_first_error" in page  # the failure is in Data Docs too


@pytest.mark.slow
def test_empty_prm_dataset_passes(tmp_path, params_file):
    # every rollout's step labels can be rejected by assemble (tiny settings); the rejects say why
    write_project(tmp_path, configs=False)
    write_process_rewards(tmp_path, prm_rows=[])
    params_file(PARAMS)
    main(stage_args(tmp_path))
    metrics = json.loads((tmp_path / "metrics" / "validate.json").read_text())
    assert metrics["validation"]["prm"] == {"success": True, "failed_expectations": 0}
    assert metrics["prm"]["prm"]["rows"] == 0 and metrics["prm"]["prm"]["mean_steps"] is None
    assert metrics["stages"]["datasets/prm"]["rejects"] == {"undecided_step": 1}
