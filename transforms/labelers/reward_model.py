"""RewardModelScorer: score rollouts with a sequence-classification reward model (Skywork-Reward, ArmoRM style).

Input columns: messages (the prompt), completion. Output: one label per head (aspect), score in [0, 1], verdict
correct when the score is at least 0.5 (not a verification: a reward model is no gate), raw = JSON
{"reward": the head's logit, "tokens": input length}. The logit is what the model says; the score is that logit
squashed: sigmoid(logit) here, and, with `normalize: run` (the default), sigmoid of the logit's z-score over the
whole run (`normalize_run`, applied by the label stage once every label exists), so reward models on different
scales aggregate with the rule verifiers' 0/1.

pointwise mode: each rollout alone; confidence is the config's `confidence` (a reward model is not calibrated).
pairwise mode: all rollouts of a prompt at once (`label_group`); a rollout's confidence is the Bradley-Terry
probability of its most certain comparison in the group, sigmoid(|r_i - r_j|). A best-vs-worst pair's confidence
(the smaller of its two sides) is then exactly P(chosen beats rejected) = sigmoid(r_chosen - r_rejected).
"""

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import polars as pl

from rewardmill.transforms.labelers.base import Label

MODES = ("pointwise", "pairwise")


class NoRewardHead(ValueError):
    """The model folder holds no sequence-classification head."""


def check_reward_model(model: str) -> None:
    """NoRewardHead when a local model folder's config names no `*ForSequenceClassification` architecture:
    loading a causal LM as a classifier would silently score with a random, untrained head."""
    config = Path(model) / "config.json"
    if not config.exists():
        if Path(model).exists():
            raise NoRewardHead(f"reward model {model}: no config.json in that folder")
        return  # a hub id: checked when it loads
    architectures = json.loads(config.read_text()).get("architectures") or []
    if not any(a.endswith("ForSequenceClassification") for a in architectures):
        raise NoRewardHead(
            f"reward model {model} has no sequence-classification head (architectures: {architectures}); "
            "train one with TRL's RewardTrainer (AutoModelForSequenceClassification, num_labels=1) or pick a "
            "reward model such as Skywork-Reward"
        )


@dataclass(frozen=True)
class RewardModelConfig:
    model: str  # an HF folder (or hub id, with network) of an AutoModelForSequenceClassification reward model
    # Head names, in head order; () = the model's id2label when it names them, else "reward" (one head), "head_<i>"
    aspects: tuple[str, ...] = ()
    mode: Literal["pointwise", "pairwise"] = "pointwise"
    normalize: Literal["run", "sigmoid"] = "run"  # run = sigmoid of the logit's z-score over the run's labels
    confidence: float = 1.0  # pointwise confidence (pairwise: from the Bradley-Terry probabilities)
    batch_size: int = 8  # sequences per forward pass (batches are sorted by length, so padding is small)
    max_length: int = 2048  # tokens of prompt + completion; a longer input abstains (truncating would misjudge it)
    dtype: str = "float32"
    threads: int = 0  # torch CPU threads; 0 = torch's default

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"confidence must be in [0, 1], got {self.confidence}")
        for name in ("batch_size", "max_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        check_reward_model(self.model)

    def model_identity(self) -> str:
        """The model's content fingerprint, so a new model at the same path never reads the old one's labels."""
        from rewardmill.transforms.sampling.policy import model_identity

        return f"reward_model|{model_identity(self.model, self.dtype)}"


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def head_names(aspects: tuple[str, ...], id2label: dict | None, num_labels: int) -> tuple[str, ...]:
    """The aspect name of each head: configured, else the model's own label names, else reward / head_<i>."""
    if aspects:
        if len(aspects) != num_labels:
            raise ValueError(f"aspects names {len(aspects)} heads but the model has {num_labels}: {list(aspects)}")
        return tuple(aspects)
    names = [str((id2label or {}).get(i, (id2label or {}).get(str(i), ""))) for i in range(num_labels)]
    if all(names) and not any(n.startswith("LABEL_") for n in names):  # LABEL_<i> is transformers' placeholder
        return tuple(names)
    return ("reward",) if num_labels == 1 else tuple(f"head_{i}" for i in range(num_labels))


def batches_by_length(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of similar length (longest first), so a batch pads little (pure)."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


class RewardModelScorer:
    """Score = the reward model's head output for prompt + completion, squashed to [0, 1]; raw keeps the logit.

    Input columns: messages, completion. One label per head (its aspect). See the module docstring for modes."""

    name = "reward_model"
    version = "1"
    reads = ("messages", "completion")
    Config = RewardModelConfig

    def __init__(self, config: RewardModelConfig):
        self.config = config
        self._model = None
        self._tokenizer = None
        self.aspects: tuple[str, ...] = ()

    def __getstate__(self):
        return {"config": self.config}

    def __setstate__(self, state):
        self.__init__(state["config"])

    def _load(self):
        if self._model is None:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer

            cfg = self.config
            if cfg.threads:
                torch.set_num_threads(cfg.threads)
            tokenizer = AutoTokenizer.from_pretrained(cfg.model)
            model = AutoModelForSequenceClassification.from_pretrained(cfg.model, dtype=getattr(torch, cfg.dtype))
            check_reward_model_class(model)
            if model.config.pad_token_id is None:  # a batch needs the pad id to find each sequence's last token
                if tokenizer.pad_token_id is None:
                    tokenizer.pad_token = tokenizer.eos_token
                model.config.pad_token_id = tokenizer.pad_token_id
            model.eval()
            self.aspects = head_names(cfg.aspects, model.config.id2label, model.config.num_labels)
            self._model, self._tokenizer = model, tokenizer
        return self._model, self._tokenizer

    def text(self, messages: list[dict], completion: str) -> str:
        """Prompt + completion in the model's chat template, as TRL's RewardTrainer formats conversational pairs."""
        _, tokenizer = self._load()
        conversation = [*messages, {"role": "assistant", "content": completion}]
        return tokenizer.apply_chat_template(conversation, tokenize=False)

    def rewards(self, rows: list[tuple]) -> tuple[list[list[float] | None], list[int]]:
        """(the heads' logits, the input's tokens) for each (messages, completion); logits None where the input is
        longer than max_length. Length-sorted batches; results in input order."""
        import torch

        model, tokenizer = self._load()
        encoded = [tokenizer(self.text(m, c), add_special_tokens=False)["input_ids"] for m, c in rows]
        out: list[list[float] | None] = [None] * len(rows)
        fits = [i for i, ids in enumerate(encoded) if len(ids) <= self.config.max_length]
        for batch in batches_by_length([len(encoded[i]) for i in fits], self.config.batch_size):
            idx = [fits[j] for j in batch]
            padded = tokenizer.pad({"input_ids": [encoded[i] for i in idx]}, return_tensors="pt", padding_side="right")
            with torch.inference_mode():
                logits = model(**padded).logits.float()
            for i, row in zip(idx, logits.tolist(), strict=True):
                out[i] = row
        return out, [len(ids) for ids in encoded]

    def label(self, messages, completion) -> list[Label]:
        return self.label_many([(messages, completion)])[0]

    def label_many(self, rows: list[tuple]) -> list[list[Label]]:
        rewards, lengths = self.rewards(rows)
        fixed = [self.config.confidence] * len(self.aspects)
        return [self._labels(r, n, fixed) for r, n in zip(rewards, lengths, strict=True)]

    @staticmethod
    def groups(config: RewardModelConfig) -> bool:
        """The label stage hands over a prompt's rollouts together only in pairwise mode."""
        return config.mode == "pairwise"

    def label_group(self, rows: list[tuple]) -> list[list[Label]]:
        """pairwise mode: confidence from the Bradley-Terry probabilities within the prompt's rollouts."""
        if self.config.mode != "pairwise":
            return self.label_many(rows)
        rewards, lengths = self.rewards(rows)
        labels = []
        for i, (reward, n) in enumerate(zip(rewards, lengths, strict=True)):
            confidences = []
            for head in range(len(self.aspects)):
                others = [r[head] for j, r in enumerate(rewards) if j != i and r is not None]
                gaps = [abs(reward[head] - o) for o in others] if reward is not None else []
                confidences.append(sigmoid(max(gaps)) if gaps else 0.5)
            labels.append(self._labels(reward, n, confidences))
        return labels

    def _labels(self, reward: list[float] | None, tokens: int, confidences: list[float]) -> list[Label]:
        if reward is None:
            why = f"input is {tokens} tokens, longer than max_length {self.config.max_length}"
            return [Label(None, 0.0, "abstain", why, aspect=a) for a in self.aspects]
        return [
            Label(
                sigmoid(r),
                c,
                "correct" if r >= 0 else "incorrect",
                f"{a} logit {r:.4f}",
                json.dumps({"reward": r, "tokens": tokens}),
                aspect=a,
            )
            for a, r, c in zip(self.aspects, reward, confidences, strict=True)
        ]

    @classmethod
    def normalize_run(cls, labels: pl.DataFrame, config: RewardModelConfig) -> pl.DataFrame:
        """normalize: run -> each aspect's score = sigmoid(z-score of its logit over this run's labels) (a constant
        logit gives 0.5). Rows without a logit keep their null score; `raw` keeps every logit."""
        if config.normalize != "run":
            return labels
        logit = pl.col("raw").str.json_path_match("$.reward").cast(pl.Float64)
        z = (logit - logit.mean().over("aspect")) / logit.std(ddof=0).over("aspect")
        squashed = 1.0 / (1.0 + (-z.fill_nan(0.0)).exp())
        scored = pl.col("score").is_not_null()
        labels = labels.with_columns(score=pl.when(scored).then(squashed.fill_null(0.5)).otherwise(pl.col("score")))
        verdict = pl.when(pl.col("score") >= 0.5).then(pl.lit("correct")).otherwise(pl.lit("incorrect"))
        return labels.with_columns(verdict=pl.when(scored).then(verdict).otherwise(pl.col("verdict")))


def check_reward_model_class(model) -> None:
    """NoRewardHead for a loaded model that is not a sequence classifier (a hub id that named a causal LM)."""
    if not type(model).__name__.endswith("ForSequenceClassification"):
        raise NoRewardHead(f"{type(model).__name__} is not a sequence-classification reward model")
