"""export stage: Hub layout on disk, offline load_dataset, byte-identical reruns, params checks, provenance helpers."""

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

from rewardmill.pipelines.config import ConfigError, load_section
from rewardmill.pipelines.export import (
    ExportConfig,
    _WriteCard,
    _WriteConfig,
    discover_configs,
    git_commit,
    main,
    upstream_lock_digest,
)
from rewardmill.pipelines.stage import reject
from rewardmill.schemas import PAIR_V1, REJECT_V1
from rewardmill.transforms.export.card import Provenance

SHARD = re.compile(r"^data/pairs/(train|test)-\d{5}-of-\d{5}\.parquet$")


def pair(i: int, split: str) -> dict:
    return {
        "pair_id": hashlib.sha256(str(i).encode()).hexdigest(),
        "prompt_id": f"q{i}",
        "prompt": [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": f"{i} + {i}?"}],
        "chosen": [{"role": "assistant", "content": f"{2 * i}"}],
        "rejected": [{"role": "assistant", "content": f"{2 * i + 1}"}],
        "score_chosen": 1.0,
        "score_rejected": 0.0,
        "margin": 1.0,
        "confidence": 0.9,
        "agreement": 1.0,
        "pair_type": "best_vs_worst",
        "chosen_rollout_id": f"c{i}",
        "rejected_rollout_id": f"r{i}",
        "chosen_n_tokens": 2,
        "rejected_n_tokens": 2,
        "label_sources": ["math_answer@1"],
        "task": "math",
        "split": split,
    }


def write_params(path: Path, export: dict) -> None:
    path.write_text(yaml.safe_dump({"beam": {"runner": "FnApiRunner"}, "export": export}))


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder (not a git checkout) with an assembled `pairs` config in 2 input shards and a policy."""
    pairs = tmp_path / "data/datasets/pairs"
    (pairs / "_rejects").mkdir(parents=True)
    rows = [pair(i, "test" if i % 4 == 0 else "train") for i in range(10)]  # 7 train, 3 test
    for k, part in enumerate((rows[:6], rows[6:])):
        pq.write_table(pa.Table.from_pylist(part, schema=PAIR_V1), pairs / f"part-{k:05d}-of-00002.parquet")
    rejects = [reject("assemble", "q99", "tie", "equal scores")]
    pq.write_table(pa.Table.from_pylist(rejects, schema=REJECT_V1), pairs / "_rejects/part-00000-of-00001.parquet")
    manifest = {
        "stage": "assemble",
        "schema": "pair_v1",
        "rows": 10,
        "rejects": {"tie": 1},
        "params_hash": "9" * 64,
        "params": {},
    }
    (pairs / "_manifest.json").write_text(json.dumps(manifest))
    (tmp_path / "models/policy").mkdir(parents=True)
    policy = {"name": "tiny", "source": "builtin:tiny", "fingerprint": "f" * 64}
    (tmp_path / "models/policy/rewardmill_policy.json").write_text(json.dumps(policy))
    write_params(tmp_path / "params.yaml", {"num_shards": 2, "pretty_name": "tiny pairs"})
    monkeypatch.setenv("REWARDMILL_PARAMS", str(tmp_path / "params.yaml"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


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
    ]  # nothing else: no manifest, no rejects, no temp files
    assert all(SHARD.match(f) for f in files[1:])
    assert not list(project.glob("export.*"))  # the temp folder was renamed away

    ds = offline.load_dataset(str(out), "pairs", cache_dir=str(project / "hf-cache"))
    assert {name: split.num_rows for name, split in ds.items()} == {"train": 7, "test": 3}
    assert ds["train"].column_names == PAIR_V1.names
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
    assert "not recorded (no git checkout)" in card and "f" * 64 in card and "tie: 1" in card


def test_rerun_gives_identical_bytes(project):
    first = sha256s(run("a/export"))
    second = sha256s(run("b/export"))
    again = sha256s(run("a/export"))  # replaces the folder in place
    assert first == second == again
    assert len(first) == 5


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
        _WriteConfig("in", "out", 1, {"pairs": {"schema": "pair_v1"}}),
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
