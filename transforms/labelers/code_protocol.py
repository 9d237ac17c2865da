"""The two programs of a hack-proof code check, as source text (pure): the completion's and the tests'.

The completion's code and the tests run in two processes, each in its own sandbox (code_session.py relays between
them), so the completion can neither read the tests (their constants, the caller's frame, the test file) nor patch
them (builtins, the harness, the report), and it never sees the expected values.

- CANDIDATE runs the completion's code, reports how loading went and the names it defined, then serves calls:
  `call`, `getattr` and `list` on its objects. Every value it sends back is encoded (CODEC) as plain builtins of
  exactly the builtin types (None, bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset,
  recursively); anything else, a subclass of a builtin included, stays in the completion's process and is sent as
  an opaque handle.
- TESTS runs the setup and the tests with each name the completion defined bound to a stand-in: a plain value is
  decoded as is; a function, class or other object becomes a `_Handle` that forwards calls (and attribute reads,
  and iteration) to the completion's process. A handle cannot be compared, hashed or used as a truth value: a test
  that compares one fails with an error. So `assert f(x) == y` compares two plain values in the tests' process:
  an `__eq__` that always returns True, an `int` subclass, or a forged report cannot pass it. Modules the
  completion imported are imported again in the tests' process (its `math.isclose`, not a patched one).
- Lists, dicts and sets the tests pass to a call come back as the call left them (in-place mutations count).
- An exception the completion raises is raised again in the tests: a builtin exception as itself (so
  `except ValueError` works), any other as `CompletionError`.

Lines: the tests' process writes `C <request>` for the completion and `R <report>` for the labeler; the relay
writes the completion's replies, and `{"dead": why}` once the completion's process is gone, to the tests' stdin.
"""

import json

# Shared by both programs: encode a value to JSON-able plain data; `handle(v)` decides what a non-builtin becomes.
CODEC = r'''
_MAX_DEPTH = 64
_SPECIAL_FLOATS = ("nan", "inf", "-inf")


class _Unsendable(Exception):
    pass


def _enc(v, handle, depth=0):
    if depth > _MAX_DEPTH:
        raise _Unsendable("value nested more than %d deep" % _MAX_DEPTH)
    t = type(v)
    if v is None or t is bool or t is int or t is str:
        return v
    if t is float:
        return {"$f": repr(v)} if repr(v) in _SPECIAL_FLOATS else v
    if t is list:
        return [_enc(x, handle, depth + 1) for x in v]
    if t is tuple:
        return {"$t": [_enc(x, handle, depth + 1) for x in v]}
    if t is dict:
        return {"$d": [[_enc(k, handle, depth + 1), _enc(x, handle, depth + 1)] for k, x in v.items()]}
    if t is set or t is frozenset:
        return {"$s" if t is set else "$fs": [_enc(x, handle, depth + 1) for x in v]}
    if t is bytes:
        return {"$b": v.hex()}
    if t is complex:
        return {"$c": [v.real, v.imag]}
    return handle(v)


def _dec(j, handle, depth=0):
    """JSON from the other process -> values of exactly the builtin types (and `handle(id)` for "$h")."""
    if depth > _MAX_DEPTH:
        raise ValueError("value nested too deep")
    t = type(j)
    if j is None or t is bool or t is int or t is float or t is str:
        return j
    if t is list:
        return [_dec(x, handle, depth + 1) for x in j]
    if t is dict and len(j) == 1:
        (tag, val), = j.items()
        if tag == "$h" and type(val) is int:
            return handle(val)
        if tag == "$f" and val in _SPECIAL_FLOATS:
            return float(val)
        if tag == "$b" and type(val) is str:
            return bytes.fromhex(val)
        if tag == "$c" and type(val) is list and len(val) == 2 and all(type(x) in (int, float) for x in val):
            return complex(val[0], val[1])
        if type(val) is list:
            items = [_dec(x, handle, depth + 1) for x in val] if tag != "$d" else None
            if tag == "$t":
                return tuple(items)
            if tag == "$s":
                return set(items)
            if tag == "$fs":
                return frozenset(items)
            if tag == "$d" and all(type(kv) is list and len(kv) == 2 for kv in val):
                return {_dec(k, handle, depth + 1): _dec(x, handle, depth + 1) for k, x in val}
    raise ValueError("malformed value")
'''

CANDIDATE = r"""
import builtins, json, os, signal, sys, time


class _Timeout(BaseException):
    pass


def _raise_timeout(signum, frame):
    raise _Timeout()


def _describe(exc):
    text = str(exc)
    return (f"{type(exc).__name__}: {text}" if text else type(exc).__name__)[:300]


_objects = {}


def _new_handle(v):
    key = len(_objects) + 1
    _objects[key] = v
    return {"$h": key}


def _no_handle(v):
    raise _Unsendable(type(v).__name__)


def _main(spec):
    out = os.dup(1)
    inp = os.dup(0)
    os.dup2(2, 1)  # the completion's prints go to stderr
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    pending = bytearray()

    def send(msg):
        data = (json.dumps(msg) + "\n").encode()
        while data:
            data = data[os.write(out, data):]

    def receive():
        while b"\n" not in pending:
            chunk = os.read(inp, 1 << 16)
            if not chunk:
                return None
            pending.extend(chunk)
        line, _, rest = bytes(pending).partition(b"\n")
        pending[:] = rest
        return json.loads(line)

    limit = spec["timeout"]
    signal.signal(signal.SIGALRM, _raise_timeout)
    ns = {"__name__": "__candidate__", "__builtins__": builtins}
    try:
        code = compile(spec["code"], "<completion>", "exec")
    except BaseException as exc:
        send({"load": "syntax_error", "phase": "compile", "detail": _describe(exc)})
        return
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        exec(code, ns)
        status, detail = "pass", ""
    except _Timeout:
        status, detail = "timeout", f"exceeded {limit}s"
    except BaseException as exc:
        status, detail = "error", _describe(exc)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    names = {}
    if status == "pass":
        for name, value in list(ns.items()):
            if name.startswith("__"):
                continue
            if type(value) is type(os):
                names[name] = {"module": getattr(value, "__name__", ""), "handle": _new_handle(value)["$h"]}
                continue
            try:
                names[name] = {"value": _enc(value, _no_handle)}
            except _Unsendable:
                names[name] = {"handle": _new_handle(value)["$h"]}
    send({"load": status, "phase": "load", "detail": detail, "names": names})
    if status != "pass":
        return

    def resolve(key):
        return _objects[key]

    while True:
        msg = receive()
        if msg is None:
            return
        reply = {"id": msg.get("id")}
        signal.setitimer(signal.ITIMER_REAL, limit)
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
        except _Timeout:
            reply = {"id": msg.get("id"), "timeout": True}
        except BaseException as exc:
            reply = {"id": msg.get("id"), "raised": type(exc).__name__, "detail": _describe(exc)}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        send(reply)


_main(json.loads(SPEC))
sys.stdout.flush()
os._exit(0)
"""

TESTS = r'''
import builtins, importlib, json, os, signal, sys, time


class _Timeout(BaseException):
    pass


class _CompletionTimeout(BaseException):
    pass


class _CompletionGone(BaseException):
    pass


class CompletionError(Exception):
    """The completion raised an exception that is not a builtin one."""


def _raise_timeout(signum, frame):
    raise _Timeout()


def _describe(exc):
    text = str(exc)
    return (f"{type(exc).__name__}: {text}" if text else type(exc).__name__)[:300]


_out = os.dup(1)
_pending = bytearray()
_last_id = [0]


def _write(prefix, msg):
    data = (prefix + json.dumps(msg) + "\n").encode()
    while data:
        data = data[os.write(_out, data):]


def _receive():
    while b"\n" not in _pending:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            raise _CompletionGone("the relay closed")
        _pending.extend(chunk)
    line, _, rest = bytes(_pending).partition(b"\n")
    _pending[:] = rest
    try:
        message = json.loads(line)
    except ValueError:
        message = None
    if type(message) is not dict:
        raise CompletionError("the completion's process sent a malformed reply")
    return message


def _refuse(what):
    def method(self, *args):
        raise TypeError(f"{what} a non-builtin value from the completion ({self!r}): only plain builtin values "
                        "(numbers, strings, lists, tuples, dicts, sets, bytes, None) can be checked")
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


def _handle_key(v):
    if type(v) is _Handle:
        return {"$h": v._key}
    raise TypeError(f"cannot pass a {type(v).__name__} to the completion: only plain builtin values and "
                    "the completion's own objects")


def _call(msg, args, kwargs=None):
    _last_id[0] += 1
    msg["id"] = _last_id[0]
    if msg["op"] == "call":
        msg["args"] = [_enc(a, _handle_key) for a in args]
        msg["kwargs"] = {k: _enc(v, _handle_key) for k, v in (kwargs or {}).items()}
    _write("C ", msg)
    while True:
        reply = _receive()
        if "dead" in reply:
            raise (_CompletionTimeout if reply.get("timeout") else _CompletionGone)(reply["dead"])
        if reply.get("id") == msg["id"]:
            break
    if reply.get("timeout"):
        raise _CompletionTimeout("a call to the completion exceeded the time limit")
    if "raised" in reply:
        name, detail = str(reply["raised"]), str(reply.get("detail", ""))
        cls = getattr(builtins, name, None)
        if isinstance(cls, type) and issubclass(cls, Exception):
            raise cls(detail[len(name) + 2:] if detail.startswith(name + ": ") else "")
        raise CompletionError(detail)
    for arg, after in zip(args, reply.get("args") or []):
        if after is None:
            continue
        new = _dec(after, _Handle)
        if type(arg) is list and type(new) is list:
            arg[:] = new
        elif type(arg) in (dict, set) and type(new) is type(arg):
            arg.clear()
            arg.update(new)
    return _dec(reply["value"], _Handle)


def _main(spec):
    os.dup2(2, 1)  # the tests' prints go to stderr
    emit = lambda **fields: _write("R ", fields)
    limit = spec["timeout"]
    signal.signal(signal.SIGALRM, _raise_timeout)
    signal.setitimer(signal.ITIMER_REAL, limit + spec["startup"])
    try:
        load = _receive()
    except _Timeout:
        load = {"load": "timeout", "phase": "load", "detail": f"exceeded {limit}s"}
    except (_CompletionGone, CompletionError) as exc:
        load = {"load": "crash", "phase": "load", "detail": str(exc)}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if "dead" in load:
        load = {"load": "timeout" if load.get("timeout") else "crash", "phase": "load", "detail": load["dead"]}
    emit(phase=load.get("phase", "load"), status=load.get("load"), detail=load.get("detail", ""))
    if load.get("load") != "pass":
        return

    def run(code, ns):
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            exec(code, ns)
            return "pass", ""
        except (_Timeout, _CompletionTimeout):
            return "timeout", f"exceeded {limit}s"
        except _CompletionGone as exc:
            return "crash", str(exc)
        except AssertionError as exc:
            return "fail", _describe(exc)
        except BaseException as exc:
            return "error", _describe(exc)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    ns = {"__name__": "__tests__", "__builtins__": builtins}
    for name, info in load.get("names", {}).items():
        if "module" in info:
            try:
                ns[name] = importlib.import_module(info["module"])
                continue
            except Exception:
                pass
        ns[name] = _dec(info["value"], _Handle) if "value" in info else _Handle(info["handle"])
    if spec["setup"]:
        try:
            setup = compile(spec["setup"], "<tests setup>", "exec")
        except BaseException as exc:
            emit(phase="setup", status="test_error", detail=_describe(exc))
            return
        status, detail = run(setup, ns)
        if status != "pass":
            emit(phase="setup", status="test_error" if status in ("error", "fail") else status, detail=detail)
            return
    for i, source in enumerate(spec["tests"]):
        try:
            test = compile(source, f"<test {i}>", "exec")
        except BaseException as exc:
            emit(test=i, status="test_error", detail=_describe(exc))
            continue
        status, detail = run(test, ns)  # no timings: a label's bytes must not depend on the machine's speed
        emit(test=i, status=status, detail=detail)
    emit(done=True)


_main(json.loads(SPEC))
sys.stdout.flush()
os._exit(0)
'''


def candidate_script(code: str, timeout_seconds: float) -> str:
    """The completion's program: its code, and the per-call time limit. Nothing of the tests."""
    payload = {"code": code, "timeout": timeout_seconds}
    return f"SPEC = {json.dumps(payload)!r}\n" + CODEC + CANDIDATE


def tests_script(setup: str, tests: list[str], timeout_seconds: float, startup_seconds: float) -> str:
    """The tests' program: setup code, one source per test, the per-test limit and the completion's start-up."""
    payload = {"setup": setup, "tests": tests, "timeout": timeout_seconds, "startup": startup_seconds}
    return f"SPEC = {json.dumps(payload)!r}\n" + CODEC + TESTS
