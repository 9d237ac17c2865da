"""TrajectoryJudge: an LLM rates a whole multi-turn trajectory (the policy's turns, its tool calls, the tools' and the
environment's replies) on a Likert scale, as PointwiseJudge rates one answer.

Input columns: messages (the prompt), turns (ROLLOUT_V3), completion (the final answer).   Output: as PointwiseJudge
(score in [0, 1], confidence from G-Eval or self-consistency, verdict, rationale, raw).

The transcript (transforms/judges/transcript.py) is untrusted text: each message cut to `max_message_chars`, header
look-alikes defused, special tokens broken by the client's guard. Reasoning traces are hidden unless
`show_reasoning`. The final assistant turn is read as `completion` (the same text; the label stage's probes put
their attack completions there). A single-turn rollout (no `turns`) is judged as a transcript of its one answer.
A trajectory whose final answer has no substance scores 0.0 without a call, as for every judge: an agent that never
answers is not rescued by a busy transcript.
"""

from dataclasses import dataclass

from rewardmill.transforms.judges.client import JudgeRequest, JudgeResponse
from rewardmill.transforms.judges.transcript import build_trajectory_prompt, render_transcript
from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.judge_base import (
    JudgeLabeler,
    LikertJudgeConfig,
    likert_label,
    likert_sampling,
    question_of,
)


@dataclass(frozen=True)
class TrajectoryJudgeConfig(LikertJudgeConfig):
    """The Likert judge's settings (judge_base.py), and what the transcript shows."""

    criteria: str = "whether the agent solved the task, using its tools correctly and without wasted turns"
    max_tokens: int = 48  # "Score: n" then a short reason
    aspect: str = "trajectory"
    show_reasoning: bool = False  # let the judge read each turn's reasoning trace too
    max_message_chars: int = 1500  # of each message in the transcript; the rest is cut, and said so

    def __post_init__(self):
        super().__post_init__()
        if self.max_message_chars < 1:
            raise ValueError(f"max_message_chars must be >= 1, got {self.max_message_chars}")


class TrajectoryJudge(JudgeLabeler):
    name = "trajectory_judge"
    version = "1"
    reads = ("messages", "turns", "completion")
    Config = TrajectoryJudgeConfig

    def __init__(self, config: TrajectoryJudgeConfig | None = None):
        super().__init__()
        self.config = config or TrajectoryJudgeConfig()

    def request(self, messages, turns, completion: str) -> JudgeRequest:
        cfg = self.config
        shown = with_final_answer(turns, completion)
        transcript = render_transcript(shown, cfg.show_reasoning, cfg.max_message_chars)
        prompt = build_trajectory_prompt(question_of(messages), transcript, cfg.criteria, cfg.scale)
        return JudgeRequest(messages=prompt, sampling=likert_sampling(cfg))

    def label(self, messages, turns, completion: str) -> Label:
        return self.label_many([(messages, turns, completion)])[0]

    def label_many(self, rows: list[tuple]) -> list[Label]:
        return self.judge_answers(rows, 2, self.request, self.to_label)

    def to_label(self, response: JudgeResponse) -> Label:
        return likert_label(response, self.config)


def with_final_answer(turns, completion: str) -> list[dict]:
    """The transcript's messages: `turns` with the last assistant turn's answer being `completion` (the same text in
    a rollout; the attack text when the stage probes the judge with fixed completions), or the completion alone for
    a single-turn rollout. Nothing handed in is modified."""
    shown = [dict(t) for t in turns or ()]
    last = max((i for i, t in enumerate(shown) if t.get("role") == "assistant"), default=None)
    if last is None:
        return [*shown, {"role": "assistant", "content": completion}]
    shown[last]["content"] = completion
    return shown
