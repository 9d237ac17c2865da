"""transforms/sandbox/programs/probe.py: prints the network interfaces it sees, sorted, as the runner reads them."""

import ast
import runpy
import socket

from rewardmill.transforms.sandbox import runner
from rewardmill.transforms.sandbox.programs import probe, source


def test_it_prints_the_sorted_interface_names(capsys):
    runpy.run_path(probe.__file__, run_name="__main__")
    assert ast.literal_eval(capsys.readouterr().out) == sorted(n for _, n in socket.if_nameindex())


def test_importing_it_prints_nothing_and_the_runner_runs_the_file(capsys):
    assert capsys.readouterr().out == ""
    assert runner.PROBE == source(probe)
