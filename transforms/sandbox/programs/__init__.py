"""The programs of a hack-proof code check, which run inside the sandbox (scripts.py bundles each into one script).

The completion's code and the tests run in two processes, each in its own sandbox (relay.py relays between them), so
the completion can neither read the tests (their constants, the caller's frame, the test file) nor patch them
(builtins, the harness, the report), and it never sees the expected values.

- completion_side.py runs the completion's code, sends the values of the names the tests declared, then serves
  calls: `call`, `getattr` and `list` on its objects. Every value it sends back is encoded (codec.py) as plain
  builtins of exactly the builtin types (None, bool, int, float, complex, str, bytes, list, tuple, dict, set,
  frozenset, recursively; a subclass of one as its base value, a Counter as a dict, a namedtuple as a tuple; a
  Fraction or Decimal rebuilt as a real one by the receiver); anything else (a user's class) stays in the
  completion's process and is sent as an opaque handle. It sends only its defs and classes the tests declared
  (code_harness.completion_plan): a declared name it imports is imported by the tests' program itself. It reports
  no status: what it writes reaches the tests wrapped as its own message.
- tests_side.py builds the tests' namespace itself: pristine builtins, the real modules the tests name, the
  prompt's own helpers (from the prompt's text), the declared names the completion imports (imported here, the
  real objects), then only the declared names the completion defines by def or class, each a plain
  value or a `_Handle` that forwards calls (and attribute reads, and iteration) to the completion's process. A
  handle cannot be compared, hashed or used as a truth value. So `assert f(x) == y` compares two plain values in
  the tests' process with the real `==`, `abs`, `sorted` and `math`.
- Lists, dicts and sets the tests pass to a call come back as the call left them (in-place mutations count).
- An exception the completion raises is raised again in the tests: a builtin exception as itself (so
  `except ValueError` works), StopIteration as RuntimeError (PEP 479: it must not end the tests' loop), any other
  as `CompletionError`.
- codec.py (the value codec) and channel.py (one JSON message per line, an exception in one line) are shared by
  both: a program imports them relatively, and scripts.py inlines each in place of its `# bundled:` import.

Lines: the tests' process writes `C <request>` for the completion and `R <report>` for the labeler; the relay
writes `c <line>` for each line of the completion's and `r {"dead": why, "timeout": bool}` once it has killed the
completion or seen it exit, to the tests' stdin.

bootstrap.py (the first code in every sandbox: uid, limits, then the script) and probe.py (what a mechanism must show
before it is used: no network) are the runner's own programs.

Stdlib only, and nothing runs at import time: the tests import these modules in process, and the modules that run
them import them so that the label cache's code digest covers their files (transforms/labelers/code_digest.py).
"""

from functools import cache
from pathlib import Path
from types import ModuleType


@cache
def source(program: ModuleType) -> str:
    """The text of a program's file, which is what the sandbox runs."""
    return Path(program.__file__).read_text(encoding="utf-8")
