"""The rollouts plan for episodes: each sample at its turn limit, inputs growing with the turns before, marked as
an upper bound; single-turn samples as before."""

import pytest

from rewardmill.pipelines.rollouts import RolloutsConfig
from rewardmill.transforms.environments.params import EnvironmentParams
from rewardmill.transforms.planning.rollout_plan import sample_spend

PROMPT_TOKENS = 20


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        (None, (2, 2 * 20, 2 * 16)),  # one request per sample, as before
        # 3 turns: inputs 20, 20 + 16, 20 + 32 per sample; outputs 3 x 16
        (EnvironmentParams("feedback", max_turns=3), (6, 2 * (60 + 48), 2 * 48)),
        # a token budget over all turns caps the outputs, not the turns
        (EnvironmentParams("feedback", max_turns=3, max_tokens=20), (6, 2 * (60 + 48), 2 * 20)),
    ],
)
def test_an_episode_is_planned_at_its_limit(environment, expected):
    cfg = RolloutsConfig(n=2, max_new_tokens=16, environment=environment)
    assert sample_spend(cfg, cfg.sampling(), PROMPT_TOKENS) == expected


def test_the_plan_says_reasoning_is_within_the_output_bound():
    """Reasoning traces are sampled within each turn's max_new_tokens: the plan's output tokens hold them (a budget's
    max_tokens caps both), and the note says where the run's reasoning count goes. Without reasoning, no note."""
    from types import SimpleNamespace

    from rewardmill.transforms.planning.rollout_plan import plan_rollouts
    from rewardmill.transforms.sampling.reasoning import ReasoningTags

    no_tokens = SimpleNamespace(estimated=set())
    with_reasoning = plan_rollouts(RolloutsConfig(reasoning=ReasoningTags()), [], [], None, None, no_tokens)
    assert any("reasoning" in note and "`tokens`" in note for note in with_reasoning.notes), with_reasoning.notes
    assert plan_rollouts(RolloutsConfig(), [], [], None, None, no_tokens).notes == []
