"""transforms/sandbox/programs/completion_side.py, in process: what the completion's program sends for its code and
for each call, with its stdin and stdout swapped for pipes for the length of a run."""

import json
import os

import pytest

from rewardmill.transforms.sandbox.programs import completion_side


def serve(code: str, export: list[str], requests: list[dict]) -> list[dict]:
    """Run the program's _main on `code` with `requests` as its input; the messages it sends, in order."""
    before = set(os.listdir("/proc/self/fd"))
    inp_r, inp_w = os.pipe()
    os.write(inp_w, "".join(json.dumps(r) + "\n" for r in requests).encode())
    os.close(inp_w)
    out_r, out_w = os.pipe()
    saved = {fd: os.dup(fd) for fd in (0, 1)}
    try:
        os.dup2(inp_r, 0)
        os.dup2(out_w, 1)
        completion_side._main({"code": code, "export": export})
    finally:
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        os.close(out_w)
        os.close(inp_r)
        for fd in set(os.listdir("/proc/self/fd")) - before - {str(out_r)}:  # _main's own duplicates
            try:
                os.close(int(fd))
            except OSError:
                pass
    os.set_blocking(out_r, False)
    data = bytearray()
    while True:
        try:
            chunk = os.read(out_r, 1 << 16)
        except BlockingIOError:
            break
        if not chunk:
            break
        data += chunk
    os.close(out_r)
    return [json.loads(line) for line in data.decode().splitlines()]


@pytest.fixture(autouse=True)
def fresh_objects(monkeypatch):
    monkeypatch.setattr(completion_side, "_objects", {})


def test_plain_values_are_sent_and_objects_stay_behind_handles():
    code = "def f(x):\n    return [x, (x,)]\nclass K:\n    pass\nN = 3\n"
    (load,) = serve(code, ["f", "K", "N", "missing"], [])
    assert load == {"names": {"f": {"handle": 1}, "K": {"handle": 2}, "N": {"value": 3}}}  # missing: left out


def test_calls_return_encoded_values_and_in_place_changes():
    code = "def f(xs):\n    xs.append(1)\n    return xs, object()\n"
    call = {"id": 1, "op": "call", "h": 1, "args": [[0]], "kwargs": {}}
    load, reply = serve(code, ["f"], [call])
    assert load == {"names": {"f": {"handle": 1}}}
    assert reply == {"id": 1, "value": {"$t": [[0, 1], {"$h": 2}]}, "args": [[0, 1]]}


BOX = """
class Box:
    size = 2

    def __iter__(self):
        return iter([1, 2])

box = Box()

def make():
    return box
"""


@pytest.mark.parametrize(
    "request_, expected",
    [  # handle 2 is a Box (BOX); 99 is no handle
        ({"id": 1, "op": "getattr", "h": 2, "name": "size"}, {"id": 1, "value": 2}),
        ({"id": 2, "op": "list", "h": 2}, {"id": 2, "value": [1, 2]}),
        # an exception is sent as its type and description, never raised here
        (
            {"id": 3, "op": "getattr", "h": 2, "name": "nope"},
            {"id": 3, "raised": "AttributeError", "detail": "AttributeError: 'Box' object has no attribute 'nope'"},
        ),
        (
            {"id": 4, "op": "call", "h": 99, "args": [], "kwargs": {}},
            {"id": 4, "raised": "KeyError", "detail": "KeyError: 99"},
        ),
    ],
)
def test_getattr_list_and_errors(request_, expected):
    code = BOX
    call = {"id": 0, "op": "call", "h": 1, "args": [], "kwargs": {}}  # make() returns the box: handle 2
    _, _, reply = serve(code, ["make"], [call, request_])
    assert reply == expected


@pytest.mark.parametrize(
    "code, expected",
    [
        ("def f(:\n", {"raised": "SyntaxError", "compile": True}),  # does not compile
        ("raise ValueError('at load')", {"raised": "ValueError", "detail": "ValueError: at load"}),  # raises on load
    ],
)
def test_a_completion_that_does_not_load_says_only_that(code, expected):
    (load,) = serve(code, ["f"], [])
    assert {k: load[k] for k in expected} == expected
