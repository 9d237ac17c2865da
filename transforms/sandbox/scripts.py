"""The one script each side of a code check runs (pure): its program (programs/) with the shared modules it imports
inlined and the run's spec put in. The programs and the protocol between them are described in programs/__init__.py.

The programs are imported here, not only read: their files are what the sandbox runs, and the import is how the
label cache's code digest (transforms/labelers/code_digest.py) and the label stage's DVC deps find them.
"""

import json
import re
from types import ModuleType

from rewardmill.transforms.sandbox.programs import channel, codec, completion_side, source, tests_side

BUNDLED = "# bundled:"
SHARED = {"channel": channel, "codec": codec}  # what a program's `from .<name> import ...  # bundled:` inlines
SHARED_IMPORT = re.compile(r"from \.(\w+) import ")


def _bundle(program: ModuleType, spec: dict) -> str:
    """The program's source with each shared module in place of its import line and `spec` in its SPEC line."""
    lines = []
    for line in source(program).splitlines():
        shared = SHARED_IMPORT.match(line)
        if BUNDLED in line and shared:
            lines.append(source(SHARED[shared.group(1)]))
        elif BUNDLED in line and line.startswith("SPEC = "):
            lines.append(f"SPEC = {json.dumps(spec)!r}")
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def candidate_script(code: str, export: list[str]) -> str:
    """The completion's program: its code and the names to send. Nothing of the tests."""
    return _bundle(completion_side, {"code": code, "export": export})


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
    return _bundle(tests_side, payload)
