"""Turn a source record into a PROMPT_V1 row: canonical messages, prompt_id, split. Pure functions."""

import hashlib
import json
from typing import Any

# reasoning: a task generator's own scorer decides; environment: an environment's own rubric (verifiers)
TASKS = ("math", "code", "instruction", "open", "reasoning", "environment")
ROLES = ("system", "user", "assistant")


class RecordError(ValueError):
    """A record cannot become a prompt; `reason` is the short code counted in rejects."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def canonical_messages(record: dict[str, Any]) -> list[dict[str, str]]:
    if record.get("messages") is not None:
        messages = record["messages"]
        if isinstance(messages, str):
            try:
                messages = json.loads(messages)
            except json.JSONDecodeError as exc:
                raise RecordError("bad_messages", f"messages is a string but not JSON: {exc}") from exc
        if not isinstance(messages, list) or not messages:
            raise RecordError("bad_messages", "messages must be a non-empty list of {role, content}")
        out = []
        for i, m in enumerate(messages):
            if not isinstance(m, dict) or not isinstance(m.get("content"), str) or m.get("role") not in ROLES:
                raise RecordError("bad_messages", f"message {i} must be {{role in {ROLES}, content: str}}")
            out.append({"role": m["role"], "content": m["content"].strip()})
        if out[-1]["role"] != "user":
            raise RecordError("bad_messages", "the last message must be a user turn (the policy answers it)")
    elif record.get("prompt") is not None:
        if not isinstance(record["prompt"], str):
            raise RecordError("bad_prompt", f"prompt must be a string, got {type(record['prompt']).__name__}")
        out = [{"role": "user", "content": record["prompt"].strip()}]
    else:
        raise RecordError("missing_prompt", "record has neither 'prompt' nor 'messages'")
    if not any(m["content"] for m in out if m["role"] == "user"):
        raise RecordError("empty_prompt", "the user turns are empty")
    return out


def prompt_id(messages: list[dict[str, str]]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def split_for(pid: str, test_fraction: float) -> str:
    """Split by prompt hash, so a prompt never crosses splits however the sources change."""
    return "test" if int(pid[:12], 16) / 16**12 < test_fraction else "train"


def _optional_text(record: dict[str, Any], key: str) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def normalize(
    record: dict[str, Any], source: str, default_task: str, test_fraction: float, keep_unreferenced_math: bool = False
) -> dict[str, Any]:
    """-> PROMPT_V1 row, or raise RecordError naming why the record is unusable. A math prompt without a reference
    is unusable unless `keep_unreferenced_math` (the self_consistency labeler finds it a pseudo-reference)."""
    messages = canonical_messages(record)
    task = record.get("task") or default_task
    if task not in TASKS:
        raise RecordError("unknown_task", f"task {task!r} is not one of {TASKS}")
    reference = _optional_text(record, "reference")
    if task == "math" and not reference and not keep_unreferenced_math:
        raise RecordError(
            "missing_reference",
            "math prompts need a reference answer to verify against (or prompts.keep_unreferenced_math: true, with "
            "a self_consistency labeler to find pseudo-references)",
        )
    rubric = record.get("rubric")
    if rubric is not None:
        if not isinstance(rubric, list) or not all(isinstance(c, dict) and "criterion" in c for c in rubric):
            raise RecordError("bad_rubric", "rubric must be a list of {criterion, weight}")
        try:
            rubric = [{"criterion": str(c["criterion"]), "weight": float(c.get("weight", 1.0))} for c in rubric]
        except (TypeError, ValueError) as exc:
            raise RecordError("bad_rubric", f"rubric weights must be numbers: {exc}") from exc
    tests = _optional_text(record, "tests")
    if tests is not None:
        check_tests(tests)
    pid = prompt_id(messages)
    metadata = record.get("metadata")
    return {
        "prompt_id": pid,
        "source": source,
        "task": task,
        "messages": messages,
        "reference": reference,
        "tests": tests,
        "rubric": rubric,
        "constraints": _optional_text(record, "constraints"),
        "split": split_for(pid, test_fraction),
        "metadata": None if metadata is None else json.dumps(metadata, sort_keys=True, ensure_ascii=False),
    }


def check_tests(tests: str) -> None:
    """Raise RecordError `bad_tests` when a prompt's tests would not run: not one of the three styles the code_tests
    labeler reads, or code (an assert, setup, a HumanEval `check`) that does not compile. Caught here, a typo in a
    test is one rejected prompt; caught at labeling, it would fail every rollout of the prompt as if it were wrong."""
    from rewardmill.transforms.labelers.code_harness import parse_tests

    try:
        spec = parse_tests(tests)
    except ValueError as exc:
        raise RecordError("bad_tests", str(exc)) from exc
    if spec.style == "stdio":  # input/output cases: no code of the prompt's to compile
        return
    for what, code in [("setup", spec.setup or ""), *((f"test {i + 1}", a) for i, a in enumerate(spec.asserts))]:
        try:
            compile(code, f"<{what}>", "exec")
        except SyntaxError as exc:
            raise RecordError("bad_tests", f"{what} does not compile: {exc.msg} ({code[:80]!r})") from exc
