"""Multi-process FnApiRunner workers share the cores out instead of each sizing torch's thread pool to all of them."""

import json
import os

import apache_beam as beam
import pytest

from rewardmill.transforms.stage.runner import BeamConfig, local_worker_processes, running
from rewardmill.transforms.stage.worker_threads import VARIABLE, shared_cores, threads_per_worker, usable_cores


@pytest.mark.parametrize(
    "workers, cores, threads",
    [
        (2, 2, 1),  # the 2-core laptop: one thread each
        (2, 16, 8),
        (3, 16, 5),  # the remainder stays free
        (4, 2, 1),  # more workers than cores: still one each, never 0
        (0, 4, 4),  # nonsense worker count reads as one
    ],
)
def test_threads_per_worker(workers, cores, threads):
    assert threads_per_worker(workers, cores) == threads


def test_set_only_while_open_and_only_for_several_workers(monkeypatch):
    monkeypatch.delenv(VARIABLE, raising=False)
    with shared_cores(1) as threads:
        assert threads is None and VARIABLE not in os.environ
    with shared_cores(2) as threads:
        assert threads == threads_per_worker(2, usable_cores()) and os.environ[VARIABLE] == str(threads)
    assert VARIABLE not in os.environ


def test_a_users_setting_is_kept(monkeypatch):
    monkeypatch.setenv(VARIABLE, "3")
    with shared_cores(2) as threads:
        assert threads is None and os.environ[VARIABLE] == "3"
    assert os.environ[VARIABLE] == "3"


def test_only_local_multi_process_runners_start_workers_here():
    assert local_worker_processes(BeamConfig(direct_num_workers=2)) == 2
    assert local_worker_processes(BeamConfig()) == 1
    assert local_worker_processes(BeamConfig(runner="DaskRunner", direct_num_workers=2)) == 1


class ReportThreads(beam.DoFn):
    def process(self, element):
        import torch

        yield json.dumps({"pid": os.getpid(), "env": os.environ.get(VARIABLE), "torch": torch.get_num_threads()})


@pytest.mark.slow
def test_each_worker_process_runs_torch_on_its_share(tmp_path, monkeypatch):
    """A real pipeline on FnApiRunner with 2 worker processes: every DoFn that ran, in whichever process, sees its
    share of the cores in torch (the driver's environment is as it was after the run)."""
    monkeypatch.delenv(VARIABLE, raising=False)
    with running(BeamConfig(direct_num_workers=2)) as p:
        _ = (
            p
            | beam.Create(range(8))
            | beam.Reshuffle()
            | beam.ParDo(ReportThreads())
            | beam.io.WriteToText(str(tmp_path / "threads"))
        )
    seen = [json.loads(line) for f in tmp_path.glob("threads*") for line in f.read_text().splitlines()]
    share = threads_per_worker(2, usable_cores())
    assert len(seen) == 8 and {(r["env"], r["torch"]) for r in seen} == {(str(share), share)}, seen
    assert all(r["pid"] != os.getpid() for r in seen)  # they ran in the worker processes
    assert VARIABLE not in os.environ
