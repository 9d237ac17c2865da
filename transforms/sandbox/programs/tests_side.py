"""The tests' program: build the tests' namespace, run the setup and each test, report one line per outcome.

The namespace is built here, on the trusted side, in this order: a snapshot of the real builtins (taken before any
message from the completion is read), the real stdlib modules the tests use by name, the prompt's own code (its
helpers, executed from the prompt's text), and last the declared names (the entry point, the names the tests call):
one the completion binds by an import is imported here (the real object: code_harness.completion_plan), one it
defines by def or class (`export`) as the completion defined it: a plain value as itself, anything else as a
`_Handle` forwarding calls to the completion's process; one it binds any other way is left unbound. No other name
of the completion's ever gets here, so its `abs`, `math` or `poly` cannot stand in for the real ones.

Lines in (from the relay, relay.py): `c <line>` is a line the completion's process wrote (only ever read
as its values or exceptions), `r <json>` is the relay's own notice ({"dead": why, "timeout": bool}). Lines out:
`C <request>` for the completion, `R <report>` for the labeler. Statuses (pass, fail, error, timeout, crash,
test_error) are decided here: `test_error` only when a dry run with every declared name replaced by a probe fails
the same way before touching any of them (the tests' own fault, whatever the completion).
"""

import builtins
import importlib
import json
import os
import signal
import sys

from .channel import _describe, _read_line, _send  # bundled: scripts.py inlines channel.py here
from .codec import _dec, _enc  # bundled: scripts.py inlines codec.py here

SPEC = "{}"  # bundled: scripts.py puts the run's spec here (see tests_script)

_BUILTINS = dict(vars(builtins))  # the pristine builtins, before anything from the completion arrives


class _Timeout(BaseException):
    pass


class _CompletionTimeout(BaseException):
    pass


class _CompletionGone(BaseException):
    pass


class _Reached(BaseException):
    """A dry run touched a declared name."""


class CompletionError(Exception):
    """The completion raised an exception that is not a builtin one (or sent something malformed)."""


# Set when the time limit fires or the relay says the completion is gone, and kept for the rest of the test: a test
# whose `except:` (or `except BaseException`) swallows the interruption still ends as a timeout or a crash.
_halted = []


def _raise_timeout(signum, frame):
    _halted.append(("timeout", "the test exceeded its time limit"))
    raise _Timeout()


_out = [1]  # the report's descriptor: a duplicate of stdout made in _main (importing this module changes nothing)
_pending = bytearray()
_last_id = [0]


def _write(prefix, msg):
    _send(_out[0], msg, prefix)


def _receive():
    """The completion's next message (a dict); a relay notice raises _CompletionTimeout or _CompletionGone."""
    line = _read_line(0, _pending)
    if line is None:
        raise _CompletionGone("the relay closed")
    source, _, body = line.partition(b" ")
    if source == b"r":
        notice = json.loads(body)
        _halted.append(("timeout" if notice.get("timeout") else "crash", str(notice.get("dead"))))
        raise (_CompletionTimeout if notice.get("timeout") else _CompletionGone)(str(notice.get("dead")))
    try:
        message = json.loads(body)
    except ValueError:
        message = None
    if type(message) is not dict:
        raise CompletionError("the completion's process sent a malformed message")
    return message


def _refuse(what):
    def method(self, *args):
        raise TypeError(
            f"{what} a non-builtin value from the completion ({self!r}): only plain builtin values "
            "(numbers, strings, lists, tuples, dicts, sets, bytes, None) can be checked"
        )

    return method


class _Handle:
    """A completion object that stays in the completion's process."""

    __slots__ = ("_key",)

    def __init__(self, key):
        object.__setattr__(self, "_key", key)

    def __repr__(self):
        return f"<completion object #{self._key}>"

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _call({"op": "getattr", "h": self._key, "name": name}, [])

    def __call__(self, *args, **kwargs):
        return _call({"op": "call", "h": self._key}, list(args), kwargs)

    def __iter__(self):
        return iter(_call({"op": "list", "h": self._key}, []))

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse("compared")
    __hash__ = _refuse("hashed")
    __bool__ = _refuse("took the truth value of")
    __setattr__ = _refuse("set an attribute on")


def _reach(self, *args, **kwargs):
    raise _Reached()


class _Probe:
    """Stands in for every declared name in a dry run: any use of it ends the run as "reached the completion"."""

    __slots__ = ()


for _name in (
    "__getattr__ __call__ __iter__ __next__ __len__ __getitem__ __contains__ __eq__ __ne__ __lt__ __le__ __gt__ "
    "__ge__ __hash__ __bool__ __index__ __int__ __float__ __str__ __repr__ __format__ __add__ __radd__ __sub__ "
    "__rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __floordiv__ __mod__ __pow__ __neg__ __abs__ __enter__"
).split():
    setattr(_Probe, _name, _reach)


def _handle_key(v):
    if type(v) is _Handle:
        return {"$h": v._key}
    raise TypeError(
        f"cannot pass a {type(v).__name__} to the completion: only plain builtin values and the completion's "
        "own objects"
    )


def _call(msg, args, kwargs=None):
    _last_id[0] += 1
    msg["id"] = _last_id[0]
    if msg["op"] == "call":
        msg["args"] = [_enc(a, _handle_key) for a in args]
        msg["kwargs"] = {k: _enc(v, _handle_key) for k, v in (kwargs or {}).items()}
    _write("C ", msg)
    while True:
        reply = _receive()
        if reply.get("id") == msg["id"]:
            break
    if "raised" in reply:
        name, detail = str(reply["raised"]), str(reply.get("detail", ""))
        if name in ("StopIteration", "StopAsyncIteration"):  # as PEP 479 does for generators: it must not end a loop
            raise RuntimeError(f"the completion raised {detail or name}")
        cls = _BUILTINS.get(name)
        if isinstance(cls, type) and issubclass(cls, Exception):
            raise cls(detail[len(name) + 2 :] if detail.startswith(name + ": ") else "")
        raise CompletionError(detail)
    for arg, after in zip(args, reply.get("args") or [], strict=False):
        if after is None:
            continue
        new = _dec(after, _Handle)
        if type(arg) is list and type(new) is list:
            arg[:] = new
        elif type(arg) in (dict, set) and type(new) is type(arg):
            arg.clear()
            arg.update(new)
    return _dec(reply.get("value"), _Handle)


def _load(limit):
    """How loading the completion went: (status, detail, declared values)."""
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        load = _receive()
    except (_Timeout, _CompletionTimeout) as exc:
        return "timeout", f"exceeded {limit}s" if isinstance(exc, _Timeout) else str(exc), {}
    except _CompletionGone as exc:
        return "crash", str(exc), {}
    except CompletionError as exc:
        return "error", str(exc), {}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if "raised" in load:
        return ("syntax_error" if load.get("compile") is True else "error"), str(load.get("detail", ""))[:300], {}
    names = load.get("names")
    values = {}
    try:
        for name, info in (names if type(names) is dict else {}).items():
            if type(info) is dict and "value" in info:
                values[name] = _dec(info["value"], _Handle)
            elif type(info) is dict and type(info.get("handle")) is int:
                values[name] = _Handle(info["handle"])
    except ValueError:
        return "error", "the completion's process sent a malformed value", {}
    return "pass", "", values


def _imported(module, attribute):
    """What `import module` (attribute None), `import a.b` (attribute ".": a) or `from module import attribute`
    binds, imported here: the real object, never the completion's."""
    value = importlib.import_module(module)
    if attribute == ".":
        return importlib.import_module(module.split(".")[0])
    if attribute is None:
        return value
    try:
        return getattr(value, attribute)
    except AttributeError:
        return importlib.import_module(f"{module}.{attribute}")  # a submodule, as `from` finds it


def _namespace(spec, values, probe=False):
    """builtins (pristine), then real modules, then the prompt's own code, then the declared names: the ones the
    completion imports are imported here (code_harness.completion_plan), only its defs and classes come from it."""
    ns = {"__name__": "__tests__", "__builtins__": dict(_BUILTINS)}
    for module in spec["modules"]:
        ns[module] = importlib.import_module(module)
    if spec["prompt"]:
        exec(compile(spec["prompt"], "<prompt>", "exec"), ns)
    imported = spec.get("imported") or {}
    export = spec.get("export", spec["declared"])
    for name in spec["declared"]:
        if probe:
            ns[name] = values[name]
        elif name in imported:
            ns.pop(name, None)
            try:
                ns[name] = _imported(*imported[name])
            except (Exception, SystemExit):  # not importable here: a test that uses it fails with a NameError
                pass
        elif name in export and name in values:
            ns[name] = values[name]
        else:  # the completion does not define it by def/class (a prompt's stub of the entry point must not stand in)
            ns.pop(name, None)
    return ns


def _run(code, ns, limit):
    _halted.clear()
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        exec(code, ns)
        return _halted[0] if _halted else ("pass", "")
    except _Timeout:
        return "timeout", f"exceeded {limit}s"
    except _CompletionTimeout as exc:
        return "timeout", str(exc)
    except _CompletionGone as exc:
        return "crash", str(exc)
    except AssertionError as exc:
        return _halted[0] if _halted else ("fail", _describe(exc))
    except BaseException as exc:
        return _halted[0] if _halted else ("error", _describe(exc))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _tests_fault(spec, codes, limit):
    """Dry run of `codes` (setup, maybe a test) with a probe for every declared name: True when it raises before
    touching any of them, which no completion could have caused."""
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        ns = _namespace(spec, dict.fromkeys(spec["declared"], _Probe()), probe=True)
        for code in codes:
            exec(code, ns)
        return False
    except (_Reached, _Timeout):
        return False
    except BaseException:
        return True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _main(spec):
    _out[0] = os.dup(1)
    os.dup2(2, 1)  # the tests' prints go to stderr

    def emit(**fields):
        _write("R ", fields)

    limit = spec["timeout"]
    signal.signal(signal.SIGALRM, _raise_timeout)
    status, detail, values = _load(limit + spec["startup"])
    emit(phase="load", status=status, detail=detail)
    if status != "pass":
        return
    try:
        setup = compile(spec["setup"] or "", "<tests setup>", "exec")
        ns = _namespace(spec, values)
    except BaseException as exc:  # the tests' own code: nothing of the completion's has run in it yet
        emit(phase="setup", status="test_error", detail=_describe(exc))
        return
    status, detail = _run(setup, ns, limit)
    if status != "pass":
        if status in ("fail", "error") and _tests_fault(spec, [setup], limit):
            status = "test_error"
        emit(phase="setup", status=status, detail=detail)
        return
    for i, source in enumerate(spec["tests"]):
        try:
            test = compile(source, f"<test {i}>", "exec")
        except BaseException as exc:
            emit(test=i, status="test_error", detail=_describe(exc))
            continue
        status, detail = _run(test, ns, limit)  # no timings: a label's bytes must not depend on the machine's speed
        if status in ("fail", "error") and spec["standalone"][i] and _tests_fault(spec, [setup, test], limit):
            status = "test_error"
        emit(test=i, status=status, detail=detail)
    emit(done=True)


if __name__ == "__main__":
    _main(json.loads(SPEC))
    sys.stdout.flush()
    os._exit(0)
