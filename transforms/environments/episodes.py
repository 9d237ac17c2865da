"""Episodes: one prompt's n multi-turn trajectories in an environment, every live trajectory's next turn sampled in
one batched call. Pure: the policy is a function (`TurnGenerate`) the caller binds to a backend.

Seeds. Trajectory j of a prompt has the seed a single-turn sample j would have (`sample_seed`); its turn t is
sampled with `turn_seed(seed, t)`. So a turn depends on its conversation so far and its seed only, never on which
other trajectories share its batch, and a turn can be cached and replayed by that key.

Stop reasons: `done` (the environment ended it), `max_turns` (that many assistant turns), `max_tokens` (the
assistant turns' tokens reached the budget), `error` (the environment raised; the error is in the trajectory's info).
"""

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardmill.schemas.trajectory import STOP_REASONS
from rewardmill.transforms.environments.contract import (
    ParsingEnvironment,
    PromptingEnvironment,
    StepResult,
    has_hook,
)
from rewardmill.transforms.sampling.params import Sample, sample_seed


@dataclass(frozen=True)
class TurnRequest:
    """One assistant turn to sample: the whole conversation so far (prompt messages, then the turns) and its seed.
    `messages[turns_from:]` are the episode's turns: tool output, feedback and the policy's own earlier text, all
    untrusted. A backend breaks its tokenizer's special strings in them before formatting (`turn_texts`), so a
    tool result that prints `<|im_end|>` cannot end its turn and write the next one."""

    messages: list[dict[str, Any]]
    seed: int
    tools: list[dict[str, Any]] | None = None
    turns_from: int = 0


TurnGenerate = Callable[[list[TurnRequest]], list[Sample]]  # one Sample (index 0) per request, in order


@dataclass(frozen=True)
class EpisodeLimits:
    max_turns: int = 3  # assistant turns per trajectory
    max_tokens: int | None = None  # assistant tokens per trajectory, over all its turns (None: no budget)

    def __post_init__(self):
        if self.max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {self.max_turns}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1 or null, got {self.max_tokens}")


@dataclass
class Trajectory:
    """A finished episode: `turns` are the messages after the prompt (assistant ones carry `n_tokens`,
    `finish_reason` and `logprob_sum`; each carries the step's `info` under `step_info`, assistant ones only)."""

    index: int
    seed: int
    turns: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = "done"
    reward: float | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def assistant_turns(self) -> list[dict[str, Any]]:
        return [t for t in self.turns if t["role"] == "assistant"]

    @property
    def completion(self) -> str:
        """The final answer: the last assistant message's content, when that turn answered. A last turn that called
        a tool, or tried to, in an episode a limit cut there (not `done`: the environment did not take it as the
        answer) never answered: '' (as before any turn), so no labeler reads an answer out of a call's code."""
        turns = self.assistant_turns
        if not turns:
            return ""
        called = turns[-1].get("tool_calls") or turns[-1].get("tool_errors")
        return "" if called and self.stop_reason != "done" else (turns[-1]["content"] or "")

    @property
    def n_tokens(self) -> int:
        return sum(t["n_tokens"] for t in self.assistant_turns)

    @property
    def finish_reason(self) -> str:
        turns = self.assistant_turns
        return turns[-1]["finish_reason"] if turns else "stop"

    @property
    def logprob_sum(self) -> float | None:
        values = [t["logprob_sum"] for t in self.assistant_turns]
        return None if not values or any(v is None for v in values) else float(sum(values))


def turn_seed(seed: int, turn: int) -> int:
    """The seed of turn `turn` (0-based) of the trajectory seeded `seed`; turn 0 uses `seed` itself."""
    if turn == 0:
        return seed
    digest = hashlib.sha256(f"turn\x00{seed}\x00{turn}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


@dataclass
class _Live:
    prompt: dict[str, Any]
    trajectory: Trajectory
    state: Any


def run_episodes(
    environment,
    prompts: Sequence[dict[str, Any]],
    n: int,
    base_seed: int,
    generate: TurnGenerate,
    limits: EpisodeLimits,
    tools: list[dict[str, Any]] | None = None,
    split: Callable[[str], Any] | None = None,
) -> list[list[Trajectory]]:
    """n trajectories per prompt, in order. Each round samples the next assistant turn of every live trajectory in
    one `generate` call, then steps each in its environment. A ParsingEnvironment turns the sampled text into the
    assistant message (its tool calls); else it is {"role": "assistant", "content": text}. A PromptingEnvironment's
    system message goes first in every conversation. With `split` (rollouts.reasoning), each sampled text's reasoning
    trace is taken apart first: the parser and the environment read only the answer, and the turn keeps the trace in
    `reasoning` (a trace cut off before its answer leaves an empty answer, which no environment credits)."""
    if has_hook(environment, ParsingEnvironment):
        parse = environment.parse
    else:
        parse = lambda text, turn: {"role": "assistant", "content": text}  # noqa: E731
    system = environment.system_message() if has_hook(environment, PromptingEnvironment) else None
    results: list[list[Trajectory]] = []
    live: list[_Live] = []
    for prompt in prompts:
        per_prompt = []
        for j in range(n):
            trajectory = Trajectory(index=j, seed=sample_seed(base_seed, prompt["prompt_id"], j))
            per_prompt.append(trajectory)
            try:
                live.append(_Live(prompt, trajectory, environment.reset(prompt)))
            except Exception as exc:  # a prompt the environment cannot run: recorded, not a crash of the stage
                _stop(trajectory, "error", {"error": _describe(exc), "at": "reset"})
        results.append(per_prompt)
    for turn in range(limits.max_turns):
        if not live:
            break
        requests = [
            TurnRequest(messages, turn_seed(e.trajectory.seed, turn), tools, turns_from)
            for e in live
            for messages, turns_from in [_conversation(e, system)]
        ]
        samples = generate(requests)
        if len(samples) != len(requests):
            raise RuntimeError(f"the policy returned {len(samples)} turns for {len(requests)} requests")
        still = []
        for episode, sample in zip(live, samples, strict=True):
            if _advance(environment, episode, sample, parse, limits, turn == limits.max_turns - 1, split):
                still.append(episode)
        live = still
    return results


def _advance(
    environment, episode: _Live, sample: Sample, parse, limits: EpisodeLimits, last: bool, split=None
) -> bool:
    """Record the sampled turn and step the environment; True while the trajectory goes on."""
    trajectory = episode.trajectory
    text, trace = sample.completion, {}
    if split is not None:
        parts = split(text)
        text, trace = parts.answer, {"reasoning": parts.reasoning, "reasoning_status": parts.status}
    try:
        parsed = parse(text, len(trajectory.assistant_turns))
    except Exception as exc:  # a parser that fails: the text as the answer, the failure recorded
        parsed = {"content": text, "parse_error": _describe(exc)}
    message = {**parsed, **trace, "role": "assistant"}
    message.update(n_tokens=sample.n_tokens, finish_reason=sample.finish_reason, logprob_sum=sample.logprob_sum)
    if sample.tokens is not None:
        message["tokens"] = sample.tokens
    trajectory.turns.append(message)
    try:
        episode.state, result = environment.step(episode.state, _for_step(message))
    except Exception as exc:
        _stop(trajectory, "error", {"error": _describe(exc), "at": f"step {len(trajectory.assistant_turns)}"})
        return False
    if not isinstance(result, StepResult):
        _stop(trajectory, "error", {"error": f"step returned {type(result).__name__}, not a StepResult"})
        return False
    message["step_info"] = result.info
    trajectory.turns.extend(dict(m) for m in result.messages)
    trajectory.reward, trajectory.info = result.reward, result.info
    if result.done:
        trajectory.stop_reason = "done"
        return False
    if limits.max_tokens is not None and trajectory.n_tokens >= limits.max_tokens:
        trajectory.stop_reason = "max_tokens"
        return False
    if last:
        trajectory.stop_reason = "max_turns"
        return False
    return True


TURN_ACCOUNTING = ("n_tokens", "finish_reason", "logprob_sum", "step_info", "reasoning_status", "tokens")
PARSE_NOTES = ("tool_errors", "parse_error")  # what a parser tells the environment, not the policy


def _for_step(message: dict[str, Any]) -> dict[str, Any]:
    """A message as the environment sees it: without the stage's accounting."""
    return {k: v for k, v in message.items() if k not in TURN_ACCOUNTING}


def _plain(message: dict[str, Any]) -> dict[str, Any]:
    """A message as the policy sees it: without the stage's accounting or the parser's notes."""
    return {k: v for k, v in message.items() if k not in TURN_ACCOUNTING and k not in PARSE_NOTES}


def fed_prompt(prompt_messages: list[dict[str, Any]], system: dict[str, str] | None) -> list[dict[str, Any]]:
    """The prompt's messages as the policy is fed them: with the environment's system message, if any, first (one
    system message: the environment's, then the prompt's own)."""
    messages = list(prompt_messages)
    if system is not None:
        if messages and messages[0]["role"] == "system":
            messages[0] = {"role": "system", "content": f"{system['content']}\n\n{messages[0]['content']}"}
        else:
            messages.insert(0, system)
    return messages


def _conversation(episode: _Live, system: dict[str, str] | None) -> tuple[list[dict[str, Any]], int]:
    """The conversation the policy continues, and where the episode's turns start in it."""
    messages = fed_prompt(episode.prompt["messages"], system)
    return [*messages, *(_plain(t) for t in episode.trajectory.turns)], len(messages)


def _stop(trajectory: Trajectory, reason: str, info: dict[str, Any]) -> None:
    trajectory.stop_reason = reason
    trajectory.info = info


def _describe(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


def by_stop_reason(trajectories: Sequence[Sequence[Trajectory]]) -> dict[str, int]:
    """How many trajectories stopped for each reason (every reason named, zeros included)."""
    counts = dict.fromkeys(STOP_REASONS, 0)
    for per_prompt in trajectories:
        for t in per_prompt:
            counts[t.stop_reason] += 1
    return counts
