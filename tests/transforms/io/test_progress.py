import io
import re

import pytest

from rewardmill.transforms.io import progress
from rewardmill.transforms.io.progress import Progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize(
    ("env", "stream", "chosen"),
    [
        ("", io.StringIO(), "log"),  # a file or a pipe: log lines
        ("", Terminal(), "bar"),  # a terminal: a live bar
        ("log", Terminal(), "log"),  # the variable decides
        ("OFF", io.StringIO(), "off"),
        ("nonsense", io.StringIO(), "log"),  # unknown values are ignored
    ],
)
def test_mode(monkeypatch, env, stream, chosen):
    monkeypatch.setenv(progress.MODE_ENV, env)
    assert progress.mode(stream) == chosen


def test_log_lines_have_total_share_eta_and_rate_and_are_throttled(monkeypatch, stage_log):
    monkeypatch.setenv(progress.MODE_ENV, "log")
    clock = iter([0.0, 1.0, 20.0, 21.0]).__next__
    monkeypatch.setattr(progress.time, "monotonic", clock)
    bar = Progress("steps@mc", 8, every=10.0, unit="rollout")
    bar.update(2, tokens=100)  # t=1: within `every`, no line
    bar.update(2)  # t=20: a line, with ETA
    bar.update(4)  # t=21: the last, always logged
    lines = [r.getMessage() for r in stage_log.records if r.name == "rewardmill"]
    assert lines[0] == "steps@mc: 4/8 (50%) [00:20<00:20,  5.00s/rollout, 5 tok/s]"
    assert re.fullmatch(r"steps@mc: 8/8 \(100%\) \[00:21<00:00, .*\]", lines[1]) and len(lines) == 2


def test_without_a_total_there_is_no_eta():
    bar = Progress("label@x", None)
    bar.done = 3
    assert re.fullmatch(r"label@x: 3 \[\d\d:\d\d, .+it/s\]", bar.line(bar.start + 1.5))


def test_on_a_terminal_a_bar_is_drawn_and_nothing_is_logged(monkeypatch, capsys, caplog):
    monkeypatch.setenv(progress.MODE_ENV, "bar")
    bar = Progress("rollouts", 3, unit="prompt")
    bar.update(3)
    err = capsys.readouterr().err
    assert "rollouts: 100%" in err and "3/3" in err and not caplog.records
