"""Row builders for every dataset the validation stage reads, one valid row with known values per call (overrides
break it on purpose). Plain functions, so tests of the pipeline import them too; conftest.py writes them to folders.
"""

import hashlib
import json
from typing import Any

USER = [{"role": "user", "content": "What is 2 + 3?"}]


def _id(*parts: Any) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:16]


def split_of(prompt: int) -> str:
    """Prompt 2 is the one test prompt; every builder uses this, so the default project leaks no prompt."""
    return "test" if prompt == 2 else "train"


def scores(*values: float | None) -> list[dict[str, Any]]:
    """A named score vector, sorted by name: math_answer/correctness first, then panel/correctness."""
    names = ("math_answer/correctness", "panel/correctness")[: len(values)]
    return [{"name": name, "score": v} for name, v in zip(names, values, strict=True)]


def answer(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


def prompt_row(i: int) -> dict[str, Any]:
    return {
        "prompt_id": _id("prompt", i),
        "source": "arithmetic",
        "task": "math",
        "messages": USER,
        "reference": "5",
        "tests": None,
        "rubric": None,
        "constraints": None,
        "split": split_of(i),
        "metadata": None,
    }


def rollout_row(i: int, **overrides: Any) -> dict[str, Any]:
    row = {
        "rollout_id": _id("rollout", i),
        "prompt_id": _id("prompt", i // 2),
        "task": "math",
        "messages": USER,
        "reference": "5",
        "tests": None,
        "constraints": None,
        "rubric": None,
        "split": "train",
        "sample_index": i % 2,
        "completion": f"answer {i}",
        "n_tokens": 10 + i,
        "finish_reason": "length" if i == 3 else "stop",
        "logprob_sum": -1.5,
        "policy": {"name": "tiny", "fingerprint": "f" * 64, "backend": "transformers"},
        "sampling": "{}",
        "seed": i,
    }
    return {**row, **overrides}


def label_row(i: int, verdict: str, score: float | None) -> dict[str, Any]:
    return {
        "rollout_id": _id("rollout", i),
        "prompt_id": _id("prompt", i // 2),
        "labeler": "math_answer",
        "labeler_version": "1",
        "aspect": "correctness",
        "score": score,
        "confidence": 1.0,
        "verdict": verdict,
        "rationale": None,
        "raw": None,
    }


def pair_row(i: int, **overrides: Any) -> dict[str, Any]:
    """A valid PAIR_V2 row of prompt i; margin == score_chosen - score_rejected exactly."""
    row = {
        "pair_id": _id("pair", i),
        "prompt_id": _id("prompt", i),
        "prompt": USER,
        "chosen": answer("5"),
        "rejected": answer(f"wrong {i}"),
        "score_chosen": 1.0,
        "score_rejected": 0.25,
        "margin": 0.75,
        "confidence": 1.0,
        "agreement": 1.0,
        "pair_type": "best_vs_worst",
        "chosen_rollout_id": _id("rollout", 2 * i),
        "rejected_rollout_id": _id("rollout", 2 * i + 1),
        "chosen_n_tokens": 12 if i == 0 else 30,
        "rejected_n_tokens": 20,
        "chosen_correct": True,
        "rejected_correct": False,
        "scores_chosen": scores(1.0, 1.0),
        "scores_rejected": scores(0.0, 1.0),
        "label_sources": ["math_answer@1"],
        "task": "math",
        "split": split_of(i),
    }
    return {**row, **overrides}


def rl_row(i: int, samples: int, verified: int, correct: int, **overrides: Any) -> dict[str, Any]:
    """A valid RL_V1 row of prompt i with those counts; pass rate, flags and difficulty follow from them."""
    rate = correct / verified if verified else None
    if rate is None:
        difficulty = "unverified"
    elif rate == 0:
        difficulty = "unsolved"
    else:
        difficulty = "easy" if rate >= 0.75 else "hard" if rate <= 0.25 else "medium"
    row = {
        "prompt_id": _id("prompt", i),
        "prompt": USER,
        "task": "math",
        "reference": "5",
        "tests": None,
        "constraints": None,
        "n_samples": samples,
        "n_verified": verified,
        "n_correct": correct,
        "pass_rate": rate,
        "mean_reward": 0.5,
        "difficulty": difficulty,
        "zero_pass": verified > 0 and correct == 0,
        "all_pass": verified > 0 and correct == verified,
        "split": split_of(i),
    }
    return {**row, **overrides}


def sft_row(i: int, **overrides: Any) -> dict[str, Any]:
    """A valid SFT_V1 row: prompt i's best rollout (2i), verified correct."""
    row = {
        "rollout_id": _id("rollout", 2 * i),
        "prompt_id": _id("prompt", i),
        "prompt": USER,
        "completion": answer("2 + 3 = 5. The answer is 5."),
        "reward": 1.0,
        "confidence": 1.0,
        "correct": True,
        "rank": 0,
        "n_tokens": 12,
        "scores": scores(1.0, 1.0),
        "label_sources": ["math_answer@1", "panel@1"],
        "task": "math",
        "split": split_of(i),
    }
    return {**row, **overrides}


def reward_row(i: int, reward: float | None, correct: bool | None, n_tokens: int, **overrides: Any) -> dict[str, Any]:
    """A valid REWARD_V1 row of rollout i (prompt i // 2), kept unless `status` says otherwise."""
    row = {
        "rollout_id": _id("rollout", i),
        "prompt_id": _id("prompt", i // 2),
        "task": "math",
        "split": split_of(i // 2),
        "reward": reward,
        "correct": correct,
        "verified_by": None if correct is None else "math_answer",
        "model_score": None,
        "confidence": 1.0,
        "agreement": None,
        "n_tokens": n_tokens,
        "finish_reason": "stop",
        "status": "kept",
        "scores": scores(None if correct is None else float(correct)),
        "label_sources": ["math_answer@1"],
    }
    return {**row, **overrides}


STEPS = ["2 + 3 = 5.", "So x = 5.", "The answer is 5."]


def prm_row(i: int, **overrides: Any) -> dict[str, Any]:
    """A valid PRM_V1 row of three steps: none wrong for even i, the last one wrong (first_error_step 2) for odd i."""
    first_error = 2 if i % 2 else -1
    soft = [1.0, 0.5, 0.0 if first_error == 2 else 1.0]
    row = {
        "prompt_id": _id("prompt", i // 2),
        "rollout_id": _id("rollout", i),
        "prompt": USER[0]["content"],
        "completions": STEPS,
        "labels": [first_error < 0 or s < first_error for s in range(len(STEPS))],
        "soft_labels": soft,
        "first_error_step": first_error,
        "method": "mc",
        "labeler": "mc",
        "min_score": min(soft),
        "last_score": soft[-1],
        "task": "math",
        "split": split_of(i // 2),
    }
    return {**row, **overrides}


def step_label_rows(
    labeler: str,
    i: int,
    first_error: int,
    continuations: int = 4,
    n_steps: int = 3,
    complete: bool | None = True,
    method: str = "mc",
) -> list[dict[str, Any]]:
    """STEP_LABEL_V1 rows of rollout i by `labeler`: `continuations` spent per step; `complete` None = no flag."""
    raw = json.dumps({} if complete is None else {"complete": complete})
    text = "".join(f"step {s}. " for s in range(n_steps))
    return [
        {
            "rollout_id": _id("rollout", i),
            "prompt_id": _id("prompt", i // 2),
            "labeler": labeler,
            "labeler_version": "1",
            "step_index": s,
            "n_steps": n_steps,
            "step_text": f"step {s}. ",
            "char_start": text.index(f"step {s}. "),
            "char_end": text.index(f"step {s}. ") + len(f"step {s}. "),
            "score": None if 0 <= first_error < s else float(first_error < 0 or s < first_error),
            "hard_label": None if 0 <= first_error < s else (first_error < 0 or s < first_error),
            "method": method,
            "n_continuations": continuations,
            "first_error_step": first_error,
            "raw": raw,
        }
        for s in range(n_steps)
    ]
