"""What every model-based labeler (judge) shares: a lazily built client, the call cache, usage and teardown.

A judge labeler keeps its settings in `self.config`, whose `backend` field is a BackendConfig. The client is built
on first use (so the labeler pickles to Beam workers without a model inside) and dropped again when pickled.

Judges read the answer, not the reasoning (`judged_answer`), and an answer with no substance gets score 0.0 without
a judge call (`no_answer_label`): a "master key" such as ":" or "Let's solve this step by step." is never credited
and never outranks a sincere wrong answer. Every client is guarded against special-token strings (backends.py).
"""

import json
from dataclasses import dataclass, field, replace

from rewardmill.transforms.judges.backends import make_client
from rewardmill.transforms.judges.client import BackendConfig, JudgeClient, JudgeResponse, Sampling
from rewardmill.transforms.judges.guarded_client import unguarded
from rewardmill.transforms.judges.likert import (
    check_scale,
    geval_score,
    normalize_score,
    parse_likert,
    self_consistency,
)
from rewardmill.transforms.judges.reference import TOP_LOGPROBS
from rewardmill.transforms.judges.untrusted import NO_SUBSTANCE, has_substance
from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.reasoning import answer_text

JUDGE_CALL_FAILED = "judge_call_failed"


def question_of(messages) -> str:
    """The last user turn: what the completion answers."""
    users = [m["content"] for m in messages or () if m.get("role") == "user"]
    return users[-1] if users else ""


def call_failed(response_error: str, aspect: str) -> Label:
    """The label for a row whose judge call failed beyond its retry budget: the stage sends it to _rejects."""
    reason = f"judge call failed: {response_error}"[:500]
    return Label(None, 0.0, "error", reason, aspect=aspect, reject_reason=JUDGE_CALL_FAILED)


def judged_answer(completion) -> str:
    """What a judge reads of a completion: the answer after a leading reasoning block ("" for an unclosed one)."""
    return answer_text(completion) if isinstance(completion, str) else ""


def no_answer_label(aspect: str) -> Label:
    """The label of an answer with no substance: the lowest score, decided without asking the judge."""
    return Label(0.0, 1.0, "incorrect", NO_SUBSTANCE, raw=None, aspect=aspect)


def first_error(responses: list[JudgeResponse]) -> str | None:
    return next((r.error for r in responses if r.error), None)


class JudgeLabeler:
    """Mixin: `client` (one per labeler instance; `clients` for extra backends), `set_call_cache`, `usage`,
    `teardown`. Subclasses set `self.config` (with a `backend`) and call `super().__init__()`."""

    # False only to measure what the defenses change (bench/judge_probes.py): requests go out unguarded, and answers
    # with no substance are judged like any other.
    defended: bool = True

    def __init__(self):
        self._clients: dict = {}

    def screens_out(self, answer: str, question: str = "") -> bool:
        """Whether an answer is labeled `no_answer_label` instead of judged. Given the row's `question`
        (`question_of(messages)`), an answer that only restates it is screened out too."""
        return self.defended and not has_substance(answer, question)

    def judge_answers(self, rows: list[tuple], answer_at: int, request, to_label) -> list[Label]:
        """One label per row: rows whose answer (`row[answer_at]`) has no substance get `no_answer_label` without a
        call; the others' `request(*row)` go to the client in one batch, and each reply becomes `to_label(reply)`."""
        ask = [i for i, row in enumerate(rows) if not self.screens_out(judged_answer(row[answer_at]))]
        responses = self.client.complete([request(*rows[i]) for i in ask]) if ask else []
        answers = dict(zip(ask, responses, strict=True))
        empty = no_answer_label(self.config.aspect)
        return [to_label(answers[i]) if i in answers else empty for i in range(len(rows))]

    def __getstate__(self):  # clients hold models and connections; a copy opens its own when first used
        return {**self.__dict__, "_clients": {}}

    @property
    def client(self) -> JudgeClient:
        return self.client_for(self.config.backend)

    def client_for(self, backend) -> JudgeClient:
        """The client for `backend` (built once per distinct backend config; the call cache folder is shared)."""
        if backend.cache_dir is None and self.config.backend.cache_dir is not None:
            backend = replace(backend, cache_dir=self.config.backend.cache_dir)
        if backend not in self._clients:
            client = make_client(backend)
            self._clients[backend] = client if self.defended else unguarded(client)
        return self._clients[backend]

    def set_call_cache(self, directory: str) -> None:
        """Called by the label stage: every judge call is cached by content hash under `directory`."""
        if self.config.backend.cache_dir is None:
            self.config = replace(self.config, backend=replace(self.config.backend, cache_dir=directory))

    def usage(self) -> dict[str, int] | None:
        """Calls and tokens so far, summed over this labeler's clients; None before the first call."""
        if not self._clients:
            return None
        total: dict[str, int] = {}
        for client in self._clients.values():
            for key, value in client.usage().items():
                total[key] = total.get(key, 0) + value
        return total

    def teardown(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients = {}


# One greedy rating read from text alone: no measure of how sure the judge was.
CONFIDENCE_UNCALIBRATED = 0.5


@dataclass(frozen=True)
class LikertJudgeConfig:
    """What a Likert judge (pointwise_judge, trajectory_judge) is set with; each subclasses it with its defaults."""

    backend: BackendConfig = field(default_factory=BackendConfig)  # which model judges (default: the policy folder)
    criteria: str = "correctness of the final answer"
    scale: tuple[int, int] = (1, 5)
    samples: int = 1  # 1 = one greedy call (G-Eval when logprobs exist); k > 1 = k sampled ratings (self-consistency)
    temperature: float = 0.7  # for samples > 1
    max_tokens: int = 32  # "Score: n" then a short reason
    seed: int = 0
    aspect: str = "quality"
    pass_threshold: float = 0.5  # rescaled score at or above which the verdict is `correct`

    def __post_init__(self):
        check_scale(self.scale)
        if self.samples < 1:
            raise ValueError(f"samples must be >= 1, got {self.samples}")


def likert_sampling(cfg) -> Sampling:
    """How a Likert judge (`cfg`: samples, temperature, max_tokens, seed) asks: one greedy call with the score tokens'
    logprobs (G-Eval), or `samples` sampled ratings (self-consistency)."""
    if cfg.samples == 1:
        return Sampling(temperature=0.0, max_tokens=cfg.max_tokens, seed=cfg.seed, top_logprobs=TOP_LOGPROBS)
    return Sampling(temperature=cfg.temperature, max_tokens=cfg.max_tokens, n=cfg.samples, seed=cfg.seed)


def likert_label(response: JudgeResponse, cfg) -> Label:
    """Pure: a Likert judge's response -> Label (`cfg`: scale, samples, aspect, pass_threshold). With one sample and
    logprobs, the G-Eval expected score with a confidence that falls with its spread; with k samples, their mean and
    the share that agree; else the parsed rating at a flat, low confidence. Malformed text: score None (abstain)
    with the text kept."""
    if response.error:
        return call_failed(response.error, cfg.aspect)
    texts = [c.text for c in response.completions]
    parsed = [parse_likert(text, cfg.scale) for text in texts]
    raw = {"texts": texts, "parsed": [p.score for p in parsed]}
    if cfg.samples == 1:
        geval = geval_score(response.completions[0].logprobs, cfg.scale)
        if geval is not None:
            half_range = (cfg.scale[1] - cfg.scale[0]) / 2
            raw["geval"] = {"expected": geval.expected, "spread": geval.spread, "mass": geval.mass}
            score, confidence = geval.expected, max(0.0, 1.0 - geval.spread / half_range) * geval.mass
            how = f"G-Eval expected score {geval.expected:.2f} (spread {geval.spread:.2f})"
        else:
            score, confidence = parsed[0].score, CONFIDENCE_UNCALIBRATED
            how = f"rated {score}"
    else:
        summary = self_consistency([p.score for p in parsed])
        score, confidence = summary.mean, summary.agreement or 0.0
        how = f"mean of {summary.n_valid}/{len(parsed)} sampled ratings {summary.mean}"
    raw_text = json.dumps(raw, ensure_ascii=False)
    if score is None:
        return Label(None, 0.0, "abstain", "the judge gave no readable score", raw=raw_text, aspect=cfg.aspect)
    rescaled = normalize_score(score, cfg.scale)
    verdict = "correct" if rescaled >= cfg.pass_threshold else "incorrect"
    reason = next((p.rationale for p in parsed if p.rationale), "") or ""
    rationale = f"{how} on a {cfg.scale[0]}-{cfg.scale[1]} scale. {reason}".strip()
    confidence = round(min(1.0, confidence), 6)
    return Label(rescaled, confidence, verdict, rationale[:500], raw=raw_text, aspect=cfg.aspect)
