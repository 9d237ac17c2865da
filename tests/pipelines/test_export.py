"""export stage: Hub layout on disk, offline load_dataset of every config (pairs, prm, rl, sft), byte-identical reruns,
params checks, provenance helpers (git, dvc.lock stages, label manifests and judge models)."""

import hashlib
import json
import pickle
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from rewardmill.pipelines.export import (
    ExportConfig,
    _WriteCard,
    _WriteConfig,
    discover_configs,
    git_commit,
    label_provenance,
    main,
    read_lock,
    upstream_lock_digest,
)
from rewardmill.schemas import PAIR_V2, REJECT_V1, REWARD_V1, RL_V1, SFT_V1
from rewardmill.transforms.config import ConfigError, load_section
from rewardmill.transforms.export.provenance import Provenance, stage_outs
from rewardmill.transforms.stage.outputs import reject
from rewardmill.transforms.view.page import view_page
from tests.transforms.export.rows import pair, rl, sft

SHARD = re.compile(r"^data/pairs/(train|test)-\d{5}-of-\d{5}\.parquet$")


def write_config_folder(folder: Path, schema: pa.Schema, rows: list[dict], parts: int = 2, **manifest) -> None:
    """An assembled config folder: `parts` Parquet shards, `_rejects/` and `_manifest.json` (as assemble writes)."""
    (folder / "_rejects").mkdir(parents=True)
    cut = len(rows) * 3 // 5 if parts == 2 else len(rows)
    for k, part in enumerate((rows[:cut], rows[cut:]) if parts == 2 else (rows,)):
        pq.write_table(pa.Table.from_pylist(part, schema=schema), folder / f"part-{k:05d}-of-{parts:05d}.parquet")
    schema_name = schema.metadata[b"rewardmill.schema"].decode()
    base = {
        "stage": "assemble",
        "schema": schema_name,
        "rows": len(rows),
        "rejects": {},
        "params_hash": "9" * 64,
        "params": {},
        "inputs": {},
    }
    (folder / "_manifest.json").write_text(json.dumps({**base, **manifest}))


def write_params(path: Path, export: dict) -> None:
    path.write_text(yaml.safe_dump({"beam": {"runner": "FnApiRunner"}, "export": export}))


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder (not a git checkout) with an assembled `pairs` config in 2 input shards and a policy."""
    pairs = tmp_path / "data/datasets/pairs"
    rows = [pair(i, "test" if i % 4 == 0 else "train") for i in range(10)]  # 7 train, 3 test
    write_config_folder(
        pairs,
        PAIR_V2,
        rows,
        rejects={"tie": 1},
        labelers=["math_answer"],
        labeler_versions={"math_answer": ["1"]},
        pair_types={"best_vs_worst": 10},
    )
    rejects = [reject("assemble", "q99", "tie", "equal scores")]
    pq.write_table(pa.Table.from_pylist(rejects, schema=REJECT_V1), pairs / "_rejects/part-00000-of-00001.parquet")
    (tmp_path / "models/policy").mkdir(parents=True)
    policy = {"name": "tiny", "source": "builtin:tiny", "fingerprint": "f" * 64}
    (tmp_path / "models/policy/rewardmill_policy.json").write_text(json.dumps(policy))
    write_params(tmp_path / "params.yaml", {"num_shards": 2, "pretty_name": "tiny pairs"})
    monkeypatch.setenv("REWARDMILL_PARAMS", str(tmp_path / "params.yaml"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def all_configs(project):
    """The project plus `rl`, `sft` and an internal `_rewards` folder (assemble's, never exported)."""
    datasets = project / "data/datasets"
    prompts = [rl(i, "test" if i % 4 == 0 else "train", n_correct=[0, 1, 2, 4, None][i % 5]) for i in range(9)]
    write_config_folder(
        datasets / "rl",
        RL_V1,
        prompts,
        rejects={"no_samples": 2},
        labelers=["math_answer"],
        labeler_versions={"math_answer": ["1"]},  # as assemble writes it: every version that scored rows
    )
    write_config_folder(
        datasets / "sft",
        SFT_V1,
        [sft(i, "test" if i % 4 == 0 else "train") for i in range(6)],
        parts=1,
        labelers=["appeal", "math_answer"],
    )
    write_config_folder(datasets / "_rewards", REWARD_V1, [], parts=1)
    return project


def run(out: str, *extra: str) -> Path:
    main(["--datasets", "data/datasets", "--model", "models/policy", "--out", out, *extra])
    return Path(out)


def sha256s(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def offline(monkeypatch):
    """Nothing may reach the Hub: offline flags for datasets/huggingface_hub, and no outbound sockets at all."""
    import datasets
    import huggingface_hub.constants

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)

    def refuse(self, address):
        raise OSError(f"test tried to connect to {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    return datasets


def test_export_is_hub_layout_and_loads_offline(project, offline):
    out = run("export")
    files = sorted(sha256s(out))
    assert files == [
        "README.md",
        "data/pairs/test-00000-of-00002.parquet",
        "data/pairs/test-00001-of-00002.parquet",
        "data/pairs/train-00000-of-00002.parquet",
        "data/pairs/train-00001-of-00002.parquet",
        "viewer.html",
    ]  # nothing else: no manifest, no rejects, no temp files
    assert all(SHARD.match(f) for f in files[1:-1])
    assert not list(project.glob("export.*"))  # the temp folder was renamed away

    ds = offline.load_dataset(str(out), "pairs", cache_dir=str(project / "hf-cache"))
    assert {name: split.num_rows for name, split in ds.items()} == {"train": 7, "test": 3}
    assert ds["train"].column_names == PAIR_V2.names
    row = ds["train"][0]
    for column in ("prompt", "chosen", "rejected"):
        assert row[column] and all(set(m) == {"role", "content"} for m in row[column])
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]

    card = (out / "README.md").read_text()
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta["pretty_name"] == "tiny pairs"
    assert meta["configs"][0]["data_files"] == [
        {"split": "train", "path": "data/pairs/train-*.parquet"},
        {"split": "test", "path": "data/pairs/test-*.parquet"},
    ]
    assert "not recorded (no git checkout)" in card and "f" * 64 in card and "| `pairs` | `tie` | 1 |" in card
    # the offline viewer page: linked from the card, the page `rewardmill view export` writes
    assert "## Browse the rows\n\n[`viewer.html`](viewer.html) is one static HTML page" in card
    assert (out / "viewer.html").read_text() == view_page(out)


def test_rerun_gives_identical_bytes(project):
    first = sha256s(run("a/export"))
    second = sha256s(run("b/export"))
    again = sha256s(run("a/export"))  # replaces the folder in place
    assert first == second == again  # the viewer page too: it names no path
    assert len(first) == 6


def test_every_config_folder_is_exported_and_loads(project, offline):
    shutil.copytree(project / "data/datasets/pairs", project / "data/datasets/hard_pairs")
    out = run("export")
    meta = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])
    assert [c["config_name"] for c in meta["configs"]] == ["hard_pairs", "pairs"]
    assert [c.get("default") for c in meta["configs"]] == [None, True]
    ds = offline.load_dataset(str(out), "hard_pairs", cache_dir=str(project / "hf-cache"))
    assert {name: split.num_rows for name, split in ds.items()} == {"train": 7, "test": 3}


def test_dofns_pickle():
    cfg = ExportConfig()
    for fn in (
        _WriteConfig("in", "out", 1, {"pairs": {"schema": "pair_v2"}}),
        _WriteCard("out", cfg, Provenance(params_hash="0"), {}, None),
    ):
        assert pickle.loads(pickle.dumps(fn)).__dict__.keys() == fn.__dict__.keys()


@pytest.mark.parametrize(
    "export, match",
    [
        ({"num_shard": 2}, "unknown key"),  # typo of num_shards
        ({"num_shards": 0}, "num_shards"),
        ({"num_shards": "2"}, "must be int"),
        ({"license": ""}, "must not be empty"),
    ],
)
def test_bad_params_are_rejected_before_any_work(project, export, match):
    write_params(project / "params.yaml", export)
    with pytest.raises(ConfigError, match=match):
        run("export")
    assert not (project / "export").exists()


def test_repo_params_section_loads():
    cfg = load_section(ExportConfig, "export", Path(__file__).parents[2] / "params.yaml")
    assert cfg.num_shards >= 1 and cfg.license


def test_config_folders_must_be_exportable(project):
    bad = project / "data/datasets/prompts"
    bad.mkdir()
    with pytest.raises(FileNotFoundError, match="_manifest.json"):
        discover_configs("data/datasets")
    (bad / "_manifest.json").write_text(json.dumps({"schema": "prompt_v1"}))
    with pytest.raises(ValueError, match="no export spec"):
        run("export")
    assert not (project / "export").exists()


LOCK = {
    "schema": "2.0",
    "stages": {
        "prompts": {"cmd": "p", "outs": [{"path": "data/prompts", "md5": "1"}]},
        "model": {"cmd": "m", "outs": [{"path": "models/policy", "md5": "2"}]},
        "assemble": {
            "cmd": "a",
            "deps": [{"path": "data/prompts", "md5": "1"}],
            "outs": [{"path": "data/datasets", "md5": "3"}],
        },
        "validate": {"cmd": "v", "deps": [{"path": "data/datasets", "md5": "3"}], "outs": [{"path": "reports"}]},
        "export": {"cmd": "e", "deps": [{"path": "data/datasets", "md5": "3"}], "outs": [{"path": "export"}]},
    },
}


def digest(tmp_path: Path, lock: dict) -> str | None:
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump(lock))
    return upstream_lock_digest(tmp_path / "dvc.lock", [tmp_path / "data/datasets", tmp_path / "models/policy"])


def test_lock_digest_covers_only_upstream_stages(tmp_path):
    base = digest(tmp_path, LOCK)
    assert base and len(base) == 64
    stages = LOCK["stages"]
    # This stage's own entry and sibling stages do not change it, so a forced rerun gives the same card...
    unrelated = {
        **stages,
        "export": {**stages["export"], "outs": [{"path": "export", "md5": "new"}]},
        "validate": {**stages["validate"], "cmd": "changed"},
    }
    assert digest(tmp_path, {**LOCK, "stages": unrelated}) == base
    # ...while any upstream stage, however far back, does.
    upstream = {**stages, "prompts": {**stages["prompts"], "outs": [{"path": "data/prompts", "md5": "9"}]}}
    assert digest(tmp_path, {**LOCK, "stages": upstream}) != base
    assert upstream_lock_digest(tmp_path / "missing.lock", ["data/datasets"]) is None
    assert digest(tmp_path, {"schema": "2.0", "stages": {}}) is None


def test_git_commit(tmp_path):
    assert git_commit(tmp_path) is None  # not a checkout
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    assert git_commit(tmp_path) is None  # no commit yet
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    assert re.fullmatch(r"[0-9a-f]{40}", git_commit(tmp_path) or "")


def test_every_config_loads_with_its_columns_and_rows(all_configs, offline):
    """Acceptance (issue 6): pairs, rl and sft (prm: test_export_prm.py) load by config name, `_rewards` stays out."""
    out = run("export")
    assert sorted(p.name for p in (out / "data").iterdir()) == ["pairs", "rl", "sft"]  # not `_rewards`
    meta = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])
    assert [c["config_name"] for c in meta["configs"]] == ["pairs", "rl", "sft"]
    expected = {
        "pairs": (PAIR_V2, {"train": 7, "test": 3}),
        "rl": (RL_V1, {"train": 6, "test": 3}),
        "sft": (SFT_V1, {"train": 4, "test": 2}),
    }
    for name, (schema, counts) in expected.items():
        ds = offline.load_dataset(str(out), name, cache_dir=str(all_configs / "hf-cache"))
        assert {split: d.num_rows for split, d in ds.items()} == counts
        assert all(d.column_names == schema.names for d in ds.values())
    rl_rows = offline.load_dataset(str(out), "rl", cache_dir=str(all_configs / "hf-cache"))["train"]
    assert all(isinstance(r["prompt"], list) and r["prompt"][0]["role"] == "user" for r in rl_rows)
    sft_rows = offline.load_dataset(str(out), "sft", cache_dir=str(all_configs / "hf-cache"))["train"]
    assert all([m["role"] for m in r["completion"]] == ["assistant"] for r in sft_rows)


def test_pairs_load_as_trl_conversational_preference(project, offline):
    """TRL's DPO/reward trainers read `prompt`, `chosen`, `rejected` as they are: lists of {role, content} messages,
    user (and system) turns in the prompt, assistant turns in the answers; `margin` a float (TRL is not installed)."""
    ds = offline.load_dataset(str(run("export")), "pairs", cache_dir=str(project / "hf-cache"))
    message = {"role": offline.Value("string"), "content": offline.Value("string")}
    for split in ds.values():
        assert {"prompt", "chosen", "rejected", "margin"} <= set(split.column_names)
        for column in ("prompt", "chosen", "rejected"):
            feature = split.features[column]
            inner = feature.feature if hasattr(feature, "feature") else feature[0]  # Sequence / List of a struct
            assert dict(inner) == message
        assert split.features["margin"] == offline.Value("float64")
        for row in split:
            assert {m["role"] for m in row["prompt"]} <= {"system", "user"} and row["prompt"][-1]["role"] == "user"
            assert [m["role"] for m in row["chosen"]] == [m["role"] for m in row["rejected"]] == ["assistant"]
            assert row["chosen"] != row["rejected"] and row["margin"] > 0


def test_card_of_every_config(all_configs):
    card = (run("export") / "README.md").read_text()
    for title in (
        "## Rejected upstream",
        "## Label methods",
        "## Pair types",
        "## Statistics",
        "## Provenance",
        "### `pairs`: DPOTrainer or RewardTrainer",
        "### `rl`: GRPOTrainer",
        "### `sft`: SFTTrainer",
    ):
        assert title in card
    assert "| `rl` | `no_samples` | 2 |" in card and "| `pairs` | `tie` | 1 |" in card
    assert "| `rl` | `math_answer` | 1 | - | - |" in card  # named by rl's manifest with its version
    assert "| `sft` | `appeal` | 2 | - | 6 |" in card  # counted from label_sources
    assert "| mean pass rate (verified prompts) |" in card and "| `unsolved` | 2 |" in card
    assert "_rewards" not in card


def test_rerun_of_every_config_gives_identical_bytes(all_configs, labels):
    args = ("--labels", "data/labels")
    first, second = sha256s(run("a/export", *args)), sha256s(run("b/export", *args))
    assert first == second and {f.split("/")[1] for f in first if f.startswith("data/")} == {"pairs", "rl", "sft"}


def test_manifest_row_count_must_match_the_shards(project):
    manifest = json.loads((project / "data/datasets/pairs/_manifest.json").read_text())
    (project / "data/datasets/pairs/_manifest.json").write_text(json.dumps({**manifest, "rows": 11}))
    with pytest.raises(ValueError, match="shards hold 10 rows but its manifest records 11"):
        run("export")
    assert not (project / "export").exists()


def label_manifest(folder: Path, labeler: str, version: str, config: dict) -> None:
    folder.mkdir(parents=True)
    manifest = {
        "stage": f"label@{folder.name}",
        "labeler": labeler,
        "labeler_version": version,
        "params": {"labeler": labeler, "config": config, "tasks": None, "num_shards": 1},
    }
    (folder / "_manifest.json").write_text(json.dumps(manifest))


@pytest.fixture
def labels(project):
    root = project / "data/labels"
    label_manifest(root / "math_answer", "math_answer", "1", {"timeout_seconds": 5})
    label_manifest(root / "appeal", "reference_judge", "2", {"threshold": 0.5})  # default backend: the policy
    panelists = [
        {"persona": "strict"},
        {"persona": "expert", "backend": {"kind": "openai", "model": "big", "base_url": "http://h/v1"}},
    ]
    label_manifest(root / "panel", "panel_judge", "3", {"panelists": panelists})
    (root / "unfinished").mkdir()  # no manifest: skipped
    return root


def test_label_provenance_names_judge_models(labels):
    judges, labelers = label_provenance(labels)
    assert labelers == (
        ("appeal", "reference_judge", "2"),
        ("math_answer", "math_answer", "1"),
        ("panel", "panel_judge", "3"),
    )
    assert judges == (
        ("appeal", "`models/policy` (transformers)", "f" * 64),  # fingerprint of the policy folder
        ("panel", "`models/policy` (transformers)", "f" * 64),  # the panel's own (default) backend
        ("panel", "`big` at http://h/v1 (openai)", ""),  # one panelist's endpoint
    )
    assert label_provenance(labels / "missing") == ((), ())
    assert label_provenance(None) == ((), ())


def test_lock_stages_and_judges_reach_the_card(labels):
    stages = {
        **LOCK["stages"],
        "label@appeal": {
            "cmd": "l",
            "deps": [{"path": "data/prompts", "md5": "1"}],
            "outs": [{"path": "data/labels/appeal", "md5": "4.dir"}],
        },
    }
    (labels.parent.parent / "dvc.lock").write_text(yaml.safe_dump({**LOCK, "stages": stages}))
    card = (run("export", "--labels", "data/labels", "--lock", "dvc.lock") / "README.md").read_text()
    assert "| `assemble` | `data/datasets` | `3` |" in card and "| `model` | `models/policy` | `2` |" in card
    assert "| `label@appeal` | `data/labels/appeal` | `4.dir` |" in card  # data/labels is an input now
    assert "`validate`" not in card and "| `export` |" not in card  # not upstream
    assert "| judge `appeal` | `models/policy` (transformers), fingerprint `" + "f" * 64 + "` |" in card
    assert "| `pairs` | `math_answer` | 1 | math_answer | 10 |" in card  # method: the label stage's registry key


def test_read_lock_and_stage_outs(tmp_path):
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump(LOCK))
    stages = read_lock(tmp_path / "dvc.lock", [tmp_path / "data/datasets", tmp_path / "models/policy"])
    assert list(stages) == ["assemble", "model", "prompts"]
    assert stage_outs(stages) == (
        ("assemble", "data/datasets", "3"),
        ("model", "models/policy", "2"),
        ("prompts", "data/prompts", "1"),
    )
    assert read_lock(tmp_path / "missing.lock", ["data/datasets"]) == {}


def test_the_card_shows_measured_labeler_accuracy_and_judge_probe_rates(labels):
    from tests.transforms.export.test_card_audit import AUDIT

    probes = {"probes": 12, "credited": 3, "fpr": 0.25, "fpr_by_kind": {"master_key": 0.5}, "max_fpr": 0.1}
    manifest = json.loads((labels / "appeal" / "_manifest.json").read_text())
    (labels / "appeal" / "_manifest.json").write_text(json.dumps({**manifest, "probes": {**probes, "rows": []}}))
    Path("metrics").mkdir()
    Path("metrics/validate.json").write_text(json.dumps({"labeler_audit": AUDIT}))
    card = run("export", "--labels", "data/labels", "--validate-metrics", "metrics/validate.json") / "README.md"
    text = card.read_text()
    assert "## Label accuracy on the gold packs" in text and "| `math_answer` | 10 |" in text
    assert "## Judge attack probes" in text and "| `appeal` | 3 / 12 | 0.25 | master_key 0.50 | 0.10 |" in text
    bare = (run("bare", "--labels", "data/labels") / "README.md").read_text()  # no validate metrics: no audit table
    assert "## Label accuracy on the gold packs" not in bare and "## Judge attack probes" in bare
