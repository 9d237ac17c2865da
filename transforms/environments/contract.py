"""The environment contract: what the rollouts stage may call on an environment, declared as Protocols.

An environment turns one prompt into a multi-turn episode. The stage samples an assistant message for every live
episode (all of them in one batched generate call), hands each to its environment's `step`, and appends what comes
back (tool results, feedback) to the conversation, until the environment says `done` or a limit stops it.

An environment is any class with the `Environment` members, as a labeler is (transforms/labelers/contract.py):
nothing is subclassed, and optional hooks (`ToolEnvironment.tools`, `ClosingEnvironment.close`) are small Protocols
of their own, asked through `has_hook`. `reset` and `step` are pure functions of their arguments and the config:
the same prompt and the same assistant messages give the same episode, which is what lets a killed stage resume
from cached turns and `dvc repro -f` write the same bytes.
"""

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from rewardmill.transforms.errors import UserError
from rewardmill.transforms.labelers.contract import check_plugin, missing  # the Protocol lookup, one place


@dataclass
class StepResult:
    """What `step` returns: the messages that follow the assistant's (role `tool` with its `tool_call_id`, or
    `user` feedback), whether the episode is over, and the environment's own outcome.

    `reward`: the environment's outcome reward in [0, 1] (None: it has none yet, or none at all).
    `info`: JSON-serializable facts about the step (a verifier's verdict, a tool error); the last step's info is
    kept with the trajectory, each step's with its turn.
    """

    messages: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False
    reward: float | None = None
    info: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Environment(Protocol):
    """What every environment has. The stage builds it once per worker as `cls(config)`.

    `name`: its registry key.   `version`: bump it when its episodes change (the rollouts cache keys on it).
    `Config`: a frozen dataclass of its params.yaml settings (`rollouts.environment.config`).
    """

    name: str
    version: str
    Config: type

    def reset(self, prompt: dict[str, Any]) -> Any:
        """A prompt row (PROMPT_V1 columns) -> the episode's state (JSON-serializable), before the first turn."""
        ...

    def step(self, state: Any, assistant: dict[str, Any]) -> tuple[Any, StepResult]:
        """The state and the policy's latest assistant message ({role, content, reasoning?, tool_calls?}) -> the
        new state and what follows. Bad behaviour of the policy (a malformed tool call, a wrong answer) is a
        result, never an exception; an exception ends that episode alone with stop reason `error`."""
        ...


@runtime_checkable
class ToolEnvironment(Protocol):
    """An environment that offers the policy tools."""

    def tools(self) -> list[dict[str, Any]]:
        """The JSON schemas of its tools (OpenAI/TRL `tools` format: {"type": "function", "function": {...}}), passed
        to the chat template and kept in the rollout's `tools` column."""
        ...


@runtime_checkable
class ParsingEnvironment(Protocol):
    """An environment that reads structure out of the policy's text (tool calls in a text protocol)."""

    def parse(self, text: str, turn: int) -> dict[str, Any]:
        """The sampled text of assistant turn `turn` (0-based) -> the assistant message ({role, content,
        tool_calls?}); keys of its own (such as `tool_errors`) reach `step` but not the conversation."""
        ...


@runtime_checkable
class PromptingEnvironment(Protocol):
    """An environment that adds a system message to every conversation (a tool protocol the template lacks)."""

    def system_message(self) -> dict[str, str] | None: ...


@runtime_checkable
class TemplateAwareEnvironment(Protocol):
    """An environment whose format depends on the policy's chat template (a native tool format, or a text protocol).
    The stage calls it once, before the first episode, with whether the template renders `tools` (None: it cannot
    tell, as for a served policy, whose template is the server's)."""

    def use_template(self, renders_tools: bool | None) -> None: ...


@runtime_checkable
class ClosingEnvironment(Protocol):
    """An environment that holds something to release when the stage ends (a sandbox pool)."""

    def close(self) -> None: ...


class NotAnEnvironment(UserError):
    """A registered or entry-point class that lacks the `Environment` members."""


def has_hook(subject: Any, hook: type) -> bool:
    """Whether `subject` (an environment class or instance) has every method of the hook Protocol `hook`."""
    return not missing(subject, hook)


def check_environment(cls: Any, where: str) -> Any:
    """`cls` when it is an environment class (every `Environment` member, `Config` a dataclass), else
    NotAnEnvironment naming `where` and what is missing."""
    return check_plugin(
        cls, Environment, where, NotAnEnvironment, "environment", "transforms/environments/contract.py"
    )
