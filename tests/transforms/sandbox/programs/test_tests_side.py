"""transforms/sandbox/programs/tests_side.py, in process: the tests' namespace, how each test's status is decided,
and what a completion's object may not do on the trusted side."""

import math
import os.path
import signal

import pytest

from rewardmill.transforms.sandbox.programs import tests_side
from rewardmill.transforms.sandbox.programs.tests_side import _Handle, _imported, _namespace, _run, _tests_fault


@pytest.fixture(autouse=True)
def alarm():
    """The program's SIGALRM handler, as its _main installs it (restored after the test)."""
    previous = signal.signal(signal.SIGALRM, tests_side._raise_timeout)
    yield
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


def spec(**overrides) -> dict:
    base = {"modules": [], "prompt": "", "declared": ["f"], "imported": {}, "export": ["f"]}
    return {**base, **overrides}


SWALLOWS = "try:\n    while True:\n        pass\nexcept BaseException:\n    pass\n"


def run(source: str, ns: dict | None = None, limit: float = 2.0) -> tuple[str, str]:
    return _run(compile(source, "<test>", "exec"), ns if ns is not None else {"__builtins__": __builtins__}, limit)


@pytest.mark.parametrize(
    "source, expected",
    [
        ("assert 1 + 1 == 2", ("pass", "")),
        ("assert 1 == 2, 'one is not two'", ("fail", "AssertionError: one is not two")),
        ("assert False", ("fail", "AssertionError")),  # no message: the type alone
        ("1 / 0", ("error", "ZeroDivisionError: division by zero")),
        ("raise SystemExit(0)", ("error", "SystemExit: 0")),  # exiting is no pass
        ("while True:\n    pass", ("timeout", "exceeded 0.2s")),
        # a test that swallows the time limit still times out
        (SWALLOWS, ("timeout", "the test exceeded its time limit")),
    ],
)  # fmt: skip
def test_statuses(source, expected):
    assert run(source, limit=0.2) == expected


def test_the_namespace_holds_builtins_modules_the_prompt_and_only_the_declared_names_allowed():
    plan = spec(
        modules=["math"],
        prompt="def helper():\n    return 1\n\ndef f():\n    return 'the prompt stub'\n",
        declared=["f", "pi", "g", "h"],
        imported={"pi": ["math", "pi"]},
        export=["f", "g"],
    )
    ns = _namespace(plan, {"f": 5, "h": 7})
    assert ns["math"] is math and ns["helper"]() == 1
    assert ns["f"] == 5  # the completion's def, not the prompt's stub
    assert ns["pi"] == math.pi  # imported here: the real object
    assert "g" not in ns  # exported but not sent: unbound
    assert "h" not in ns  # sent but not a def or class of the completion's: never reaches the tests
    assert ns["__builtins__"]["abs"] is abs and ns["__name__"] == "__tests__"


@pytest.mark.parametrize(
    "module, attribute, expected",
    [
        ("math", None, math),  # import math
        ("os.path", ".", os),  # import os.path binds os
        ("math", "pi", math.pi),  # from math import pi
        ("os", "path", os.path),  # from os import path (a submodule)
    ],
)
def test_imported_names_are_the_real_objects(module, attribute, expected):
    assert _imported(module, attribute) is expected


@pytest.mark.parametrize(
    "codes, fault",
    [
        (["assert f(1) == 2"], False),  # touches the completion: not the tests' fault
        (["1 / 0"], True),  # fails before touching it: the tests' own fault
        (["x = [f]\nx[0](1)"], False),  # reached through a container
        (["import nope_xyz"], True),  # the tests' own import
        (["assert 1 == 1"], False),  # passes: nothing to blame
    ],
)
def test_a_dry_run_blames_the_tests_only_when_they_fail_without_the_completion(codes, fault):
    compiled = [compile(code, "<test>", "exec") for code in codes]
    assert _tests_fault(spec(), compiled, 2.0) is fault


@pytest.mark.parametrize(
    "use",
    [
        lambda h: h == 1,  # compared
        lambda h: h < 1,
        lambda h: hash(h),  # hashed
        lambda h: bool(h),  # truth value
        lambda h: setattr(h, "x", 1),  # attribute set
    ],
)
def test_a_completion_object_cannot_be_compared_hashed_or_tested(use):
    with pytest.raises(TypeError, match="non-builtin value from the completion"):
        use(_Handle(1))


def test_a_completion_object_has_no_dunder_attributes_to_forward():
    with pytest.raises(AttributeError):
        _Handle(1).__code__  # noqa: B018 (the read is the test)
