"""Reading folders for the viewer: assemble's dataset folder (configs, every _rejects/, the labels beside it), the
export's Hub layout, and clear errors for a missing or wrong folder. Folders are written by the project's writers."""

import json
from pathlib import Path

import pytest

from rewardmill.schemas import LABEL_V1, PAIR_V2
from rewardmill.transforms.export.hub_layout import spec_for, write_config
from rewardmill.transforms.view.folders import DATASETS, EXPORT, folder_kind, pretty_name, read_datasets, read_export
from tests.transforms.export.rows import pair, prm, rl, sft
from tests.transforms.validation.conftest import (
    PAIRS,
    label_row,
    pair_row,
    write_process_rewards,
    write_project,
    write_stage,
)


@pytest.fixture
def data(tmp_path) -> Path:
    """data/{prompts,rollouts,labels/math_answer,steps,datasets/{pairs,prm,rl,sft,_rewards}} (validation's)."""
    write_project(tmp_path)
    write_process_rewards(tmp_path)
    return tmp_path / "data"


def test_dataset_folder_configs_rejects_and_labels(data):
    source = read_datasets(data / "datasets", data / "labels", max_rows=100)
    assert source.kind == DATASETS == folder_kind(data / "datasets")
    assert [(c.name, c.schema, c.total, len(c.rows)) for c in source.configs] == [
        ("pairs", "pair_v2", 3, 3),
        ("prm", "prm_v1", 3, 3),
        ("rl", "rl_v1", 4, 4),
        ("sft", "sft_v1", 2, 2),
    ]
    ids = [r["pair_id"] for r in source.configs[0].rows]
    assert ids == sorted(ids)  # id order, whatever the shard order
    prm_keys = [(r["labeler"], r["rollout_id"]) for r in source.configs[1].rows]
    assert prm_keys == sorted(prm_keys)
    assert {r.dataset: (r.total, [x["reason"] for x in r.reasons]) for r in source.rejects} == {
        "_rewards": (0, []),  # every folder's _rejects/, the internal ones too
        "pairs": (2, ["tie"]),
        "prm": (1, ["undecided_step"]),
        "rl": (1, ["duplicate_prompt"]),
        "sft": (2, ["below_min_reward", "no_correct_rollout"]),
    }
    # the labels of the shown pairs' (and SFT rows') rollouts, by rollout id: rollouts 0..3 have math_answer labels
    pair0 = next(r for r in source.configs[0].rows if r["pair_id"] == PAIRS[0]["pair_id"])
    assert [x["verdict"] for x in source.labels[pair0["chosen_rollout_id"]]] == ["correct"]
    assert [x["verdict"] for x in source.labels[pair0["rejected_rollout_id"]]] == ["incorrect"]
    assert source.labels_read and set(source.labels) <= {r["chosen_rollout_id"] for r in PAIRS} | {
        r["rejected_rollout_id"] for r in PAIRS
    }
    # sft's label_sources name panel@1, whose folder is absent: said once, the rows still show
    assert source.notes == [
        f"{data / 'labels' / 'panel'}: missing; the verdicts and rationales of panel are not shown"
    ]


def test_max_rows_keeps_the_first_rows_in_id_order(data):
    full = read_datasets(data / "datasets", None, max_rows=100)
    capped = read_datasets(data / "datasets", None, max_rows=2)
    for a, b in zip(full.configs, capped.configs, strict=True):
        assert b.total == a.total and b.rows == a.rows[:2]
    assert read_datasets(data / "datasets", None, max_rows=0).configs[0].rows == []
    assert not full.labels_read and full.labels == {} and full.notes == []  # labels not looked up: nothing to say


def test_missing_or_broken_label_folders_are_noted(data):
    source = read_datasets(data / "datasets", data / "nowhere", max_rows=10)
    assert not source.labels_read and source.labels == {}
    assert source.notes == [
        f"{data / 'nowhere'}: no label folder, so pairs show no verdicts or rationales (dvc repro label)"
    ]
    bad = [{k: v for k, v in label_row(0, "correct", 1.0).items() if k != "verdict"}]
    write_stage(data / "labels" / "panel", bad, LABEL_V1.remove(LABEL_V1.get_field_index("verdict")), "label")
    notes = read_datasets(data / "datasets", data / "labels", max_rows=10).notes
    assert notes == [
        f"{data / 'labels' / 'panel'}: not label rows (no column(s) ['verdict']); its labels are not shown"
    ]


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda d: d / "missing", FileNotFoundError, r"missing: no such folder; `dvc repro assemble` builds"),
        (lambda d: d / "datasets" / "pairs" / "_manifest.json", NotADirectoryError, "not a folder"),
        (lambda d: d / "labels", FileNotFoundError, "its folders hold label_v1, not pair/prm/rl/sft datasets"),
        (lambda d: d / "rollouts", FileNotFoundError, r"no <config>/_manifest.json\) nor an export"),
        (lambda d: d / "steps", FileNotFoundError, "neither a dataset folder"),
    ],
)
def test_wrong_folders_fail_naming_path_and_what_to_run(data, make, error, match):
    with pytest.raises(error, match=match) as exc:
        folder_kind(make(data))
    assert str(make(data)) in str(exc.value) and "dvc repro" in str(exc.value) and "\n" not in str(exc.value)


def test_unfinished_config_fails(data):
    (data / "datasets" / "hard_pairs").mkdir()  # assemble killed before its manifest
    with pytest.raises(FileNotFoundError, match=r"hard_pairs/_manifest.json: missing; .*dvc repro assemble"):
        read_datasets(data / "datasets", None, 10)


def test_unknown_schema_is_shown_as_columns(data):
    write_stage(data / "datasets" / "extra", [pair_row(0)], PAIR_V2.remove_metadata(), "assemble")
    source = read_datasets(data / "datasets", None, 10)
    assert [(c.name, c.schema) for c in source.configs if c.name == "extra"] == [("extra", "unversioned")]


def export_folder(root: Path, card: str = "---\npretty_name: tiny <export>\n---\n# card\n") -> Path:
    for name, rows in {
        "pairs": [pair(i, "test" if i % 3 == 0 else "train") for i in range(5)],
        "prm": [prm(i, "mc_steps") for i in range(3)],
        "rl": [rl(i) for i in range(4)],
        "sft": [sft(i) for i in range(2)],
    }.items():
        schema = {"pairs": "pair_v2", "prm": "prm_v1", "rl": "rl_v1", "sft": "sft_v1"}[name]
        write_config(rows, name, spec_for(schema), str(root), num_shards=2)
    (root / "README.md").write_text(card)
    return root


def test_export_folder(tmp_path):
    root = export_folder(tmp_path / "export")
    assert folder_kind(root) == EXPORT
    source = read_export(root, max_rows=3)
    assert [(c.name, c.schema, c.total, len(c.rows)) for c in source.configs] == [
        ("pairs", "pair_v2", 5, 3),
        ("prm", "prm_v1", 3, 3),
        ("rl", "rl_v1", 4, 3),
        ("sft", "sft_v1", 2, 2),
    ]
    ids = sorted(pair(i)["pair_id"] for i in range(5))
    assert [r["pair_id"] for r in source.configs[0].rows] == ids[:3]  # across splits and shards, in id order
    assert source.title == "tiny <export>" and source.folder is None  # the page of an export names no path
    assert source.rejects is None and not source.labels_read and "not part of the export" in source.notes[0]


@pytest.mark.parametrize(
    "card, expected",
    [
        ("---\npretty_name: My data\nlicense: mit\n---\nbody\n", "My data"),
        ("---\nlicense: mit\n---\nbody\n", None),  # no pretty_name
        ("# no front matter\n", None),
        ("---\n: [unclosed\n---\n", None),  # YAML that does not parse
        ("---\n- a list\n---\n", None),
        ("---\npretty_name: '  '\n---\n", None),
    ],
)
def test_pretty_name(tmp_path, card, expected):
    (tmp_path / "README.md").write_text(card)
    assert pretty_name(tmp_path / "README.md") == expected


def test_export_without_rows_fails(tmp_path):
    (tmp_path / "export" / "data").mkdir(parents=True)
    (tmp_path / "export" / "README.md").write_text(json.dumps({}))
    with pytest.raises(FileNotFoundError, match=r"export/data: no config folders with Parquet shards; run `dvc repro"):
        read_export(tmp_path / "export", 10)
