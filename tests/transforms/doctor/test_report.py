import pytest

from rewardmill.transforms.doctor.report import FAIL, OK, WARN, Check, exit_status, render


def test_render_puts_the_fix_under_what_is_wrong_and_counts():
    checks = [
        Check("python", OK, "3.11.7"),
        Check("model", WARN, "models/policy: not built yet", "dvc repro model"),
        Check("endpoint", FAIL, "labelers.panel: not reachable", "start the server"),
    ]
    lines = render(checks).splitlines()
    assert lines[0] == "ok    python    3.11.7"
    assert lines[2] == " " * 16 + "fix: dvc repro model"  # under the detail column
    assert lines[-1] == "problems found: 1 ok, 1 warnings, 1 failed"
    assert exit_status(checks) == 1 and exit_status(checks[:2]) == 0


@pytest.mark.parametrize(
    ("statuses", "verdict"),
    [
        ([OK], "ready: 1 ok"),  # nothing to do
        ([OK, WARN], "ready, with warnings"),  # runs, but look at it
        ([WARN, FAIL], "problems found"),  # a failure decides
        ([], "ready: 0 ok"),  # no checks at all
    ],
)
def test_the_verdict(statuses, verdict):
    assert render([Check("x", s, "d") for s in statuses]).splitlines()[-1].startswith(verdict)


def test_an_unknown_status_is_refused():
    with pytest.raises(ValueError, match="status"):
        Check("x", "fine", "d")
