"""`python_tool`: the policy may call a sandboxed Python tool before it answers.

Each assistant turn may call `python` with `{"code": "..."}` (the text protocol of tool_calls.py, or a template's
native tool calls). The code runs in the code_tests sandbox (transforms/sandbox: bubblewrap, no network, a
read-only root, memory, process, file and time limits); its stdout, stderr and how it ended come back as the tool
message, cut to `max_output_chars`. A turn without a tool call is an answer, verified by the prompt's task
(math_answer, code_tests: as in `feedback`). A correct one ends the episode with reward 1. A wrong one ends it with
reward 0, unless `max_attempts` allows another answer: then the environment replies as the user ("That is not
correct. Try again.", never the reference or the tests) and the policy may call the tool again and answer again, as in
`feedback`. A task with no verifier ends at its first answer with reward None.

Whatever the policy or its code does is a recorded result, never a crash of the stage: a malformed call, an
unknown tool or bad arguments get a tool error message; code that hangs is killed at the timeout, one that crashes
reports its exit, a flood of output is cut, a network attempt fails inside the sandbox. Each is counted in the
step's info (`tool_errors`, `timeouts`, `crashes`, `truncated`). After `max_calls` calls the tool refuses further
calls and asks for the final answer.
"""

from dataclasses import dataclass, field, replace
from typing import Any

from rewardmill.transforms.environments.contract import StepResult
from rewardmill.transforms.environments.task_verifiers import DEFAULT_VERIFIERS, TaskVerifiers
from rewardmill.transforms.environments.tool_calls import assistant_turn, protocol_prompt

TOOL = {
    "type": "function",
    "function": {
        "name": "python",
        "description": "Run Python code (standard library only, no network) and return what it prints.",
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "the code to run"}},
            "required": ["code"],
        },
    },
}


@dataclass(frozen=True)
class PythonToolConfig:
    timeout_seconds: float = 5.0  # wall clock per call; the code is killed then
    memory_mb: int = 256  # address space of the code's process
    max_output_chars: int = 2000  # of stdout + stderr in the tool message; the rest is cut, and said so
    max_calls: int = 4  # tool calls per trajectory; then the tool refuses and asks for the answer
    # true: the text protocol (its system message; each assistant turn's content is what the policy wrote, calls
    # included); false: the chat template's own tool format (it renders `tools` and the parsed calls); null: the
    # template's own when it renders tools (Qwen2.5/3, Hermes style `<tool_call>` JSON), else the text protocol
    system_prompt: bool | None = None
    max_attempts: int = 1  # answers the policy may give; a wrong one below this gets `feedback` and another turn
    feedback: str = "That is not correct. Try again."
    verifiers: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_VERIFIERS))
    verifier_config: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self):
        if not self.timeout_seconds > 0 or self.memory_mb < 16 or self.max_output_chars < 1 or self.max_calls < 0:
            raise ValueError("timeout_seconds > 0, memory_mb >= 16, max_output_chars >= 1 and max_calls >= 0")
        if self.max_attempts < 1 or not self.feedback.strip():
            raise ValueError("max_attempts must be >= 1 and feedback a non-empty message")


class PythonToolEnvironment:
    name = "python_tool"
    # 2: in the text protocol, an assistant turn's content keeps its calls as written; 3: max_attempts, every
    # answer's info records its attempt, and system_prompt null (the template's own tool format where it has one)
    version = "3"
    Config = PythonToolConfig

    def __init__(self, config: PythonToolConfig):
        from rewardmill.transforms.sandbox.runner import Sandbox

        # system_prompt null waits for use_template; until then (or when the stage cannot tell) the text protocol
        self.config = config if config.system_prompt is not None else replace(config, system_prompt=True)
        self._auto = config.system_prompt is None
        self.sandbox = Sandbox()
        self._verifiers = TaskVerifiers(config.verifiers, config.verifier_config)

    def use_template(self, renders_tools: bool | None) -> None:
        """system_prompt null: the chat template's own tool format when it renders tools, else the text protocol.
        The resolved value is the config the rollouts record."""
        if self._auto:
            self.config = replace(self.config, system_prompt=not renders_tools)

    def tools(self) -> list[dict[str, Any]]:
        return [TOOL]

    def system_message(self) -> dict[str, str] | None:
        return {"role": "system", "content": protocol_prompt([TOOL])} if self.config.system_prompt else None

    def parse(self, text: str, turn: int) -> dict[str, Any]:
        return assistant_turn(text, turn, {"python"}, self.config.system_prompt)

    def close(self) -> None:
        self._verifiers.close()

    def reset(self, prompt: dict[str, Any]) -> dict[str, Any]:
        return {"task": prompt["task"], "calls": 0, "attempts": 0, "row": self._verifiers.row(prompt)}

    def step(self, state: dict[str, Any], assistant: dict[str, Any]) -> tuple[dict[str, Any], StepResult]:
        calls, errors = assistant.get("tool_calls") or [], assistant.get("tool_errors") or []
        if not calls and not errors:  # an answer
            return self._answer(state, assistant.get("content") or "")
        messages, counts = [], {"tool_errors": len(errors), "timeouts": 0, "crashes": 0, "truncated": 0}
        for error in errors:
            messages.append(_tool_message(error["id"], f"error: {error['error']}"))
        used = state["calls"]
        for call in calls:
            if used >= self.config.max_calls:
                text = f"error: no more tool calls ({self.config.max_calls} used); give your final answer"
                counts["tool_errors"] += 1
            else:
                used += 1
                text = self._run(call["function"]["arguments"], counts)
            messages.append(_tool_message(call["id"], text))
        # tool_errors: the calls that did not parse (parse_errors) and the parsed calls refused
        info = {"calls": used, **counts, "parse_errors": len(errors)}
        return {**state, "calls": used}, StepResult(messages=messages, info=info)

    def _run(self, arguments: dict[str, Any], counts: dict[str, int]) -> str:
        from rewardmill.transforms.sandbox.runner import SandboxLimits

        code = arguments.get("code")
        if not isinstance(code, str):
            counts["tool_errors"] += 1
            return "error: `code` must be a string"
        limits = SandboxLimits(
            timeout_seconds=self.config.timeout_seconds,
            memory_mb=self.config.memory_mb,
            max_output_bytes=4 * self.config.max_output_chars,
        )
        result = self.sandbox.run(code, "", limits)
        if result.sandbox_error:
            counts["crashes"] += 1
            return f"error: the sandbox could not run the code ({result.sandbox_error})"
        output = result.stdout + (f"\n[stderr]\n{result.stderr}" if result.stderr else "")
        if result.timed_out:
            counts["timeouts"] += 1
            output += f"\n[killed: exceeded {self.config.timeout_seconds}s]"
        elif result.exit_code != 0:
            counts["crashes"] += 1
            output += f"\n[exit {result.exit_code if result.exit_code is not None else 'by signal'}]"
        if len(output) > self.config.max_output_chars or result.stdout_truncated or result.stderr_truncated:
            counts["truncated"] += 1
            output = output[: self.config.max_output_chars] + "\n[output cut]"
        return output.strip() or "(no output)"

    def _answer(self, state: dict[str, Any], answer: str) -> tuple[dict[str, Any], StepResult]:
        """An answer: verified; correct or the last allowed one ends the episode, a wrong one earlier gets feedback."""
        state = {**state, "attempts": state["attempts"] + 1}
        info = {"calls": state["calls"], "attempt": state["attempts"], "verdict": None}
        if state["row"] is None:  # a task with no verifier: no outcome reward, nothing to try again
            return state, StepResult(done=True, reward=None, info=info)
        label, _ = self._verifiers.verdict(state["task"], state["row"], answer)
        info["verdict"] = label.verdict
        if label.verdict == "correct":
            return state, StepResult(done=True, reward=1.0, info=info)
        if state["attempts"] >= self.config.max_attempts:
            return state, StepResult(done=True, reward=0.0, info=info)
        feedback = [{"role": "user", "content": self.config.feedback}]
        return state, StepResult(messages=feedback, reward=None, info=info)


def _tool_message(call_id: str, content: str) -> dict[str, str]:
    return {"role": "tool", "tool_call_id": call_id, "name": "python", "content": content}
