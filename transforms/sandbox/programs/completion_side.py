"""The completion's program: load its code, send the values of the names the tests declared, answer calls on them.

It reports nothing but the completion's own values and exceptions. It has no status, timeout or death to report:
every line it writes reaches the tests' program wrapped by the relay as "the completion says" (relay.py),
so a line the completion forges itself (through a caller's frame, `gc`, or a raw write to any descriptor) can only
ever be read as one of its own values. Time is measured and death noticed outside, by the relay and the tests.
"""

import builtins
import json
import os
import sys

from .channel import _describe, _read_line, _send  # bundled: scripts.py inlines channel.py here
from .codec import _dec, _enc, _Unsendable  # bundled: scripts.py inlines codec.py here

SPEC = "{}"  # bundled: scripts.py puts the run's spec here: {"code": str, "export": [name, ...]}

_objects = {}


def _new_handle(v):
    key = len(_objects) + 1
    _objects[key] = v
    return {"$h": key}


def _raised(exc, **extra):
    return {"raised": type(exc).__name__, "detail": _describe(exc), **extra}


def _main(spec):
    out = os.dup(1)
    inp = os.dup(0)
    os.dup2(2, 1)  # the completion's prints go to stderr
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    pending = bytearray()

    def send(msg):
        _send(out, msg)

    def receive():
        line = _read_line(inp, pending)
        return None if line is None else json.loads(line)

    ns = {"__name__": "__candidate__", "__builtins__": builtins}
    try:
        code = compile(spec["code"], "<completion>", "exec")
    except BaseException as exc:
        send(_raised(exc, compile=True))
        return
    try:
        exec(code, ns)
    except BaseException as exc:
        send(_raised(exc))
        return
    names = {}
    for name in spec["export"]:  # the declared defs and classes (code_harness.completion_plan): nothing else
        if name not in ns:
            continue
        try:
            names[name] = {"value": _enc(ns[name], _no_handle)}
        except _Unsendable:
            names[name] = {"handle": _new_handle(ns[name])["$h"]}
    send({"names": names})

    def resolve(key):
        return _objects[key]

    while True:
        msg = receive()
        if msg is None:
            return
        reply = {"id": msg.get("id")}
        try:
            target = _objects[msg["h"]]
            if msg["op"] == "call":
                args = [_dec(a, resolve) for a in msg["args"]]
                kwargs = {k: _dec(v, resolve) for k, v in msg["kwargs"].items()}
                reply["value"] = _enc(target(*args, **kwargs), _new_handle)
                reply["args"] = [_enc(a, _new_handle) if type(a) in (list, dict, set) else None for a in args]
            elif msg["op"] == "getattr":
                reply["value"] = _enc(getattr(target, msg["name"]), _new_handle)
            else:  # list
                reply["value"] = _enc(list(target), _new_handle)
        except BaseException as exc:
            reply = {"id": msg.get("id"), **_raised(exc)}
        send(reply)


def _no_handle(v):
    raise _Unsendable(type(v).__name__)


if __name__ == "__main__":
    _main(json.loads(SPEC))
    sys.stdout.flush()
    os._exit(0)
