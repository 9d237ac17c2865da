"""`rewardmill new-environment NAME`: scaffold an environment in one file, its test and its registry entry.

Creates transforms/environments/NAME.py and tests/transforms/environments/test_NAME.py and registers the class in
transforms/environments/__init__.py. Nothing existing is overwritten. params.yaml is left alone: one environment runs
at a time, and the printed next steps say how to turn it on.
"""

import re

from rewardmill.pipelines.scaffold import add_to_registry, next_steps, scaffold_args
from rewardmill.transforms.errors import UserError

ENVIRONMENT_TEMPLATE = '''"""`{name}`: TODO one line on the episode it runs and the signal its turns give.

TODO: what the policy sees first, what the environment replies, and when the episode ends. This starting point asks
for a shorter answer until the answer has at most `max_words` words (reward 1), or the attempts run out (reward 0).
"""

from dataclasses import dataclass
from typing import Any

from rewardmill.transforms.environments.contract import StepResult


@dataclass(frozen=True)
class {config}:
    max_words: int = 20  # TODO: your settings; params.yaml `rollouts.environment.config` is checked against them
    max_attempts: int = 3

    def __post_init__(self):
        if self.max_words < 1 or self.max_attempts < 1:
            raise ValueError("max_words and max_attempts must be >= 1")


class {cls}:
    name = "{name}"
    version = "1"  # bump when its episodes change: the rollouts cache keys on it
    Config = {config}

    def __init__(self, config: {config}):
        self.config = config

    def reset(self, prompt: dict[str, Any]) -> dict[str, Any]:
        """A prompt row -> the episode's state (plain, JSON-serializable data)."""
        return {{"attempts": 0}}

    def step(self, state: dict[str, Any], assistant: dict[str, Any]) -> tuple[dict[str, Any], StepResult]:
        """The state and the policy's answer -> the new state and what follows. A bad answer is a result (feedback,
        reward 0), never an exception."""
        attempts = state["attempts"] + 1
        words = len((assistant.get("content") or "").split())
        info = {{"attempt": attempts, "words": words}}
        if words <= self.config.max_words:
            return {{"attempts": attempts}}, StepResult(done=True, reward=1.0, info=info)
        if attempts >= self.config.max_attempts:
            return {{"attempts": attempts}}, StepResult(done=True, reward=0.0, info=info)
        feedback = {{"role": "user", "content": f"Answer again in at most {{self.config.max_words}} words."}}
        return {{"attempts": attempts}}, StepResult([feedback], info=info)
'''

TEST_TEMPLATE = """import pickle

import pytest

from rewardmill.transforms.environments import ENVIRONMENTS
from rewardmill.transforms.environments.contract import check_environment
from rewardmill.transforms.environments.{name} import {names}

PROMPT = {{"prompt_id": "p", "task": "open", "messages": [{{"role": "user", "content": "Hi?"}}]}}


@pytest.mark.parametrize(
    ("answers", "reward", "turns"),
    [
        (["short"], 1.0, 1),  # TODO: the episode your environment rewards at once
        (["word " * 30, "short"], 1.0, 2),  # told to try again, then rewarded
        (["word " * 30] * 3, 0.0, 3),  # the attempts run out
        ([""], 1.0, 1),  # TODO: malformed or empty input: a result, never an exception
    ],
)
def test_episode_table(answers, reward, turns):
    environment = {cls}({config}())
    state, steps = environment.reset(PROMPT), 0
    for answer in answers:
        state, result = environment.step(state, {{"role": "assistant", "content": answer}})
        steps += 1
        if result.done:
            break
    assert (result.reward, steps) == (reward, turns)


def test_registered_picklable_and_a_declared_environment():
    assert ENVIRONMENTS["{name}"] is {cls}
    environment = check_environment({cls}, "{name}")  # has the members the Protocol declares
    assert environment is {cls}
    assert pickle.loads(pickle.dumps({cls}({config}()))).reset(PROMPT) is not None
"""


def class_names(name: str) -> tuple[str, str]:
    """(the environment class, its Config class): short_answer -> ShortAnswerEnvironment, ShortAnswerConfig."""
    base = "".join(part.capitalize() for part in name.split("_"))
    return f"{base}Environment", f"{base}Config"


def main(argv: list[str] | None = None) -> None:
    name, root = scaffold_args(argv, "new-environment", "environment", __doc__)
    cls, config = class_names(name)
    source = root / "transforms/environments" / f"{name}.py"
    test = root / "tests/transforms/environments" / f"test_{name}.py"
    for path in (source, test):
        if path.exists():
            raise UserError(f"{path} exists already; nothing was changed")
    registry = root / "transforms/environments/__init__.py"
    if re.search(rf'^    "{re.escape(name)}":', registry.read_text(), flags=re.M):
        raise UserError(f"{registry}: {name!r} is registered already; nothing was changed")
    source.write_text(ENVIRONMENT_TEMPLATE.format(name=name, cls=cls, config=config))
    test.parent.mkdir(parents=True, exist_ok=True)
    test.write_text(TEST_TEMPLATE.format(name=name, cls=cls, config=config, names=", ".join(sorted([cls, config]))))
    add_to_registry(registry, name, cls, "environments", "ENVIRONMENTS", "new-environment")
    print(f"created {source}\ncreated {test}\nregistered {cls} as '{name}' in {registry.relative_to(root)}")
    steps = next_steps(source, test)
    steps[-1] = f"  3. in params.yaml set rollouts.environment: {{name: {name}, max_turns: 3}}, then dvc repro"
    print("\n".join(steps))
