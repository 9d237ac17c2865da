"""transforms/sandbox/programs/codec.py, the value codec both sides of a code check use: exact builtin types cross,
anything else is a handle."""

import math

import pytest

from rewardmill.transforms.sandbox.programs import codec as codec_module


@pytest.fixture(scope="module")
def codec():
    return vars(codec_module)  # the module whose source both sandboxed programs inline (scripts.py)


class Handle:
    def __init__(self, key):
        self.key = key


@pytest.mark.parametrize(
    "value",
    [
        None, True, 0, -(10**30), 1.5, "é\n", b"\x00\xff", 2 - 3j, [], [1, [2, [3]]], (1, "a", (None,)),
        {"a": 1, 2: [3], (1, 2): {"x"}}, {1, 2}, frozenset({"a"}), float("inf"), float("-inf"),
    ],
)  # fmt: skip
def test_builtin_values_round_trip_with_their_exact_types(codec, value):
    def refuse(v):
        raise AssertionError(f"handle asked for {v!r}")

    back = codec["_dec"](codec["_enc"](value, refuse), refuse)
    assert back == value and type(back) is type(value)


def test_nan_round_trips(codec):
    assert math.isnan(codec["_dec"](codec["_enc"](float("nan"), None), None))


def test_builtin_subclasses_cross_as_their_base_value_and_objects_become_handles(codec):
    import collections
    import enum
    import fractions
    from decimal import Decimal

    class Int(int):
        def __eq__(self, other):  # its own methods are never used: the base type's read the value
            return True

    class Color(enum.IntEnum):
        RED = 2

    point = collections.namedtuple("Point", "x y")
    seen = []

    def handle(v):
        seen.append(v)
        return {"$h": len(seen)}

    values = [
        Int(3),
        object(),
        {"k": Int(1)},
        collections.Counter("aab"),
        collections.defaultdict(list, {1: [2]}),
        collections.OrderedDict(a=1),
        point(0, 1),
        Color.RED,
        fractions.Fraction(3, 2),
        Decimal("1.10"),
    ]
    encoded = codec["_enc"](values, handle)
    assert encoded[:3] == [3, {"$h": 1}, {"$d": [["k", 1]]}]
    decoded = codec["_dec"](encoded, Handle)
    assert type(decoded[1]) is Handle and decoded[1].key == 1
    assert decoded[3:8] == [{"a": 2, "b": 1}, {1: [2]}, {"a": 1}, (0, 1), 2]
    assert [type(x) for x in decoded[3:8]] == [dict, dict, dict, tuple, int]
    assert decoded[8] == fractions.Fraction(3, 2) and type(decoded[8]).__name__ == "Fraction"
    assert str(decoded[9]) == "1.10" and type(decoded[9]).__name__ == "Decimal"


@pytest.mark.parametrize(
    "malformed",
    [
        {"$x": 1},  # unknown tag
        {"a": 1},  # a dict must be tagged
        {"$f": "1e999"},  # only nan and the infinities are special floats
        {"$c": ["1", 2]},  # complex parts must be numbers
        {"$d": [[1]]},  # pairs only
        {"$t": 5},  # a list is needed
        {"$h": "1"},  # handle keys are ints
    ],
)
def test_malformed_values_are_refused(codec, malformed):
    with pytest.raises(ValueError):
        codec["_dec"](malformed, Handle)


def test_depth_is_bounded(codec):
    deep: list = []
    cursor = deep
    for _ in range(100):
        cursor.append([])
        cursor = cursor[0]
    with pytest.raises(codec["_Unsendable"]):
        codec["_enc"](deep, None)
    loop: list = []
    loop.append(loop)  # a self-referencing list is too deep, not a hang
    with pytest.raises(codec["_Unsendable"]):
        codec["_enc"](loop, None)
