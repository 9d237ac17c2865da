"""PointwiseJudge: an LLM rates each completion on a Likert scale, with a confidence for that rating.

Input columns: messages (the prompt), completion.   Output: score in [0, 1] (the Likert score rescaled; None =
the judge gave no readable score), confidence, verdict, rationale, raw (the judge's text and what was parsed).
The judge reads the answer after any leading reasoning block; an answer with no substance (empty, only symbols, a
bare lead-in such as "Solution") scores 0.0 without a call (judge_base.no_answer_label).

Confidence, after G-Eval and self-consistency: with one greedy call and a backend that returns logprobs, the score
is the expected value over the score tokens' probabilities and confidence falls with its spread; with `samples` > 1
the score is the mean of k sampled ratings and confidence is the share that agree with the most common one.
A backend without logprobs and one sample gives the parsed rating at a flat, low confidence.
"""

import json
from dataclasses import dataclass, field

from rewardmill.transforms.judges.client import BackendConfig, JudgeRequest, JudgeResponse, Sampling
from rewardmill.transforms.judges.likert import (
    build_pointwise,
    check_scale,
    geval_score,
    normalize_score,
    parse_likert,
    self_consistency,
)
from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.judge_base import (
    JudgeLabeler,
    call_failed,
    judged_answer,
    no_answer_label,
    question_of,
)

# One greedy rating read from text alone: no measure of how sure the judge was.
CONFIDENCE_UNCALIBRATED = 0.5
TOP_LOGPROBS = 20


@dataclass(frozen=True)
class PointwiseJudgeConfig:
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


class PointwiseJudge(JudgeLabeler):
    name = "pointwise_judge"
    version = "2"  # 2: reads the answer after reasoning; no substance = 0.0 without a call
    reads = ("messages", "completion")
    Config = PointwiseJudgeConfig

    def __init__(self, config: PointwiseJudgeConfig | None = None):
        super().__init__()
        self.config = config or PointwiseJudgeConfig()

    def request(self, messages, completion: str) -> JudgeRequest:
        cfg = self.config
        prompt = build_pointwise(question_of(messages), judged_answer(completion), cfg.criteria, cfg.scale)
        if cfg.samples == 1:
            sampling = Sampling(temperature=0.0, max_tokens=cfg.max_tokens, seed=cfg.seed, top_logprobs=TOP_LOGPROBS)
        else:
            sampling = Sampling(temperature=cfg.temperature, max_tokens=cfg.max_tokens, n=cfg.samples, seed=cfg.seed)
        return JudgeRequest(messages=prompt, sampling=sampling)

    def label(self, messages, completion: str) -> Label:
        return self.label_many([(messages, completion)])[0]

    def label_many(self, rows: list[tuple]) -> list[Label]:
        ask = [i for i, (_, completion) in enumerate(rows) if not self.screens_out(judged_answer(completion))]
        responses = self.client.complete([self.request(*rows[i]) for i in ask]) if ask else []
        answers = dict(zip(ask, responses, strict=True))
        empty = no_answer_label(self.config.aspect)
        return [self.to_label(answers[i]) if i in answers else empty for i in range(len(rows))]

    def to_label(self, response: JudgeResponse) -> Label:
        """Pure: a judge response -> Label. Malformed text gives score None (abstain) with the text kept."""
        cfg = self.config
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
