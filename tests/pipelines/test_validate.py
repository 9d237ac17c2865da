"""Stage `validate` end to end on tiny folders: reports, metrics, reruns, and failing loudly with names."""

import json
import pickle
from pathlib import Path

import pytest

from rewardmill.pipelines.config import ConfigError
from rewardmill.pipelines.validate import Target, ValidateConfig, ValidateDataset, WriteReport, main
from rewardmill.schemas import PAIR_V1
from tests.transforms.validation.conftest import PAIRS, pair_row, write_project, write_stage

PARAMS = {"beam": {"runner": "FnApiRunner"}, "validate": {"min_pairs": 1}}


def stage_args(root: Path) -> list[str]:
    data = root / "data"
    return [
        "--prompts",
        str(data / "prompts"),
        "--rollouts",
        str(data / "rollouts"),
        "--labels",
        str(data / "labels"),
        "--steps",
        str(data / "steps"),  # missing unless a test writes it: never the repository's own data/steps
        "--datasets",
        str(data / "datasets"),
        "--reports",
        str(root / "reports"),
        "--metrics",
        str(root / "metrics" / "validate.json"),
    ]


def outputs(root: Path) -> dict[str, bytes]:
    files = [*(root / "reports").rglob("*"), *(root / "metrics").rglob("*")]
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(files) if p.is_file()}


def test_valid_project_writes_reports_and_metrics_and_reruns_identically(tmp_path, params_file):
    write_project(tmp_path)
    params_file(PARAMS)
    main(stage_args(tmp_path))

    first = outputs(tmp_path)
    assert sorted(first) == ["metrics/validate.json", "reports/pairs.json", "reports/rollouts.json"]
    pairs = json.loads(first["reports/pairs.json"])
    assert pairs["success"] and pairs["rows"] == len(PAIRS) and pairs["schema"] == "pair_v1" and pairs["error"] is None
    assert {"expectation", "column", "kwargs", "success"} <= set(pairs["expectations"][0])
    assert json.loads(first["reports/rollouts.json"])["success"]

    metrics = json.loads(first["metrics/validate.json"])
    assert metrics["validation"] == {
        "pairs": {"success": True, "failed_expectations": 0},
        "rollouts": {"success": True, "failed_expectations": 0},
    }
    assert metrics["datasets"]["pairs"]["count"] == len(PAIRS) and metrics["rollouts"]["pass_rate"] == 0.5
    assert not [p.name for p in tmp_path.rglob("*") if ".tmp-" in p.name or ".old-" in p.name]

    main(stage_args(tmp_path))  # same inputs, same bytes: DVC sees no change
    assert outputs(tmp_path) == first


@pytest.mark.parametrize(
    ("pairs", "min_pairs", "expected"),
    [
        # a duplicated pair: the message names the dataset, the expectation and the pair
        (
            [*PAIRS, PAIRS[0]],
            1,
            ["dataset 'pairs' failed 1", "expect_column_values_to_be_unique(pair_id)", PAIRS[0]["pair_id"]],
        ),
        # fewer pairs than validate.min_pairs
        (PAIRS, 10, ["dataset 'pairs' failed 1", "expect_table_row_count_to_be_between: observed 3"]),
    ],
)
def test_failed_validation_exits_non_zero_naming_the_failures(tmp_path, params_file, pairs, min_pairs, expected):
    write_project(tmp_path, pairs=pairs)
    params_file({**PARAMS, "validate": {"min_pairs": min_pairs}})
    with pytest.raises(SystemExit) as exc:
        main(stage_args(tmp_path))
    message = str(exc.value.code)
    for text in expected:
        assert text in message
    assert "rollouts" not in message  # only failed datasets are named
    # reports and metrics are still written, for inspection
    assert not json.loads((tmp_path / "reports" / "pairs.json").read_text())["success"]
    metrics = json.loads((tmp_path / "metrics" / "validate.json").read_text())
    assert metrics["validation"]["pairs"] == {"success": False, "failed_expectations": 1}


def test_missing_pairs_fail_before_any_work(tmp_path, params_file):
    data = write_project(tmp_path)
    params_file(PARAMS)
    (data / "datasets" / "pairs" / "_manifest.json").unlink()
    with pytest.raises(FileNotFoundError, match="pairs/_manifest.json"):
        main(stage_args(tmp_path))
    write_stage(data / "datasets" / "pairs", PAIRS, PAIR_V1.remove_metadata(), "assemble")  # unversioned schema
    with pytest.raises(SystemExit, match="no pair_v1 dataset"):
        main(stage_args(tmp_path))
    assert not (tmp_path / "reports").exists() and not (tmp_path / "metrics").exists()


@pytest.mark.parametrize("section", [{"min_pairs": -1}, {"min_pair": 1}])
def test_bad_params_fail(tmp_path, params_file, section):
    write_project(tmp_path)
    params_file({**PARAMS, "validate": section})
    with pytest.raises(ConfigError, match="validate"):
        main(stage_args(tmp_path))


def test_config_default_and_dofns_pickle(tmp_path):
    assert ValidateConfig().min_pairs == 1
    for fn in (ValidateDataset(3), WriteReport(str(tmp_path))):
        assert vars(pickle.loads(pickle.dumps(fn))) == vars(fn)
    target = Target("pairs", str(tmp_path), "pair_v1")
    assert pickle.loads(pickle.dumps(target)) == target
    assert pair_row(0)["margin"] == pair_row(0)["score_chosen"] - pair_row(0)["score_rejected"]
