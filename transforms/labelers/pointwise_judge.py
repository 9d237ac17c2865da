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

from dataclasses import dataclass

from rewardmill.transforms.judges.client import JudgeRequest, JudgeResponse
from rewardmill.transforms.judges.likert import build_pointwise
from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.judge_base import (
    JudgeLabeler,
    LikertJudgeConfig,
    judged_answer,
    likert_label,
    likert_sampling,
    question_of,
)


@dataclass(frozen=True)
class PointwiseJudgeConfig(LikertJudgeConfig):
    """backend, criteria, scale, samples, temperature, max_tokens, seed, aspect, pass_threshold (judge_base.py)."""


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
        return JudgeRequest(messages=prompt, sampling=likert_sampling(cfg))

    def label(self, messages, completion: str) -> Label:
        return self.label_many([(messages, completion)])[0]

    def label_many(self, rows: list[tuple]) -> list[Label]:
        return self.judge_answers(rows, 1, self.request, self.to_label)

    def to_label(self, response: JudgeResponse) -> Label:
        """Pure: a judge response -> Label. Malformed text gives score None (abstain) with the text kept."""
        return likert_label(response, self.config)
