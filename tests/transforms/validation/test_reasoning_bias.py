"""Length bias of the thinking: reward against reasoning tokens over the kept rollouts that counted them
(rollouts.reasoning), reported beside the answer-length correlation; absent where no rollout counted any."""

import pytest

from rewardmill.schemas import REWARD_V1, ROLLOUT_V2, ROLLOUT_V3
from rewardmill.transforms.validation.dataset_metrics import reasoning_length_correlation
from tests.transforms.validation.conftest import write_stage
from tests.transforms.validation.rows import reward_row, rollout_row

V3_EXTRA = {"reasoning": None, "reasoning_status": None, "turns": None, "tools": None, "environment": None,
            "stop_reason": "done", "env_reward": None, "env_info": None}  # fmt: skip


def test_reward_against_reasoning_tokens(tmp_path):
    rewards = write_stage(tmp_path / "rewards", [
        reward_row(0, 1.0, True, 10), reward_row(1, 0.5, None, 10), reward_row(2, 0.0, False, 10),
        reward_row(3, 0.25, False, 10), reward_row(4, 1.0, True, 10, status="low_confidence"),  # 4: not kept
    ], REWARD_V1)  # fmt: skip
    tokens = [10, 20, 30, 25, 5]
    rows = [{**rollout_row(i), **V3_EXTRA, "reasoning_tokens": t} for i, t in enumerate(tokens)]
    rows[1]["reasoning_tokens"] = None  # not counted: left out
    rollouts = write_stage(tmp_path / "rollouts", rows, ROLLOUT_V3)
    found = reasoning_length_correlation(rewards, rollouts)
    assert found["n"] == 3 and found["pearson"] < -0.9 and found["spearman"] == pytest.approx(-1.0)  # 0, 2, 3

    plain = write_stage(tmp_path / "plain", [rollout_row(i) for i in range(5)], ROLLOUT_V2)
    assert reasoning_length_correlation(rewards, plain) is None  # v2 rollouts count no reasoning
    uncounted = write_stage(tmp_path / "off", [{**r, "reasoning_tokens": None} for r in rows], ROLLOUT_V3)
    assert reasoning_length_correlation(rewards, uncounted) is None
