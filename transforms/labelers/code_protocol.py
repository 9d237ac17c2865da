"""The two programs of a hack-proof code check, bundled into scripts (pure): the completion's and the tests'.

The programs are real modules beside this one (code_completion_side.py and code_tests_side.py, sharing
code_codec.py); this module inlines the codec into each and puts the run's spec in, giving the one script the
sandbox runs.

The completion's code and the tests run in two processes, each in its own sandbox (code_session.py relays between
them), so the completion can neither read the tests (their constants, the caller's frame, the test file) nor patch
them (builtins, the harness, the report), and it never sees the expected values.

- The completion's program runs its code, sends the values of the names the tests declared, then serves calls:
  `call`, `getattr` and `list` on its objects. Every value it sends back is encoded (code_codec.py) as plain
  builtins of exactly the builtin types (None, bool, int, float, complex, str, bytes, list, tuple, dict, set,
  frozenset, recursively; a subclass of one as its base value, a Counter as a dict, a namedtuple as a tuple; a
  Fraction or Decimal rebuilt as a real one by the receiver); anything else (a user's class) stays in the
  completion's process and is sent as an opaque handle. It sends only its defs and classes the tests declared
  (code_harness.completion_plan): a declared name it imports is imported by the tests' program itself. It reports
  no status: what it writes reaches the tests wrapped as its own message.
- The tests' program builds the tests' namespace itself: pristine builtins, the real modules the tests name, the
  prompt's own helpers (from the prompt's text), the declared names the completion imports (imported here, the
  real objects), then only the declared names the completion defines by def or class, each a plain
  value or a `_Handle` that forwards calls (and attribute reads, and iteration) to the completion's process. A
  handle cannot be compared, hashed or used as a truth value. So `assert f(x) == y` compares two plain values in
  the tests' process with the real `==`, `abs`, `sorted` and `math`.
- Lists, dicts and sets the tests pass to a call come back as the call left them (in-place mutations count).
- An exception the completion raises is raised again in the tests: a builtin exception as itself (so
  `except ValueError` works), StopIteration as RuntimeError (PEP 479: it must not end the tests' loop), any other
  as `CompletionError`.

Lines: the tests' process writes `C <request>` for the completion and `R <report>` for the labeler; the relay
writes `c <line>` for each line of the completion's and `r {"dead": why, "timeout": bool}` once it has killed the
completion or seen it exit, to the tests' stdin.
"""

import json
from functools import cache
from pathlib import Path

PROGRAMS = Path(__file__).parent
BUNDLED = "# bundled:"


@cache
def _source(name: str) -> str:
    return (PROGRAMS / name).read_text(encoding="utf-8")


def _bundle(program: str, spec: dict) -> str:
    """The program's source with the codec in place of its import line and `spec` in place of its SPEC line."""
    lines = []
    for line in _source(program).splitlines():
        if BUNDLED in line and line.startswith("from .code_codec import"):
            lines.append(CODEC)
        elif BUNDLED in line and line.startswith("SPEC = "):
            lines.append(f"SPEC = {json.dumps(spec)!r}")
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


CODEC = _source("code_codec.py")


def candidate_script(code: str, export: list[str]) -> str:
    """The completion's program: its code and the names to send. Nothing of the tests."""
    return _bundle("code_completion_side.py", {"code": code, "export": export})


def tests_script(
    setup: str,
    tests: list[str],
    plan: dict,
    timeout_seconds: float,
    startup_seconds: float,
) -> str:
    """The tests' program: setup code, one source per test, the namespace plan (code_harness.tests_plan: declared,
    modules, prompt, standalone; code_harness.completion_plan: export, imported), the per-test limit and the
    completion's start-up allowance."""
    payload = {"setup": setup, "tests": tests, **plan, "timeout": timeout_seconds, "startup": startup_seconds}
    return _bundle("code_tests_side.py", payload)
