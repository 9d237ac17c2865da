"""rewardmill's labelers as TRL reward functions, for online RL (GRPO, RLOO) on the prompts rewardmill exports.

    from rewardmill.rewards import from_params
    reward_funcs = from_params("params.yaml", ["math_answer", "code_tests"])
    trainer = GRPOTrainer(model=..., reward_funcs=reward_funcs, train_dataset=load_dataset("export", "rl")["train"])

Installed as `rewardmill.rewards` (pyproject's package-dir); the code lives here, beside the other transforms.
"""

from rewardmill.rewards.functions import LabelerReward, MissingColumns, from_params

__all__ = ["LabelerReward", "MissingColumns", "from_params"]
