"""The feedback environment on the real default model (SmolLM2-135M-Instruct): episodes run to a stop reason, every
turn is recorded with its tokens, and the same seeds give the same episodes."""

import pytest

from rewardmill.transforms.environments.episodes import EpisodeLimits, TurnRequest, by_stop_reason, run_episodes
from rewardmill.transforms.environments.feedback import FeedbackConfig, FeedbackEnvironment
from rewardmill.transforms.sampling.params import SamplingParams
from rewardmill.transforms.sampling.transformers_generate import generate_turns, load_policy

SP = SamplingParams(n=2, temperature=0.8, top_p=0.95, max_new_tokens=16, seed=3)
PROMPTS = [
    {"prompt_id": f"p{i}", "task": "math", "messages": [{"role": "user", "content": q}], "reference": a}
    for i, (q, a) in enumerate([("What is 2 + 3?", "5"), ("What is 10 - 4?", "6"), ("What is 3 * 3?", "9")])
]


@pytest.fixture(scope="module")
def policy(policy_dir):
    return load_policy(str(policy_dir))


def test_feedback_episodes_on_the_default_model(policy):
    calls: list[int] = []

    def generate(requests: list[TurnRequest]):
        calls.append(len(requests))
        return generate_turns(policy, [r.messages for r in requests], [r.seed for r in requests], SP)

    env = FeedbackEnvironment(FeedbackConfig(max_attempts=3))
    out = run_episodes(env, PROMPTS, SP.n, SP.seed, generate, EpisodeLimits(max_turns=3))
    flat = [t for per in out for t in per]
    assert len(flat) == 6 and calls[0] == 6 and calls == sorted(calls, reverse=True)  # live ones, one call a round
    assert sum(by_stop_reason(out).values()) == 6 and by_stop_reason(out)["error"] == 0
    for t in flat:
        assert t.reward in (0.0, 1.0) and 1 <= len(t.assistant_turns) <= 3
        assert t.n_tokens == sum(m["n_tokens"] for m in t.assistant_turns) > 0
        assert (t.reward == 1.0) == (t.assistant_turns[-1]["step_info"]["verdict"] == "correct")
        for m in t.turns:  # feedback follows each wrong answer but the last
            assert m["role"] in ("assistant", "user")
    again = run_episodes(env, PROMPTS, SP.n, SP.seed, generate, EpisodeLimits(max_turns=3))
    assert [[t.turns for t in per] for per in again] == [[t.turns for t in per] for per in out]
