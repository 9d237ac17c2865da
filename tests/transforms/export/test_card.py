"""card: front matter that parses and lists every config/split, body sections, determinism, a datasets round trip."""

import dataclasses
import socket

import pyarrow as pa
import pytest
import yaml

from rewardmill.schemas import PAIR_V2, PRM_V1, RL_V1, SFT_V1
from rewardmill.schemas.common import MESSAGES, schema_id
from rewardmill.transforms.export.card import (
    Provenance,
    build_card,
    parse_source,
    size_category,
    type_name,
    variable,
)
from rewardmill.transforms.export.hub_layout import EXPORTABLE, write_config
from tests.transforms.export.rows import pair, prm, rl, sft

PROVENANCE = Provenance(
    params_hash="ab" * 32,
    git_commit="c0ffee" + "0" * 34,
    model={"name": "SmolLM2-135M-Instruct", "source": "builtin:smollm2-135m-instruct", "fingerprint": "f1" * 32},
    dvc_lock="d0" * 32,
    stages=(("assemble", "data/datasets", "a5" * 16 + ".dir"), ("model", "models/policy", "")),
    judges=(("appeal", "`models/policy` (transformers)", "f1" * 32), ("panel", "`m` at http://h/v1 (openai)", "")),
    labelers=(("appeal", "reference_judge", "2"), ("math_answer", "math_answer", "1")),
    inputs={"datasets": "e0" * 32},
)
MANIFESTS = {
    "pairs": {
        "schema": "pair_v2",
        "params_hash": "aa" * 32,
        "rejects": {"tie": 3, "missing_score": 1},
        "inputs": {"labels": "bb" * 32},
        "labelers": ["judge", "math_answer"],
        "labeler_versions": {"judge": "3", "math_answer": "1"},
        "pair_types": {"best_vs_worst": 3, "correct_vs_incorrect": 1, "length_matched": 0},
    },
    "prm": {
        "schema": "prm_v1",
        "rejects": {"orphan_step_label": 2},
        "step_labelers": ["judge_steps", "mc_steps"],
        "step_methods": {"judge_steps": "judge", "mc_steps": "mc"},
    },
    # assemble records every version that scored rows; a single string is read too
    "rl": {
        "schema": "rl_v1",
        "labelers": ["math_answer", "panel"],
        "labeler_versions": {"math_answer": ["1"], "panel": ["3", "4"]},
        "gates": ["math_answer", "code_tests"],
    },
    "sft": {"schema": "sft_v1", "rejects": {}},
}


@pytest.fixture
def exported(tmp_path):
    """An export folder with pairs (4 train in 2 files, 2 test), prm, rl, sft, and an empty `more` config."""
    out = tmp_path / "export"
    pairs = [pair(0), pair(1), pair(2, pair_type="correct_vs_incorrect", agreement=0.5)]
    pairs += [pair(3, sources=("math_answer@1", "judge"))]
    pairs += [pair(10, "test"), pair(11, "test")]
    steps = [
        prm(i, labeler, "test" if i == 0 else "train") for i in range(4) for labeler in ("mc_steps", "judge_steps")
    ]
    prompts = [rl(0, n_correct=0), rl(1, n_correct=4), rl(2, n_correct=None), rl(3, n_correct=1), rl(4, "test")]
    configs = [
        write_config(pairs, "pairs", EXPORTABLE["pair_v2"], str(out), 2),
        write_config(steps, "prm", EXPORTABLE["prm_v1"], str(out), 1),
        write_config(prompts, "rl", EXPORTABLE["rl_v1"], str(out), 1),
        write_config(
            [sft(i, "test" if i == 3 else "train") for i in range(4)], "sft", EXPORTABLE["sft_v1"], str(out), 1
        ),
        write_config([], "more", EXPORTABLE["pair_v2"], str(out), 2),
    ]
    return out, configs


def card(configs, **kwargs):
    args = {"pretty_name": "tiny: sets", "license": "apache-2.0", "provenance": PROVENANCE, "manifests": MANIFESTS}
    return build_card(configs, **{**args, **kwargs})


def front(text: str) -> dict:
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def section(text: str, title: str) -> str:
    """The body of one `## title` section."""
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_front_matter_lists_every_config_and_split(exported):
    _, configs = exported
    meta = front(card(configs))
    assert meta["license"] == "apache-2.0"
    assert meta["pretty_name"] == "tiny: sets"  # a colon survives: safe_dump quotes it
    assert meta["tags"] == [
        "rlhf",
        "reward-model",
        "dpo",
        "preference",
        "process-reward-model",
        "prm",
        "grpo",
        "rl",
        "sft",
        "rejection-sampling",
    ]
    assert meta["task_categories"] == ["text-generation"]
    assert meta["size_categories"] == ["n<1K"]
    assert [c["config_name"] for c in meta["configs"]] == ["pairs", "prm", "rl", "sft"]  # `more` has no rows
    assert meta["configs"][0] == {
        "config_name": "pairs",
        "default": True,
        "data_files": [
            {"split": "train", "path": "data/pairs/train-*.parquet"},
            {"split": "test", "path": "data/pairs/test-*.parquet"},
        ],
    }
    assert all("default" not in c for c in meta["configs"][1:])
    info = {i["config_name"]: i for i in meta["dataset_info"]}
    assert [(s["name"], s["num_examples"]) for s in info["pairs"]["splits"]] == [("train", 4), ("test", 2)]
    assert [(s["name"], s["num_examples"]) for s in info["rl"]["splits"]] == [("train", 4), ("test", 1)]
    for name, schema in (("pairs", PAIR_V2), ("prm", PRM_V1), ("rl", RL_V1), ("sft", SFT_V1)):
        assert [f["name"] for f in info[name]["features"]] == schema.names


def test_default_config_without_pairs_is_the_first(exported):
    _, configs = exported
    meta = front(card([c for c in configs if c.name != "pairs"]))
    assert [(c["config_name"], c.get("default")) for c in meta["configs"]] == [
        ("prm", True),
        ("rl", None),
        ("sft", None),
    ]
    assert "dpo" not in meta["tags"] and "grpo" in meta["tags"]


def test_intro_counts_and_rejects(exported):
    _, configs = exported
    text = card(configs)
    assert "# tiny: sets" in text and "(`SmolLM2-135M-Instruct`)" in text
    assert "- `pairs` (6 rows: train 4, test 2): Preference pairs in TRL's conversational format" in text
    assert "- `rl` (5 rows: train 4, test 1): Prompts for online RL (GRPO, RLOO)" in text
    assert "- `sft` (4 rows: train 3, test 1): The best verified samples" in text
    assert "- `more` (0 rows: no rows)" in text
    assert "| `pairs` | `train` | 4 | 2 |" in text and "| `pairs` | `test` | 2 | 2 |" in text
    assert "| `more` | (none) | 0 | 0 |" in text
    rejects = section(text, "Rejected upstream")
    assert "| `pairs` | `missing_score` | 1 |\n| `pairs` | `tie` | 3 |\n| `prm` | `orphan_step_label` | 2 |" in rejects
    assert "`sft`" not in rejects  # no rejects, no rows


def test_viewer_link(exported):
    _, configs = exported
    viewer = section(card(configs, viewer="viewer.html"), "Browse the rows")
    assert viewer.lstrip().startswith("[`viewer.html`](viewer.html) is one static HTML page")  # relative: the Hub too
    assert "loads nothing from a network" in viewer and "`rewardmill view export`" in viewer
    assert "Browse the rows" not in card(configs)  # no page, no link


def test_label_methods(exported):
    _, configs = exported
    methods = section(card(configs), "Label methods")
    assert "| `pairs` | `math_answer` | 1 | math_answer | 6 |" in methods  # counted from label_sources
    assert "| `pairs` | `judge` | 3 | - | 1 |" in methods  # a source without a version: the manifest's
    assert "| `prm` | `mc_steps` | - | mc | 4 |" in methods  # step labelers: their method, not "(unversioned)"
    assert "| `prm` | `judge_steps` | - | judge | 4 |" in methods
    assert "| `rl` | `math_answer` | 1 | math_answer | - |" in methods  # named by the manifest, not per row
    assert "| `rl` | `panel` | 3, 4 | - | - |" in methods  # two versions scored the rollouts behind rl
    assert "| `sft` | `appeal` | 2 | reference_judge | 4 |" in methods  # method = the label stage's registry key


def test_pair_types_and_statistics(exported):
    _, configs = exported
    text = card(configs)
    types = section(text, "Pair types")
    assert "| `pairs` | `best_vs_worst` | 5 |" in types and "| `pairs` | `correct_vs_incorrect` | 1 |" in types
    assert "| `pairs` | `length_matched` | 0 |" in types  # configured upstream, chose nothing
    stats = section(text, "Statistics")
    assert "| mean agreement | 0.917 |" in stats  # (5 * 1.0 + 0.5) / 6
    assert "| pairs all labelers agree on (agreement = 1) | 5 (83.3%) |" in stats
    assert "| verified pairs (chosen correct, rejected incorrect) | 1 (16.7%) |" in stats
    assert "| chosen longer than rejected | 0 (0.0%) |" in stats
    assert "| mean pass rate (verified prompts) | 0.438 |" in stats  # (0 + 1 + 0.25 + 0.5) / 4
    assert "| zero pass (0/k: no group-relative signal) | 1 (20.0%) |" in stats
    assert "| all pass (k/k: no group-relative signal) | 1 (20.0%) |" in stats
    assert "| `unsolved` | 1 |" in stats and "| `unverified` | 1 |" in stats  # difficulty counts
    assert "| rows with a wrong step | 4 (50.0%) |" in stats  # prm
    assert "| verified correct | 2 (50.0%) |" in stats  # sft


def test_schema_tables_use_each_configs_docs(exported):
    _, configs = exported
    text = card(configs)
    for name, schema in (("pairs", PAIR_V2), ("prm", PRM_V1), ("rl", RL_V1), ("sft", SFT_V1)):
        table = section(text, f"Schema of `{name}` ({schema_id(schema)})")
        assert [line.split("|")[1].strip(" `") for line in table.strip().splitlines()[2:]] == schema.names
    assert "| `prompt` | `list<{role, content}>` | the conversation before the answer" in text
    assert "| `prompt` | `string` | the prompt's last user message as a plain string" in text
    assert "| `scores_chosen` | `list<{name: string, score: float64}>` |" in text
    assert "| `reference` | `string` | the reference answer; null = none. Reaches GRPO reward functions" in text


def test_loading_and_training_sections(exported):
    _, configs = exported
    text = card(configs)
    for name in ("pairs", "prm", "rl", "sft"):
        assert f'{name} = load_dataset("export", "{name}")' in text
    training = section(text, "Training with TRL")
    for title in (
        "`pairs`: DPOTrainer or RewardTrainer",
        "`prm`: PRMTrainer",
        "`rl`: GRPOTrainer",
        "`sft`: SFTTrainer",
    ):
        assert f"### {title}" in training
    assert "from trl.experimental.prm import PRMConfig, PRMTrainer" in training
    assert 'filter(lambda r: r["labeler"] == "judge_steps")' in training  # two steps labelers: keep one
    assert "RewardConfig" in training and "`margin`" in training
    # the rl manifest's gates become the GRPO snippet's reward functions
    assert """from_params("params.yaml", ['math_answer', 'code_tests'], prompts="data/prompts")""" in training
    assert "reward_funcs=reward_funcs" in training
    assert 'SFTTrainer(model="path/to/policy", args=SFTConfig(output_dir="sft"),' in training
    assert "`more`" not in training


def test_training_snippets_are_valid_python(exported):
    _, configs = exported
    training = section(card(configs), "Training with TRL")
    blocks = [b.split("```", 1)[0] for b in training.split("```python\n")[1:]]
    assert len(blocks) == 4
    for block in blocks:
        compile(block, "<card>", "exec")


def test_provenance(exported):
    _, configs = exported
    provenance = section(card(configs), "Provenance")
    for value in (
        PROVENANCE.git_commit,
        PROVENANCE.params_hash,
        PROVENANCE.dvc_lock,
        "f1" * 32,
        "aa" * 32,
        "bb" * 32,
        "e0" * 32,
    ):
        assert value in provenance
    assert "| license | `apache-2.0` (params `export.license`) |" in provenance
    assert "| judge `appeal` | `models/policy` (transformers), fingerprint `" + "f1" * 32 + "` |" in provenance
    assert "| judge `panel` | `m` at http://h/v1 (openai) |" in provenance
    assert "| `assemble` | `data/datasets` | `" + "a5" * 16 + ".dir` |" in provenance
    assert "| `model` | `models/policy` | - |" in provenance
    assert f"`git checkout {PROVENANCE.git_commit}` then `dvc repro export`" in provenance


def test_card_is_deterministic_and_order_free(exported):
    _, configs = exported
    assert card(configs) == card(configs[::-1])


def test_missing_provenance_and_repo_id(exported):
    _, configs = exported
    text = card(configs, provenance=Provenance(params_hash="ab" * 32), manifests=None, repo_id="org/tiny")
    assert "not recorded (no git checkout)" in text
    assert "dvc.lock" not in text and "`git checkout" not in text and "upstream params" not in text
    assert "## Rejected upstream" not in text and "judge `" not in text
    assert 'pairs = load_dataset("org/tiny", "pairs")\n' in text
    assert "| `rl` | `" not in section(text, "Label methods")  # rl has no per-row sources and no manifest here


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


@pytest.mark.parametrize(
    "config, expected",
    [
        ("pairs", "pairs"),
        ("hard-pairs.v2", "hard_pairs_v2"),  # '-' and '.' are legal in config names, not in Python names
        ("1k", "ds_1k"),  # a leading digit
        ("in", "ds_in"),  # a keyword
    ],
)
def test_variable(config, expected):
    assert variable(config) == expected


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
    expected = {
        "pairs": (PAIR_V2, {"train": 4, "test": 2}),
        "prm": (PRM_V1, {"train": 6, "test": 2}),
        "rl": (RL_V1, {"train": 4, "test": 1}),
        "sft": (SFT_V1, {"train": 3, "test": 1}),
    }
    for name, (schema, counts) in expected.items():
        ds = offline.load_dataset(str(out), name, cache_dir=str(tmp_path / "hf-cache"))
        assert {split: d.num_rows for split, d in ds.items()} == counts
        assert ds["train"].column_names == schema.names
    pairs = offline.load_dataset(str(out), "pairs", cache_dir=str(tmp_path / "hf-cache"))
    assert pairs["test"][0]["chosen"] == [{"role": "assistant", "content": "20"}]


def test_a_pool_card_names_its_policies(exported):
    _, configs = exported
    pool = (("fast", "vllm", "models/policy", "f1"), ("remote", "openai", "http://h/v1", "f2"))
    text = card(configs, provenance=dataclasses.replace(PROVENANCE, model=None, policies=pool))
    assert "from the samples of a pool of policies (`fast`, `remote`)" in text
    assert "Built with rewardmill from the policy's own samples" not in text


WEIGHTS = {  # assemble's manifests: measured_weights.weight_record
    "appeal": {"weight": 0.597, "source": "measured", "reason": "Cohen's kappa 0.597 against the deciding gate",
               "rows": 110, "accuracy": 0.790909, "kappa": 0.597},
    "panel": {"weight": 0.0, "source": "measured", "reason": "Cohen's kappa -0.077 ...: no better than chance, so 0",
              "rows": 44, "accuracy": 0.25, "kappa": -0.077},
    "rubric": {"weight": 1.0, "source": "fallback", "reason": "3 rollouts decided by it and a gate, fewer than ...",
               "rows": 3, "accuracy": 1.0, "kappa": None},
    "style": {"weight": 2.0, "source": "params", "reason": "set in params assemble.aggregate.weights"},
}  # fmt: skip


def test_reward_weights_say_which_judge_ranks_and_why(exported):
    _, configs = exported
    manifests = {**MANIFESTS, "pairs": {**MANIFESTS["pairs"], "reward_weights": WEIGHTS}}
    weights = section(card(configs, manifests=manifests), "Reward weights")
    assert "| `appeal` | 0.597 | measured | 0.597 | 0.791 | 110 | Cohen's kappa 0.597 against the deciding gate |" in (
        weights
    )
    assert "| `panel` | 0 | measured | -0.077 | 0.250 | 44 |" in weights and "no better than chance, so 0" in weights
    assert "| `rubric` | 1 | fallback (not measurable) | - | 1.000 | 3 |" in weights
    assert "| `style` | 2 | set in params | - | - | - | set in params assemble.aggregate.weights |" in weights
    assert "## Reward weights" not in card(configs)  # manifests without weights: no section
