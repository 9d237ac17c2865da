"""Valid rows of every exported schema (PAIR_V2, PRM_V1, RL_V1, SFT_V1) for the export tests."""

import hashlib


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def pair(
    i: int,
    split: str = "train",
    sources: tuple[str, ...] = ("math_answer@1",),
    pair_type: str = "best_vs_worst",
    agreement: float = 1.0,
) -> dict:
    """A PAIR_V2 row; pair_id is a hash so id order differs from creation order."""
    return {
        "pair_id": sha(str(i)),
        "prompt_id": f"q{i // 2:03d}",
        "prompt": [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": f"{i} + {i}?"}],
        "chosen": [{"role": "assistant", "content": f"{2 * i}"}],
        "rejected": [{"role": "assistant", "content": f"{2 * i + 1} because"}],
        "score_chosen": 1.0,
        "score_rejected": 0.25,
        "margin": 0.75,
        "confidence": 0.9,
        "agreement": agreement,
        "pair_type": pair_type,
        "chosen_rollout_id": f"c{i}",
        "rejected_rollout_id": f"r{i}",
        "chosen_n_tokens": 3,
        "rejected_n_tokens": 4,
        "chosen_correct": True,
        "rejected_correct": False if pair_type == "correct_vs_incorrect" else None,
        "scores_chosen": [{"name": "math_answer/correct", "score": 1.0}],
        "scores_rejected": [{"name": "math_answer/correct", "score": None}],
        "label_sources": list(sources),
        "task": "math",
        "split": split,
    }


def rl(i: int, split: str = "train", n_correct: int | None = 2) -> dict:
    """An RL_V1 row of prompt p<i> with 4 samples; n_correct None = no sample verified."""
    verified = 0 if n_correct is None else 4
    rate = None if n_correct is None else n_correct / 4
    difficulty = {None: "unverified", 0: "unsolved", 1: "hard", 2: "medium", 3: "easy", 4: "easy"}[n_correct]
    return {
        "prompt_id": sha(f"p{i}"),
        "prompt": [{"role": "user", "content": f"What is {i} + {i}?"}],
        "task": "math",
        "reference": str(2 * i),
        "tests": None,
        "constraints": None,
        "n_samples": 4,
        "n_verified": verified,
        "n_correct": n_correct or 0,
        "pass_rate": rate,
        "mean_reward": rate,
        "difficulty": difficulty,
        "zero_pass": n_correct == 0,
        "all_pass": n_correct == 4,
        "split": split,
    }


def sft(i: int, split: str = "train") -> dict:
    """An SFT_V1 row: the best sample of prompt p<i>."""
    return {
        "rollout_id": sha(f"s{i}"),
        "prompt_id": sha(f"p{i}"),
        "prompt": [{"role": "user", "content": f"What is {i} + {i}?"}],
        "completion": [{"role": "assistant", "content": f"{i} + {i} = {2 * i}"}],
        "reward": 1.0,
        "confidence": 0.8,
        "correct": True if i % 2 == 0 else None,
        "rank": 0,
        "n_tokens": 7,
        "scores": [{"name": "appeal/equivalent", "score": 1.0}, {"name": "math_answer/correct", "score": 1.0}],
        "label_sources": ["appeal@2", "math_answer@1"],
        "task": "math",
        "split": split,
    }


def prm(i: int, labeler: str, split: str = "train") -> dict:
    """A PRM_V1 row of rollout r<i>; rollout ids repeat across labelers, so only (labeler, rollout_id) is unique."""
    n = 1 + i % 3
    first_error = -1 if i % 2 else n - 1
    labels = [first_error < 0 or k < first_error for k in range(n)]
    return {
        "prompt_id": f"q{i}",
        "rollout_id": f"r{i:02d}",
        "prompt": f"What is {i} + {i}?",
        "completions": [f"step {k} of r{i}" for k in range(n)],
        "labels": labels,
        "soft_labels": [1.0 if label else 0.0 for label in labels] if labeler == "mc_steps" else [None] * n,
        "first_error_step": first_error,
        "method": "mc" if labeler == "mc_steps" else "judge",
        "labeler": labeler,
        "min_score": float(all(labels)),
        "last_score": float(labels[-1]),
        "task": "math",
        "split": split,
    }
