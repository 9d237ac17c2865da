"""How both sandboxed programs talk over their pipes: one JSON message per line, and an exception in one line.

Runs inside both programs (scripts.py inlines it); stdlib only.
"""

import json
import os


def _describe(exc):
    """`Type: message`, at most 300 characters; the type alone when the message is empty or cannot be read."""
    try:
        text = str(exc)
    except BaseException:
        text = ""
    return (f"{type(exc).__name__}: {text}" if text else type(exc).__name__)[:300]


def _send(fd, msg, prefix=""):
    """Write `prefix`, `msg` as JSON and a newline to `fd`, all of it."""
    data = (prefix + json.dumps(msg) + "\n").encode()
    while data:
        data = data[os.write(fd, data) :]


def _read_line(fd, pending):
    """The next line from `fd` without its newline (None at the end of input); what follows it stays in `pending`."""
    while b"\n" not in pending:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return None
        pending.extend(chunk)
    line, _, rest = bytes(pending).partition(b"\n")
    pending[:] = rest
    return line
