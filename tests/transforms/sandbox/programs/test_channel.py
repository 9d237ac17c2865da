"""transforms/sandbox/programs/channel.py: one JSON message per line over a pipe, an exception in one line."""

import os
import threading

import pytest

from rewardmill.transforms.sandbox.programs.channel import _describe, _read_line, _send


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no")


@pytest.mark.parametrize(
    "exc, expected",
    [
        (ValueError("bad input"), "ValueError: bad input"),  # type and message
        (KeyError(), "KeyError"),  # an empty message: the type alone
        (Unprintable("x"), "Unprintable"),  # a message that cannot be read: the type alone, never a crash
        (RuntimeError("x" * 400), "RuntimeError: " + "x" * 286),  # capped at 300 characters
    ],
)
def test_describe(exc, expected):
    assert _describe(exc) == expected


def test_messages_cross_one_per_line_and_a_partial_line_waits():
    read, write = os.pipe()
    try:
        _send(write, {"a": [1, "é"]})
        _send(write, {"id": 2}, "R ")
        os.write(write, b'{"partial"')
        os.close(write)
        write = None
        pending = bytearray()
        assert _read_line(read, pending) == b'{"a": [1, "\\u00e9"]}'
        assert _read_line(read, pending) == b'R {"id": 2}'
        assert _read_line(read, pending) is None  # the input ended inside a line: no line
        assert bytes(pending) == b'{"partial"'
    finally:
        os.close(read)
        if write is not None:
            os.close(write)


def test_a_message_larger_than_the_pipe_is_written_whole():
    read, write = os.pipe()
    pending, lines = bytearray(), []
    reader = threading.Thread(target=lambda: lines.append(_read_line(read, pending)))
    reader.start()
    try:
        _send(write, {"big": "x" * 100_000})  # more than a pipe holds: partial writes until all of it is out
        reader.join(timeout=10)
    finally:
        os.close(write)
        reader.join(timeout=10)
        os.close(read)
    assert lines == [b'{"big": "' + b"x" * 100_000 + b'"}']
