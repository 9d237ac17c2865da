"""card: front matter that parses and lists every config/split, body sections, determinism, a datasets round trip."""

import hashlib
import socket

import pyarrow as pa
import pytest
import yaml

from rewardmill.schemas import PAIR_V1
from rewardmill.schemas.common import MESSAGES
from rewardmill.transforms.export.card import (
    Provenance,
    build_card,
    parse_source,
    size_category,
    type_name,
)
from rewardmill.transforms.export.hub_layout import EXPORTABLE, write_config

SPEC = EXPORTABLE["pair_v1"]
PROVENANCE = Provenance(
    params_hash="ab" * 32,
    git_commit="c0ffee" + "0" * 34,
    model={"name": "SmolLM2-135M-Instruct", "source": "builtin:smollm2-135m-instruct", "fingerprint": "f1" * 32},
    dvc_lock="d0" * 32,
    inputs={"datasets": "e0" * 32},
)
MANIFESTS = {"pairs": {"schema": "pair_v1", "params_hash": "aa" * 32, "rejects": {"tie": 3, "missing_score": 1}}}


def pair(i: int, split: str = "train", sources: tuple[str, ...] = ("math_answer@1",)) -> dict:
    return {
        "pair_id": hashlib.sha256(str(i).encode()).hexdigest(),
        "prompt_id": f"q{i}",
        "prompt": [{"role": "user", "content": f"What is {i} + {i}?"}],
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
        "chosen_n_tokens": 3,
        "rejected_n_tokens": 4,
        "label_sources": list(sources),
        "task": "math",
        "split": split,
    }


@pytest.fixture
def exported(tmp_path):
    """An export folder with pairs (4 train in 2 files, 2 test) and an empty `more` config, plus its summaries."""
    out = tmp_path / "export"
    data = [pair(i) for i in range(3)] + [pair(3, sources=("math_answer@1", "judge"))]
    data += [pair(10, "test"), pair(11, "test")]
    pairs = write_config(data, "pairs", SPEC, str(out), 2)
    empty = write_config([], "more", SPEC, str(out), 2)
    return out, [pairs, empty]


def card(configs, **kwargs):
    args = {"pretty_name": "tiny: pairs", "license": "apache-2.0", "provenance": PROVENANCE, "manifests": MANIFESTS}
    return build_card(configs, **{**args, **kwargs})


def front(text: str) -> dict:
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def test_front_matter_lists_every_config_and_split(exported):
    _, configs = exported
    meta = front(card(configs))
    assert meta["license"] == "apache-2.0"
    assert meta["pretty_name"] == "tiny: pairs"  # a colon survives: safe_dump quotes it
    assert meta["tags"] == ["rlhf", "dpo", "reward-model", "preference"]
    assert meta["task_categories"] == ["text-generation"]
    assert meta["size_categories"] == ["n<1K"]
    assert meta["configs"] == [
        {
            "config_name": "pairs",
            "default": True,
            "data_files": [
                {"split": "train", "path": "data/pairs/train-*.parquet"},
                {"split": "test", "path": "data/pairs/test-*.parquet"},
            ],
        }
    ]  # `more` has no rows, so no files, so it is not a loadable config
    (info,) = meta["dataset_info"]
    assert [(s["name"], s["num_examples"]) for s in info["splits"]] == [("train", 4), ("test", 2)]
    assert [f["name"] for f in info["features"]] == PAIR_V1.names


def test_body_sections(exported):
    _, configs = exported
    text = card(configs)
    assert "# tiny: pairs" in text
    assert "| `pairs` | `train` | 4 | 2 |" in text and "| `pairs` | `test` | 2 | 2 |" in text
    assert "| `more` | (none) | 0 | 0 |" in text
    assert "missing_score: 1, tie: 3" in text  # upstream rejects by reason
    for name in PAIR_V1.names:  # schema table: one row per column
        assert f"| `{name}` |" in text
    assert "| `prompt` | `list<{role, content}>` | the conversation before the answer" in text
    assert "| `pairs` | `math_answer` | 1 | 6 |" in text and "| `pairs` | `judge` | (unversioned) | 1 |" in text
    assert 'load_dataset("export", "pairs")' in text
    assert "DPOTrainer" in text and "RewardTrainer" in text
    for value in (PROVENANCE.git_commit, PROVENANCE.params_hash, PROVENANCE.dvc_lock, "f1" * 32, "aa" * 32, "e0" * 32):
        assert value in text
    assert f"git checkout {PROVENANCE.git_commit}" in text


def test_card_is_deterministic_and_order_free(exported):
    _, configs = exported
    assert card(configs) == card(configs[::-1])


def test_missing_provenance_and_repo_id(exported):
    _, configs = exported
    text = card(configs, provenance=Provenance(params_hash="ab" * 32), manifests=None, repo_id="org/tiny")
    assert "not recorded (no git checkout)" in text
    assert "dvc.lock" not in text and "`git checkout" not in text and "upstream params" not in text
    assert 'load_dataset("org/tiny", "pairs")' in text


@pytest.mark.parametrize(
    "dtype, expected",
    [
        (MESSAGES, "list<{role, content}>"),  # TRL conversational messages
        (pa.list_(pa.string()), "list<string>"),
        (pa.float64(), "float64"),  # not pyarrow's "double"
        (pa.int32(), "int32"),
        (pa.struct([("a", pa.int64())]), "{a: int64}"),
        (pa.large_string(), "string"),
    ],
)
def test_type_name(dtype, expected):
    assert type_name(dtype) == expected


@pytest.mark.parametrize(
    "source, expected",
    [
        ("math_answer@1", ("math_answer", "1")),
        ("judge@gpt@2", ("judge@gpt", "2")),  # the version follows the last '@'
        ("rubric", ("rubric", "")),  # no version recorded
    ],
)
def test_parse_source(source, expected):
    assert parse_source(source) == expected


@pytest.mark.parametrize("rows, expected", [(0, "n<1K"), (999, "n<1K"), (1000, "1K<n<10K"), (10**9, "n>100M")])
def test_size_category(rows, expected):
    assert size_category(rows) == expected


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


def test_load_dataset_reads_the_card_and_shards(exported, offline, tmp_path):
    out, configs = exported
    (out / "README.md").write_text(card(configs))
    ds = offline.load_dataset(str(out), "pairs", cache_dir=str(tmp_path / "hf-cache"))
    assert {name: split.num_rows for name, split in ds.items()} == {"train": 4, "test": 2}
    assert ds["train"].column_names == PAIR_V1.names
    assert ds["test"][0]["chosen"] == [{"role": "assistant", "content": "20"}]
