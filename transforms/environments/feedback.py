"""`feedback`: multi-attempt solving with verifier feedback.

The policy answers; a rule verifier (by the prompt's task: math_answer for math, code_tests for code) checks the
answer. Correct ends the episode with reward 1. Otherwise the environment replies as the user ("That is not correct.
Try again.") and the policy tries again, up to `max_attempts` answers; the last wrong one ends it with reward 0.
Every step's info records the attempt and the verifier's verdict, which are the turn-level signals.

It works with any model, the default one included: it needs no tool format, only the chat template. The feedback
never carries the reference or the tests (a policy that read them could copy them); `detail: true` appends the
verifier's own rationale (for code: which test failed, and how), as Agent-RLVR-style guidance, at that risk.
"""

from dataclasses import dataclass, field
from typing import Any

from rewardmill.transforms.environments.contract import StepResult
from rewardmill.transforms.environments.task_verifiers import DEFAULT_VERIFIERS, TaskVerifiers


@dataclass(frozen=True)
class FeedbackConfig:
    max_attempts: int = 3  # answers the policy may give; the episode ends at the first correct one
    feedback: str = "That is not correct. Try again."
    detail: bool = False  # append the verifier's rationale to the feedback (for code: the failing test)
    # task -> the labeler (registry key) that checks an answer, and its config (`labelers.<key>.config` style)
    verifiers: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_VERIFIERS))
    verifier_config: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self):
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if not self.feedback.strip():
            raise ValueError("feedback must be a non-empty message")
        unknown = set(self.verifier_config) - set(self.verifiers.values())
        if unknown:
            raise ValueError(f"verifier_config names labelers no task uses: {sorted(unknown)}")


class FeedbackEnvironment:
    name = "feedback"
    version = "1"
    Config = FeedbackConfig

    def __init__(self, config: FeedbackConfig):
        self.config = config
        self._verifiers = TaskVerifiers(config.verifiers, config.verifier_config)

    def close(self) -> None:
        self._verifiers.close()

    def reset(self, prompt: dict[str, Any]) -> dict[str, Any]:
        row = self._verifiers.row(prompt)
        if row is None:
            known = self._verifiers.tasks()
            raise ValueError(f"no verifier for task {prompt['task']!r} (environment.config.verifiers has {known})")
        return {"task": prompt["task"], "attempts": 0, "row": row}

    def step(self, state: dict[str, Any], assistant: dict[str, Any]) -> tuple[dict[str, Any], StepResult]:
        label, verifier = self._verifiers.verdict(state["task"], state["row"], assistant.get("content") or "")
        attempts = state["attempts"] + 1
        info = {"attempt": attempts, "verdict": label.verdict, "verifier": verifier}
        new_state = {**state, "attempts": attempts}
        if label.verdict == "correct":
            return new_state, StepResult(done=True, reward=1.0, info=info)
        if attempts >= self.config.max_attempts:
            return new_state, StepResult(done=True, reward=0.0, info=info)
        text = self.config.feedback
        if self.config.detail and label.rationale:
            text = f"{text}\n{label.rationale}"
        return new_state, StepResult(messages=[{"role": "user", "content": text}], reward=None, info=info)
