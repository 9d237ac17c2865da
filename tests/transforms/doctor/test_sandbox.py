"""transforms/doctor/sandbox.py: the doctor probes the first code_tests labeler's sandbox for real and says what to
install when no isolation works."""

import shutil

import pytest

from rewardmill.transforms.doctor.report import FAIL, OK, WARN
from rewardmill.transforms.doctor.sandbox import sandbox_check
from rewardmill.transforms.sandbox import runner


@pytest.fixture
def no_isolation_tools(monkeypatch):
    """A machine without bwrap and unshare, in a fresh process (no earlier successful probe)."""
    monkeypatch.setattr(runner, "_working", set())
    monkeypatch.setattr(runner.shutil, "which", lambda name, *a, **k: None)
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)


@pytest.mark.parametrize(
    "users, status, says",
    [
        ({}, WARN, "bwrap not found"),  # no labeler needs it yet: a warning
        ({"code_tests": {}}, FAIL, "labelers.code_tests: sandbox unavailable"),  # fails closed: bwrap or nothing
        ({"code_tests": {"isolation": "unshare"}}, FAIL, "unshare: unshare not found"),
    ],
)
def test_without_isolation_tools(no_isolation_tools, users, status, says):
    check = sandbox_check(users)
    assert (check.area, check.status) == ("sandbox", status) and says in check.detail, check
    assert "apt-get install bubblewrap" in check.fix


def test_the_probe_runs_where_bwrap_works():
    if shutil.which("bwrap") is None:
        pytest.skip("bwrap is not installed here")
    try:
        runner.Sandbox().mechanism()
    except runner.SandboxUnavailable as exc:
        pytest.skip(f"bwrap does not work here: {exc}")
    check = sandbox_check({"code_tests": {}})
    assert check.status == OK and check.detail == "labelers.code_tests: generated code runs under bwrap, no network"
