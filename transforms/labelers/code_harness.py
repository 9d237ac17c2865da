"""The pieces of code verification that need no sandbox: the tests spec, code extraction and stdout comparison.
Pure functions. (The programs that run the code and the tests are in code_protocol.py.)

Tests arrive as JSON in one of three styles:
  {"style": "asserts", "asserts": ["assert f(1) == 2", ...], "setup": "optional code run before them"}
  {"style": "humaneval", "test": "def check(candidate): ...", "entry_point": "f", "prompt": "optional prefix"}
  {"style": "stdio", "cases": [{"input": "1 2\\n", "output": "3\\n"}, ...]}
A bare JSON list of assert strings is read as the asserts style (MBPP's `test_list`).
"""

import json
import re
from dataclasses import dataclass

STYLES = ("asserts", "humaneval", "stdio")


@dataclass(frozen=True)
class TestsSpec:
    style: str
    asserts: tuple[str, ...] = ()
    setup: str = ""
    entry_point: str = ""
    prompt: str = ""
    cases: tuple[tuple[str, str], ...] = ()  # (stdin, expected stdout)

    @property
    def n_tests(self) -> int:
        return len(self.cases) if self.style == "stdio" else len(self.asserts)


def parse_tests(tests) -> TestsSpec:
    """JSON text (or already-parsed value) -> TestsSpec; ValueError naming what is wrong."""
    if isinstance(tests, str):
        try:
            tests = json.loads(tests)
        except json.JSONDecodeError as exc:
            raise ValueError(f"tests are not JSON: {exc}") from exc
    if isinstance(tests, list):
        tests = {"style": "asserts", "asserts": tests}
    if not isinstance(tests, dict):
        raise ValueError(f"tests must be a JSON object, got {type(tests).__name__}")
    style = tests.get("style")
    if style not in STYLES:
        raise ValueError(f"tests style {style!r} is not one of {STYLES}")
    if style == "asserts":
        asserts = tests.get("asserts")
        if not isinstance(asserts, list) or not asserts or not all(isinstance(a, str) for a in asserts):
            raise ValueError("asserts style needs a non-empty list of strings in 'asserts'")
        return TestsSpec("asserts", tuple(asserts), setup=_text(tests, "setup"))
    if style == "humaneval":
        test, entry = _text(tests, "test"), _text(tests, "entry_point")
        if not test or not entry.isidentifier():
            raise ValueError("humaneval style needs 'test' code and an identifier 'entry_point'")
        return TestsSpec(
            "humaneval", (f"check({entry})",), setup=test, entry_point=entry, prompt=_text(tests, "prompt")
        )
    cases = tests.get("cases")
    if not isinstance(cases, list) or not cases:
        raise ValueError("stdio style needs a non-empty list of {input, output} in 'cases'")
    parsed = []
    for i, case in enumerate(cases):
        if not isinstance(case, dict) or not isinstance(case.get("output"), str):
            raise ValueError(f"stdio case {i} must be {{input: str, output: str}}")
        if not isinstance(case.get("input", ""), str):
            raise ValueError(f"stdio case {i}: input must be a string")
        parsed.append((case.get("input", ""), case["output"]))
    return TestsSpec("stdio", cases=tuple(parsed))


def _text(tests: dict, key: str) -> str:
    value = tests.get(key) or ""
    if not isinstance(value, str):
        raise ValueError(f"'{key}' must be a string")
    return value


FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:^[ \t]*```[ \t]*$|\Z)", re.M | re.S)
PYTHON_TAGS = ("python", "py", "python3")


def extract_code(completion: str) -> str:
    """The last ```python block; else the last untagged ``` block; else the whole text. An unclosed last fence
    (a completion cut at max tokens) runs to the end of the text."""
    blocks = [(tag.lower(), body) for tag, body in FENCE.findall(completion)]
    for wanted in (PYTHON_TAGS, ("",)):
        tagged = [body for tag, body in blocks if tag in wanted]
        if tagged:
            return _trim(tagged[-1])
    return _trim(completion)


def _trim(code: str) -> str:
    """Drop blank lines at the start and whitespace at the end; keep indentation (a HumanEval body is indented)."""
    return re.sub(r"\A(?:[ \t]*\n)+", "", code).rstrip()


def humaneval_program(code: str, spec: TestsSpec) -> str:
    """HumanEval completions are either a body continuing the prompt or a whole function. The prompt always
    goes first: it carries the imports and helper functions (e.g. is_palindrome for make_palindrome)."""
    if not spec.prompt:
        return code
    if re.search(rf"^\s*def\s+{re.escape(spec.entry_point)}\s*\(", code, re.M) and not code[:1].isspace():
        return spec.prompt.rstrip() + "\n\n\n" + code
    return spec.prompt + code


def same_output(expected: str, actual: str) -> bool:
    """Line by line, ignoring trailing whitespace on each line and blank lines at the end (judges' usual rule)."""

    def lines(text: str) -> list[str]:
        out = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
        while out and not out[-1]:
            out.pop()
        return out

    return lines(expected) == lines(actual)
