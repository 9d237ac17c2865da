"""The reward_model labeler vs a plain batched forward pass of the same reward model, measured in the same run.

Both sides score the same rollouts with the same model folder, batch size and torch threads, and both include model
loading. The labeler side is the real label stage's pipeline (Beam on FnApiRunner, the generic labeling DoFn,
length-sorted batches, Parquet writing, per-run normalization), with no cache. The baseline tokenizes the same chat
texts and runs `model(**batch)` over batches in input order. The reward model is the default policy with a fresh
one-logit head (seeded; its values do not matter for speed). Runs alternate (baseline, labeler, ...); each repeat
prints its ratio, and the last line is `ratio=<median of baseline time / labeler time>` (>= 1: the labeler is as
fast as the plain loop).

    python bench/reward_model.py [--rollouts 256] [--batch-size 8] [--repeats 3]
"""

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from rewardmill.pipelines import label
from rewardmill.schemas import ROLLOUT_V2
from rewardmill.transforms.io.parquet import read_rows, rows_to_table, write_table
from rewardmill.transforms.labelers.normalize import normalize_output
from rewardmill.transforms.labelers.reward_model import RewardModelConfig, RewardModelScorer
from rewardmill.transforms.sampling.materialize import materialize
from rewardmill.transforms.sources.arithmetic import generate
from rewardmill.transforms.sources.normalize import normalize
from rewardmill.transforms.stage.runner import BeamConfig, run_pipeline

FILLER = "Let me add the numbers step by step and check the result once more. "


def rollout_rows(count: int) -> list[dict]:
    """`count` math rollouts with completions of 1 to 12 sentences (lengths vary, as real rollouts do)."""
    prompts = [normalize(r, "bench", "math", 0.0) for r in generate(max(count // 4, 1), seed=0, levels=(1, 2, 3))]
    rows = []
    for i in range(count):
        p = prompts[i % len(prompts)]
        completion = FILLER * (1 + (i * 7) % 12) + f"The answer is {p['reference']}."
        rows.append(
            {
                **{k: p[k] for k in ("prompt_id", "task", "messages", "reference", "tests", "constraints", "rubric")},
                "split": "train",
                "rollout_id": f"{p['prompt_id'][:16]}-{i}",
                "sample_index": i,
                "completion": completion,
                "n_tokens": len(completion) // 4,
                "finish_reason": "stop",
                "logprob_sum": None,
                "policy": {"name": "bench", "fingerprint": "0" * 64, "backend": "transformers"},
                "sampling": "{}",
                "seed": 0,
            }
        )
    return rows


def reward_model(policy: Path, out: Path) -> Path:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(policy)
    model = AutoModelForSequenceClassification.from_pretrained(policy, num_labels=1)
    model.config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def baseline(model_dir: Path, rows: list[dict], batch_size: int) -> float:
    """Plain transformers: load, then model(**batch) over batches in input order. -> seconds."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    start = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    conversations = [[*r["messages"], {"role": "assistant", "content": r["completion"]}] for r in rows]
    texts = [tokenizer.apply_chat_template(c, tokenize=False) for c in conversations]
    scores = []
    with torch.inference_mode():
        for i in range(0, len(texts), batch_size):
            batch = tokenizer(texts[i : i + batch_size], return_tensors="pt", padding=True, add_special_tokens=False)
            scores.extend(model(**batch).logits[:, 0].tolist())
    assert len(scores) == len(rows)
    return time.perf_counter() - start


def labeler(model_dir: Path, rollouts: Path, out: Path, batch_size: int, total: int) -> float:
    """The label stage's pipeline with the reward_model labeler, no cache. -> seconds."""
    params = label.LabelerParams("reward_model", {"model": str(model_dir), "batch_size": batch_size})
    start = time.perf_counter()
    run_pipeline(lambda p: label.build(p, "rm", params, str(rollouts), str(out), None, 64, total), BeamConfig())
    normalize_output(str(out), RewardModelScorer, RewardModelConfig(model=str(model_dir), batch_size=batch_size))
    elapsed = time.perf_counter() - start
    labels = read_rows(str(out))
    assert len(labels) == total and all(json.loads(r["raw"])["reward"] is not None for r in labels), "labels lost"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-rm-") as work:
        work = Path(work)
        materialize("builtin:smollm2-135m-instruct", work / "policy", "SmolLM2-135M-Instruct")
        model_dir = reward_model(work / "policy", work / "rm")
        rows = rollout_rows(args.rollouts)
        (work / "rollouts").mkdir()
        write_table(rows_to_table(rows, ROLLOUT_V2), str(work / "rollouts/part-00000-of-00001.parquet"))
        print(f"torch threads={torch.get_num_threads()} rollouts={len(rows)} batch_size={args.batch_size}")
        ratios = []
        for i in range(args.repeats):
            base = baseline(model_dir, rows, args.batch_size)
            mine = labeler(model_dir, work / "rollouts", work / f"labels-{i}", args.batch_size, len(rows))
            ratios.append(base / mine)
            print(
                f"repeat {i + 1}: baseline {base:.2f}s ({len(rows) / base:.1f} rollouts/s), "
                f"labeler {mine:.2f}s ({len(rows) / mine:.1f} rollouts/s), ratio {base / mine:.3f}"
            )
        print(f"ratio={statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
