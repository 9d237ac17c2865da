"""Stage `validate` end to end on tiny folders: reports, Data Docs, metrics, plots, reruns, and failing loudly.

A Great Expectations run costs about a second per dataset, so the valid project is one stage run (and its rerun)
with every dataset kind, and the failures are one run with several broken rules at once.
"""

import json
import pickle
from pathlib import Path

import pytest

from rewardmill.pipelines.validate import Target, ValidateConfig, ValidateDataset, WriteReport, main
from rewardmill.schemas import PAIR_V2
from rewardmill.transforms.config import ConfigError, load_section
from rewardmill.transforms.view.model import DEFAULT_MAX_ROWS
from rewardmill.transforms.view.page import view_page
from tests.transforms.validation.conftest import (
    PAIRS,
    PRM_ROWS,
    RL_ROWS,
    pair_row,
    write_process_rewards,
    write_project,
    write_stage,
)

PARAMS = {"beam": {"runner": "FnApiRunner"}, "validate": {"min_pairs": 1}}
DOCS = "reports/data_docs"
RUN = "validate/19700101T000000.000000Z"  # the fixed run identifier of every Data Docs validation page


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
        "--plots",
        str(root / "plots"),
    ]


def outputs(root: Path) -> dict[str, bytes]:
    files = [*(root / "reports").rglob("*"), *(root / "metrics").rglob("*"), *(root / "plots").rglob("*")]
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(files) if p.is_file()}


@pytest.mark.slow
def test_valid_project_writes_reports_docs_metrics_plots_and_reruns_identically(tmp_path, params_file):
    write_project(tmp_path)
    write_process_rewards(tmp_path)
    manifest = tmp_path / "data/datasets/_rewards/_manifest.json"  # as assemble records its weights
    weights = {"panel": {"weight": 0.0, "source": "measured", "reason": "...", "rows": 44, "kappa": -0.077151}}
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "reward_weights": weights}))
    params_file(PARAMS)
    main(stage_args(tmp_path))

    first = outputs(tmp_path)
    names = ["pairs", "prm", "rewards", "rl", "rollouts", "sft", "splits"]
    assert sorted(p for p in first if not p.startswith(DOCS)) == [
        "metrics/validate.json",
        "plots/length_reward.csv",
        "plots/margins.csv",
        "plots/reward_histogram.csv",
        "reports/label_qa.html",
        "reports/label_qa.json",
        *(f"reports/{name}.json" for name in names),
        "reports/view.html",
    ]
    pairs = json.loads(first["reports/pairs.json"])
    assert pairs["success"] and pairs["rows"] == len(PAIRS) and pairs["schema"] == "pair_v2" and pairs["error"] is None
    assert {"expectation", "column", "kwargs", "success"} <= set(pairs["expectations"][0])
    assert json.loads(first["reports/rewards.json"])["schema"] == "reward_v1"
    assert json.loads(first["reports/splits.json"])["rows"] == 4  # prompts 0-3 across the datasets

    # Data Docs: one suite page and one validation page per report; the GX inputs are not left behind
    assert f"{DOCS}/index.html" in first and not [p for p in first if p.startswith("reports/_docs/")]
    for name in names:
        assert f"{DOCS}/expectations/{name}.html" in first
        assert f"{DOCS}/validations/{name}/{RUN}/rewardmill-{name}.html" in first

    metrics = json.loads(first["metrics/validate.json"])
    assert json.loads(first["reports/label_qa.json"])["gates"] == ["math_answer"] and "label_qa" in metrics
    assert metrics["reward_weights"] == {"panel": {"weight": 0.0, "source": "measured", "kappa": -0.077151}}
    assert metrics["validation"] == dict.fromkeys(names, {"success": True, "failed_expectations": 0})
    assert metrics["datasets"]["pairs"]["count"] == len(PAIRS) and metrics["rollouts"]["pass_rate"] == 0.5
    assert metrics["rl"]["rl"]["rows"] == len(RL_ROWS) and metrics["rewards"]["length_correlation"]["n"] == 4
    assert metrics["split_leakage"] == {"prompts": 0} and metrics["stages"]["datasets/sft"]["rejected"] == 2
    # process rewards: the PRM dataset and the steps labels' statistics and agreement
    assert metrics["prm"]["prm"]["rows"] == len(PRM_ROWS) and metrics["prm"]["prm"]["methods"] == {"judge": 1, "mc": 2}
    assert metrics["step_agreement"]["judge|mc"]["first_error_agreement"] == 0.5  # rollout 1: step 1 vs step 2
    assert first["plots/margins.csv"] == b"margin,share\n0.75,0.666667\n1.0,1.0\n"
    # the dataset viewer: the page `rewardmill view` writes for the same folders
    data = tmp_path / "data"
    assert first["reports/view.html"].decode() == view_page(data / "datasets", labels=data / "labels", max_rows=2000)
    assert not [p.name for p in tmp_path.rglob("*") if ".tmp-" in p.name or ".old-" in p.name]

    main(stage_args(tmp_path))  # same inputs, same bytes (Data Docs included): DVC sees no change
    assert outputs(tmp_path) == first


@pytest.mark.slow
def test_failed_validation_exits_non_zero_naming_the_failures(tmp_path, params_file):
    # a duplicated pair, prompt 0 in train and in test, and fewer pairs than validate.min_pairs
    leak = pair_row(0, pair_id="leak", split="test")
    write_project(tmp_path, pairs=[*PAIRS, PAIRS[0], leak], configs=False)
    params_file({**PARAMS, "validate": {"min_pairs": 10, "view": False}})
    with pytest.raises(SystemExit) as exc:
        main(stage_args(tmp_path))
    message, leaked = str(exc.value.code), leak["prompt_id"]
    for text in [
        f"validation failed (Data Docs: {tmp_path / DOCS / 'index.html'})",
        "dataset 'pairs' failed 2",
        f"expect_column_values_to_be_unique(pair_id): 2 unexpected of 5, e.g. ['{PAIRS[0]['pair_id']}'",
        "expect_table_row_count_to_be_between: observed 5",
        "dataset 'splits' failed 1",
        f"expect_column_values_to_be_in_set(_single_split): 1 unexpected of 3, e.g. [False] at ['{leaked}']",
    ]:
        assert text in message
    assert "rollouts" not in message  # only failed datasets are named
    # reports, Data Docs, metrics and plots are still written, for inspection
    assert not json.loads((tmp_path / "reports" / "pairs.json").read_text())["success"]
    assert (tmp_path / DOCS / "index.html").is_file() and (tmp_path / "plots" / "margins.csv").is_file()
    assert not (tmp_path / "reports" / "view.html").exists()  # validate.view: false
    metrics = json.loads((tmp_path / "metrics" / "validate.json").read_text())
    assert metrics["validation"]["pairs"] == {"success": False, "failed_expectations": 2}
    assert metrics["validation"]["splits"] == {"success": False, "failed_expectations": 1}
    assert metrics["split_leakage"] == {"prompts": 1}


def test_missing_pairs_fail_before_any_work(tmp_path, params_file):
    data = write_project(tmp_path, configs=False)
    params_file(PARAMS)
    (data / "datasets" / "pairs" / "_manifest.json").unlink()
    with pytest.raises(FileNotFoundError, match="pairs/_manifest.json"):
        main(stage_args(tmp_path))
    write_stage(data / "datasets" / "pairs", PAIRS, PAIR_V2.remove_metadata(), "assemble")  # unversioned schema
    with pytest.raises(SystemExit, match=r"no pair dataset \(\['pair_v2', 'pair_v3'\]\)"):
        main(stage_args(tmp_path))
    assert not [p for p in ("reports", "metrics", "plots") if (tmp_path / p).exists()]


@pytest.mark.parametrize(
    "section", [{"min_pairs": -1}, {"min_pair": 1}, {"min_rl_rows": -1}, {"view_max_rows": -1}, {"view": "yes"}]
)
def test_bad_params_fail(tmp_path, params_file, section):
    write_project(tmp_path, configs=False)
    params_file({**PARAMS, "validate": section})
    with pytest.raises(ConfigError, match="validate"):
        main(stage_args(tmp_path))


def test_config_floors_and_dofns_pickle(tmp_path):
    cfg = ValidateConfig()
    assert (cfg.min_pairs, cfg.min_rl_rows, cfg.min_sft_rows, cfg.view, cfg.view_max_rows) == (1, 1, 0, True, 2000)
    # empty PRM, rewards and split check pass; rollouts (unlisted) need a row
    assert ValidateConfig(min_pairs=3).min_rows() == {
        "pair_v2": 3,
        "pair_v3": 3,  # the multi-turn versions have the same floors
        "rl_v1": 1,
        "rl_v2": 1,
        "sft_v1": 0,
        "sft_v2": 0,
        "prm_v1": 0,
        "reward_v1": 0,
        "split_check_v1": 0,
    }
    for fn in (ValidateDataset(cfg.min_rows()), WriteReport(str(tmp_path))):
        assert vars(pickle.loads(pickle.dumps(fn))) == vars(fn)
    target = Target("pairs", str(tmp_path), "pair_v2")
    assert pickle.loads(pickle.dumps(target)) == target
    assert pair_row(0)["margin"] == pair_row(0)["score_chosen"] - pair_row(0)["score_rejected"]


def test_repo_params_view_matches_the_view_commands_default():
    """reports/view.html of `dvc repro` is then the page `rewardmill view` writes with its defaults, byte for byte."""
    cfg = load_section(ValidateConfig, "validate", Path(__file__).parents[2] / "params.yaml")
    assert cfg.view and cfg.view_max_rows == DEFAULT_MAX_ROWS
