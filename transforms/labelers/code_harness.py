"""The pieces of code verification that need no sandbox: the tests spec, code extraction, the in-sandbox harness
script and the reading of its report, and stdout comparison. Pure functions.

Tests arrive as JSON in one of three styles:
  {"style": "asserts", "asserts": ["assert f(1) == 2", ...], "setup": "optional code run before them"}
  {"style": "humaneval", "test": "def check(candidate): ...", "entry_point": "f", "prompt": "optional prefix"}
  {"style": "stdio", "cases": [{"input": "1 2\\n", "output": "3\\n"}, ...]}
A bare JSON list of assert strings is read as the asserts style (MBPP's `test_list`).
"""

import json
import re
import secrets
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


# Runs inside the sandbox. Results go to stdout, one line each, prefixed with a nonce read from stdin; the
# candidate's own prints are moved to stderr. Each step has an alarm of `timeout` seconds; a candidate that
# blocks the alarm is still stopped by the sandbox's wall clock, and the tests it never reached count as
# timeouts. The candidate runs in this process, so a completion written to attack the harness could forge a
# report: this measures honest code, it is not an adversarial proof. (stdio tests are compared outside.)
HARNESS = r"""
import builtins, json, os, signal, sys, time


class _Timeout(BaseException):
    pass


def _raise_timeout(signum, frame):
    raise _Timeout()


def _describe(exc):
    text = str(exc)
    return (f"{type(exc).__name__}: {text}" if text else type(exc).__name__)[:300]


def _main(spec):
    nonce = sys.stdin.readline().strip()
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    out = os.dup(1)
    os.dup2(2, 1)

    def emit(**fields):
        os.write(out, (nonce + " " + json.dumps(fields) + "\n").encode())

    limit = spec["timeout"]
    signal.signal(signal.SIGALRM, _raise_timeout)

    def run(code, ns):
        start = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            exec(code, ns)
            return "pass", "", time.perf_counter() - start
        except _Timeout:
            return "timeout", f"exceeded {limit}s", time.perf_counter() - start
        except AssertionError as exc:
            return "fail", _describe(exc), time.perf_counter() - start
        except BaseException as exc:
            return "error", _describe(exc), time.perf_counter() - start
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    ns = {"__name__": "__candidate__", "__builtins__": builtins}
    try:
        code = compile(spec["code"], "<completion>", "exec")
    except BaseException as exc:
        emit(phase="compile", status="syntax_error", detail=_describe(exc))
        return
    status, detail, _ = run(code, ns)
    emit(phase="load", status=status, detail=detail)
    if status != "pass":
        return
    if spec["setup"]:
        try:
            setup = compile(spec["setup"], "<tests setup>", "exec")
        except BaseException as exc:
            emit(phase="setup", status="test_error", detail=_describe(exc))
            return
        status, detail, _ = run(setup, ns)
        if status != "pass":
            emit(phase="setup", status="test_error", detail=detail)
            return
    for i, source in enumerate(spec["tests"]):
        try:
            test = compile(source, f"<test {i}>", "exec")
        except BaseException as exc:
            emit(test=i, status="test_error", detail=_describe(exc))
            continue
        status, detail, seconds = run(test, ns)
        emit(test=i, status=status, detail=detail, seconds=round(seconds, 4))
    emit(done=True)


_main(json.loads(SPEC))
sys.stdout.flush()
os._exit(0)
"""


def harness_script(code: str, spec: TestsSpec, timeout_seconds: float) -> tuple[str, str]:
    """(script, nonce): the script reads the nonce from stdin, then reports on stdout lines starting with it."""
    payload = {"code": code, "setup": spec.setup, "tests": list(spec.asserts), "timeout": timeout_seconds}
    return f"SPEC = {json.dumps(payload)!r}\n" + HARNESS, secrets.token_hex(16)


def read_report(stdout: str, nonce: str) -> list[dict]:
    """The harness's report lines, in order; anything else on stdout is ignored."""
    report = []
    for line in stdout.splitlines():
        _, sep, rest = line.partition(nonce + " ")
        if sep:
            try:
                report.append(json.loads(rest))
            except json.JSONDecodeError:
                continue
    return report


def same_output(expected: str, actual: str) -> bool:
    """Line by line, ignoring trailing whitespace on each line and blank lines at the end (judges' usual rule)."""

    def lines(text: str) -> list[str]:
        out = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
        while out and not out[-1]:
            out.pop()
        return out

    return lines(expected) == lines(actual)
