"""export of a `prm` config (PRM_V1) beside `pairs`: Hub layout, card, offline load_dataset, byte-identical reruns."""

import re

import pytest
import yaml

from rewardmill.schemas import PAIR_V2, PRM_V1
from rewardmill.transforms.export.hub_layout import plan_shards, spec_for, to_table
from tests.pipelines import test_export as export_tests
from tests.transforms.export.rows import prm

# The export tests' fixtures: a project with an assembled `pairs` config (num_shards 2), and no network.
project = export_tests.project
offline = export_tests.offline

SHARD = re.compile(r"^data/prm/(train|test)-\d{5}-of-\d{5}\.parquet$")


# 6 rollouts, each labelled by both steps labelers: 8 train rows, 4 test rows.
ROWS = [prm(i, labeler, "test" if i % 3 == 0 else "train") for i in range(6) for labeler in ("mc_steps", "judge")]


@pytest.fixture
def prm_project(project):
    """The export tests' project (pairs, policy, params with num_shards 2) plus a `prm` config in 2 input shards."""
    export_tests.write_config_folder(
        project / "data/datasets/prm",
        PRM_V1,
        ROWS,
        rejects={"orphan_step_label": 1},
        params_hash="8" * 64,
        step_labelers=["judge", "mc_steps"],
        step_methods={"judge": "judge", "mc_steps": "mc"},
    )
    return project


def test_prm_exports_beside_pairs_and_loads_offline(prm_project, offline):
    out = export_tests.run("export")
    files = sorted(export_tests.sha256s(out))
    prm_files = [f for f in files if f.startswith("data/prm/")]
    assert prm_files == [
        "data/prm/test-00000-of-00002.parquet",
        "data/prm/test-00001-of-00002.parquet",
        "data/prm/train-00000-of-00002.parquet",
        "data/prm/train-00001-of-00002.parquet",
    ]
    assert all(SHARD.match(f) for f in prm_files)
    assert len(files) == 1 + 4 + 4 + 1  # README.md, the pairs shards, the prm shards, viewer.html: nothing else

    ds = offline.load_dataset(str(out), "prm", cache_dir=str(prm_project / "hf-cache"))
    assert {name: split.num_rows for name, split in ds.items()} == {"train": 8, "test": 4}
    for name, split in ds.items():
        assert split.column_names == PRM_V1.names
        for row in split:
            assert isinstance(row["prompt"], str) and row["prompt"]
            assert len(row["labels"]) == len(row["completions"]) == len(row["soft_labels"]) >= 1
            assert all(isinstance(label, bool) for label in row["labels"])
            assert row["split"] == name
    expected = {(r["labeler"], r["rollout_id"]): r for r in ROWS}
    loaded = [row for split in ds.values() for row in split]
    assert {(r["labeler"], r["rollout_id"]): r for r in loaded} == expected  # every row, unchanged
    pairs = offline.load_dataset(str(out), "pairs", cache_dir=str(prm_project / "hf-cache"))
    assert {name: split.num_rows for name, split in pairs.items()} == {"train": 7, "test": 3}

    card = (out / "README.md").read_text()
    meta = yaml.safe_load(card.split("---\n")[1])
    assert [c["config_name"] for c in meta["configs"]] == ["pairs", "prm"]
    assert meta["configs"][1]["data_files"] == [
        {"split": "train", "path": "data/prm/train-*.parquet"},
        {"split": "test", "path": "data/prm/test-*.parquet"},
    ]
    info = {i["config_name"]: i for i in meta["dataset_info"]}
    assert [(s["name"], s["num_examples"]) for s in info["prm"]["splits"]] == [("train", 8), ("test", 4)]
    assert "- `prm` (12 rows: train 8, test 4): Process-reward rows in TRL's stepwise-supervision format" in card
    assert "| `prm` | `orphan_step_label` | 1 |" in card  # rejects by reason
    assert "| `prm` | `mc_steps` | - | mc | 6 |" in card  # the step labelers with their method, under Label methods
    assert "| `prm` | `judge` | - | judge | 6 |" in card
    assert "### `prm`: PRMTrainer" in card and "from trl.experimental.prm import PRMConfig, PRMTrainer" in card
    # prm's own column docs, not the pairs' (where `prompt` is a list of messages)
    assert "| `prompt` | `string` | the prompt's last user message as a plain string" in card
    assert "| `labels` | `list<bool>` | per step: True before the first wrong step" in card


def test_prm_rerun_gives_identical_bytes(prm_project):
    first = export_tests.sha256s(export_tests.run("a/export"))
    second = export_tests.sha256s(export_tests.run("b/export"))
    assert first == second and any(f.startswith("data/prm/") for f in first)


def test_prm_shards_sorted_by_labeler_then_rollout():
    plan = plan_shards(to_table(ROWS[::-1], PRM_V1), "prm", spec_for("prm_v1").id_column, 1)
    for split, _, table in plan:
        keys = list(zip(table.column("labeler").to_pylist(), table.column("rollout_id").to_pylist(), strict=True))
        assert keys == sorted((r["labeler"], r["rollout_id"]) for r in ROWS if r["split"] == split)


def test_prm_rows_must_be_unique_per_labeler_and_rollout():
    with pytest.raises(ValueError, match=r"\('labeler', 'rollout_id'\) must be unique.*'mc_steps', 'r00'"):
        plan_shards(to_table([*ROWS, ROWS[0]], PRM_V1), "prm", spec_for("prm_v1").id_column, 1)


def test_pairs_spec_is_unchanged():
    assert spec_for("pair_v2").id_column == "pair_id" and spec_for("pair_v2").schema == PAIR_V2


def test_export_without_prm_has_no_prm_files(project):
    out = export_tests.run("export")
    assert not (out / "data/prm").exists() and (out / "data/pairs").is_dir()
