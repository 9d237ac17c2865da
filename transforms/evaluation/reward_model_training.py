"""Train a small reward model on preference pairs with TRL's RewardTrainer (the `evaluate` stage's probe).

Input: pairs in TRL's conversational preference format (prompt, chosen, rejected; margin when `use_margin`).
Output: an HF folder holding an AutoModelForSequenceClassification with one head, and what the training saw.
Pairs longer than max_length are counted and left out before training (TRL would drop them without a count).
"""

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

log = logging.getLogger("rewardmill")


@dataclass(frozen=True)
class RewardModelTraining:
    """params `evaluate.train`."""

    base: str | None = None  # the model the RM starts from (an HF folder); null = the policy (models/policy)
    max_steps: int = 8  # optimizer steps (epochs repeat when the train split is small)
    batch_size: int = 8  # pairs per step
    learning_rate: float = 1.0e-4
    max_length: int = 512  # tokens of prompt + answer; longer pairs are counted and left out
    trainable: Literal["all", "head"] = "all"  # head = a linear probe on the frozen base (no backward through it)
    use_margin: bool = False  # pass the pairs' margin to the Bradley-Terry loss (TRL's margin column)
    seed: int = 0
    threads: int = 0  # torch CPU threads; 0 = torch's default

    def __post_init__(self):
        for name in ("max_steps", "batch_size", "max_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")
        if self.trainable not in ("all", "head"):
            raise ValueError(f"trainable must be all or head, got {self.trainable!r}")


def conversation_length(tokenizer, prompt: list[dict], answer: list[dict]) -> int:
    """Tokens of prompt + answer in the chat template, as RewardTrainer and the reward_model labeler format them."""
    return len(tokenizer.apply_chat_template([*prompt, *answer], tokenize=True, return_dict=True)["input_ids"])


def train_reward_model(pairs: list[dict], base: str, out: str | Path, cfg: RewardModelTraining) -> dict[str, Any]:
    """Train on `pairs` from `base` and save the reward model (weights, config, tokenizer) to `out`.

    Returns {pairs, too_long, trained_pairs, steps, trainable, loss, train_accuracy}: loss and accuracy are the
    trainer's over the last logged steps (train-set figures, not an evaluation)."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from trl import RewardConfig, RewardTrainer

    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    tokenizer = AutoTokenizer.from_pretrained(base)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    columns = ["prompt", "chosen", "rejected", *(["margin"] if cfg.use_margin else [])]
    fits = [
        {c: p[c] for c in columns}
        for p in pairs
        if max(conversation_length(tokenizer, p["prompt"], p[s]) for s in ("chosen", "rejected")) <= cfg.max_length
    ]
    summary: dict[str, Any] = {"pairs": len(pairs), "too_long": len(pairs) - len(fits), "trainable": cfg.trainable}
    if not fits:
        raise ValueError(f"no train pair fits max_length {cfg.max_length} ({len(pairs)} pairs): raise it")
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1, dtype=torch.float32)
    model.config.pad_token_id = tokenizer.pad_token_id
    if cfg.trainable == "head":
        for parameter in model.base_model.parameters():
            parameter.requires_grad = False
    out = Path(out)
    args = RewardConfig(
        output_dir=str(out / "_trainer"),
        max_steps=cfg.max_steps,
        per_device_train_batch_size=cfg.batch_size,
        learning_rate=cfg.learning_rate,
        max_length=cfg.max_length,
        logging_steps=max(1, cfg.max_steps // 5),
        report_to=[],
        use_cpu=not torch.cuda.is_available(),
        save_strategy="no",
        seed=cfg.seed,
        data_seed=cfg.seed,
    )
    trainer = RewardTrainer(model=model, processing_class=tokenizer, train_dataset=Dataset.from_list(fits), args=args)
    result = trainer.train()
    history = [h for h in trainer.state.log_history if "loss" in h]
    last = history[-1] if history else {}
    summary.update(
        trained_pairs=len(trainer.train_dataset),
        steps=result.global_step,
        loss=round(float(result.training_loss), 6),
        train_accuracy=round(float(last["accuracy"]), 6) if "accuracy" in last else None,
    )
    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    shutil.rmtree(out / "_trainer", ignore_errors=True)
    log.info(
        "evaluate: trained a reward model on %d pairs, %d steps, loss %.4f",
        len(fits),
        result.global_step,
        result.training_loss,
    )
    return summary
