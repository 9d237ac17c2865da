"""The rule verifiers an environment checks answers with, by the prompt's task (feedback, python_tool)."""

from typing import Any

from rewardmill.transforms.config import from_dict

DEFAULT_VERIFIERS = {"math": "math_answer", "code": "code_tests"}


class TaskVerifiers:
    """`verifiers`: task -> labeler registry key; `verifier_config`: labeler key -> its Config as params."""

    def __init__(self, verifiers: dict[str, str], verifier_config: dict[str, dict[str, Any]]):
        from rewardmill.transforms.labelers import get_labeler_class

        self._by_task = {}
        for task, key in verifiers.items():
            cls = get_labeler_class(key)
            settings = from_dict(cls.Config, verifier_config.get(key, {}), f"environment.config.{key}")
            self._by_task[task] = cls(settings)

    def tasks(self) -> list[str]:
        return list(self._by_task)

    def row(self, prompt: dict[str, Any]) -> dict[str, Any] | None:
        """What the task's verifier reads of the prompt (reference, tests), for the episode's state; None: the task
        has no verifier."""
        verifier = self._by_task.get(prompt["task"])
        return None if verifier is None else {k: prompt.get(k) for k in verifier.reads if k != "completion"}

    def verdict(self, task: str, row: dict[str, Any], answer: str):
        """The task verifier's main Label for `answer` (with the prompt's `row`), and the verifier's name."""
        verifier = self._by_task[task]
        label = verifier.label(*({**row, "completion": answer}[k] for k in verifier.reads))
        return (label[0] if isinstance(label, list) else label), verifier.name

    def close(self) -> None:
        """Release what the verifiers hold (code_tests' sandbox pool)."""
        from rewardmill.transforms.labelers.contract import tear_down

        for verifier in self._by_task.values():
            tear_down(verifier)
