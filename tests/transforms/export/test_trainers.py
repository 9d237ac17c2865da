"""trainers: one TRL snippet per config kind, with the config's own name, split and load target; valid Python."""

import pytest

from rewardmill.transforms.export.hub_layout import KINDS
from rewardmill.transforms.export.trainers import TITLES, training_section


def code(section: str) -> str:
    return section.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.mark.parametrize(
    "kind, expected",
    [
        ("preference", ["DPOTrainer(", "RewardTrainer(", 'train_dataset=ds["validation"]']),
        ("stepwise", ["from trl.experimental.prm import PRMConfig, PRMTrainer", "num_labels=2"]),
        ("prompt_only", ["GRPOTrainer(", "reward_funcs=reward_funcs", 'r["zero_pass"] or r["all_pass"]']),
        ("prompt_completion", ["SFTTrainer(", "SFTConfig("]),
    ],
)
def test_snippet_per_kind(kind, expected):
    section = training_section("my.set", kind, "validation", "org/repo")
    assert section.startswith(f"### `my.set`: {TITLES[kind]}\n")
    snippet = code(section)
    assert 'ds = load_dataset("org/repo", "my.set")' in snippet
    for text in expected:
        assert text in snippet
    compile(snippet, "<snippet>", "exec")


def test_every_kind_has_a_snippet_and_others_none():
    assert set(TITLES) == set(KINDS)
    assert training_section("x", "other", "train", "export") == ""


@pytest.mark.parametrize(
    "labelers, expected",
    [
        (("mc",), 'train = ds["train"]\n'),  # one steps labeler: every row
        (("judge", "mc"), 'train = ds["train"].filter(lambda r: r["labeler"] == "judge")\n'),  # no rollout twice
    ],
)
def test_stepwise_keeps_one_labeler(labelers, expected):
    assert expected in code(training_section("prm", "stepwise", "train", "export", labelers))


def test_the_grpo_snippet_turns_the_datasets_gates_into_reward_functions():
    snippet = code(training_section("rl", "prompt_only", "train", "export", ("math_answer", "code_tests")))
    assert "from rewardmill.rewards import from_params" in snippet
    assert """from_params("params.yaml", ['math_answer', 'code_tests'], prompts="data/prompts")""" in snippet
