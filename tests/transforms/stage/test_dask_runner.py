"""Stages on Beam's Dask runner (a local cluster of 2 worker processes): the same bytes as the in-process runner.

Beam's own Dask runner loses rows (transforms/stage/dask_runner.py says how); `beam.runner: DaskRunner` selects ours.
"""

import hashlib
import json
import os
from pathlib import Path

import apache_beam as beam
import pytest

from rewardmill.pipelines import assemble
from rewardmill.transforms.stage.runner import BeamConfig, pipeline_options, run_pipeline
from tests.pipelines.test_assemble import params, project  # noqa: F401  (the fixture)

OUR_RUNNER = "rewardmill.transforms.stage.dask_runner.DaskRunner"


@pytest.fixture(scope="module")
def cluster():
    import dask
    from distributed import LocalCluster

    with dask.config.set({"distributed.worker.daemon": False}):  # workers start helper processes (math-verify)
        local = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with local:
        yield local


def digests(root: Path) -> dict[str, str]:
    files = sorted(p for p in root.rglob("*") if p.suffix == ".parquet" or p.name == "_manifest.json")
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def test_short_names_and_the_scheduler_are_params():
    from apache_beam.runners.dask.dask_runner import DaskOptions

    def dask(cfg: BeamConfig) -> tuple[str, dict]:
        options = pipeline_options(cfg)
        dask_options = options.view_as(DaskOptions).get_all_options(drop_default=True, current_only=True)
        return options.get_all_options()["runner"], dask_options

    assert dask(BeamConfig(runner="DaskRunner", dask_client_address="tcp://10.0.0.5:8786")) == (
        OUR_RUNNER,
        {"address": "tcp://10.0.0.5:8786"},
    )
    assert dask(BeamConfig(runner="apache_beam.runners.dask.dask_runner.DaskRunner"))[0] == OUR_RUNNER  # Beam's path
    scheduler = dask(BeamConfig(runner="DaskRunner", dask_scheduler_file="/shared/scheduler.json"))[1]
    assert scheduler == {"scheduler_file": "/shared/scheduler.json"}


class _Split(beam.DoFn):
    """Even numbers to the main output, odd ones tagged; half of them only at finish_bundle."""

    def start_bundle(self):
        self.held = []

    def process(self, n):
        if n % 4 == 0:
            self.held.append(n)  # emitted at finish_bundle
        elif n % 2 == 0:
            yield n
        else:
            yield beam.pvalue.TaggedOutput("odd", n)

    def finish_bundle(self):
        from apache_beam.transforms.window import GlobalWindow
        from apache_beam.utils.windowed_value import WindowedValue

        for n in self.held:
            yield WindowedValue(n, 0, [GlobalWindow()])


class _Append(beam.DoFn):
    """Appends each element to a file (what reached this step, how many times) and passes it on."""

    def __init__(self, path: str):
        self.path = path

    def process(self, element):
        with open(self.path, "a") as fh:
            fh.write(f"{element}\n")
        yield element


def test_every_output_of_a_multi_output_pardo_reaches_only_its_consumer(cluster, tmp_path):
    """Upstream, a consumer of either output got both, outputs emitted at finish_bundle were dropped, and only the
    last sink ran."""
    evens, odds = tmp_path / "evens", tmp_path / "odds"

    def build(p):
        split = p | beam.Create(range(40)) | beam.ParDo(_Split()).with_outputs("odd", main="even")
        _ = split.even | "Write evens" >> beam.ParDo(_Append(str(evens)))
        _ = split.odd | "Write odds" >> beam.ParDo(_Append(str(odds)))

    run_pipeline(build, BeamConfig(runner="DaskRunner", dask_client_address=cluster.scheduler_address))
    assert sorted(map(int, evens.read_text().split())) == list(range(0, 40, 2))
    assert sorted(map(int, odds.read_text().split())) == list(range(1, 40, 2))


def test_assemble_on_dask_writes_the_bytes_of_the_in_process_runner(cluster, project, params_file):  # noqa: F811
    strategies = ["best_vs_worst", "correct_vs_incorrect", "all_above_margin", "length_matched", "best_vs_random"]
    outputs = {}
    for name, beam_params in (
        ("fnapi", {"runner": "FnApiRunner"}),
        ("dask", {"runner": "DaskRunner", "dask_client_address": cluster.scheduler_address}),
    ):
        p = params(project, strategies=strategies, balance_length=True)
        p["beam"].update(beam_params)
        params_file(p)
        out = project / f"out-{name}"
        # the workers run elsewhere (here: other processes, other working directories): relative paths are made
        # absolute by the stage
        assemble.main(["--rollouts", "data/rollouts", "--labels", "data/labels", "--out", str(out)])
        outputs[name] = digests(out)
    assert outputs["dask"] == outputs["fnapi"] and len(outputs["fnapi"]) >= 8
    manifest = json.loads((project / "out-dask/pairs/_manifest.json").read_text())
    assert manifest["rows"] > 0 and os.path.exists(project / "out-dask/_rewards")


@pytest.mark.cluster
def test_bad_setups_fail_before_any_work(tmp_path):
    import socket

    import dask
    from distributed import LocalCluster

    from rewardmill.transforms.stage.dask_runner import DaskSetupError

    with pytest.raises(
        ValueError, match=r"runner 'Dask' is not a Beam runner: use one of \[.*'DaskRunner'.*'FlinkRunner'"
    ):
        BeamConfig(runner="Dask")
    BeamConfig(runner="FlinkRunner")  # Beam's own short names stay valid
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    unreachable = BeamConfig(
        runner="DaskRunner", dask_client_address=f"tcp://127.0.0.1:{port}", options=("--dask_connection_timeout=3",)
    )
    ran = tmp_path / "ran"
    with pytest.raises(
        DaskSetupError, match=rf"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}.*dask scheduler"
    ):
        run_pipeline(lambda p: p | beam.Create([1]) | beam.Map(lambda _: ran.touch()), unreachable)
    # Dask's default workers are daemonic processes, which cannot start math-verify's helper process
    with dask.config.set({"distributed.worker.daemon": True}):
        daemonic = LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None)
    with daemonic, pytest.raises(DaskSetupError, match=r"daemonic processes.*DASK_DISTRIBUTED__WORKER__DAEMON=False"):
        run_pipeline(
            lambda p: p | beam.Create([1]) | beam.Map(lambda _: ran.touch()),
            BeamConfig(runner="DaskRunner", dask_client_address=daemonic.scheduler_address),
        )
    assert not ran.exists()


def test_a_side_inputs_upstream_runs_once(cluster, tmp_path):
    """Upstream, every bundle that read a side input computed the side input's whole graph again (assemble read
    its rollouts twice and assembled every bucket twice)."""
    calls, out = tmp_path / "calls", tmp_path / "out"

    def build(p):
        nums = p | beam.Create(range(10)) | "Tally" >> beam.ParDo(_Append(str(calls)))
        total = nums | "Total" >> beam.CombineGlobally(sum)  # a side input, and itself read through one
        shares = nums | "Share" >> beam.Map(lambda n, t: f"{n}/{t}", beam.pvalue.AsSingleton(total))
        _ = shares | "Write" >> beam.ParDo(_Append(str(out)))

    run_pipeline(build, BeamConfig(runner="DaskRunner", dask_client_address=cluster.scheduler_address))
    assert sorted(out.read_text().split()) == sorted(f"{n}/45" for n in range(10))
    assert sorted(map(int, calls.read_text().split())) == list(range(10))  # once each


def test_without_the_dask_extra_the_runner_is_one_line_naming_the_extra(tmp_path):
    """`make install` has no Dask: choosing the runner then is a user error naming the extra to install, not an
    ImportError traceback. Dask and distributed are blocked in a child interpreter (this venv has them: make dev)."""
    import subprocess
    import sys

    script = (
        "import sys; sys.modules['dask'] = sys.modules['distributed'] = None\n"
        "import rewardmill.transforms.errors as errors\n"
        "try:\n"
        "    import rewardmill.transforms.stage.dask_runner\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, errors.is_user_error(exc), exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120).stdout
    assert out.startswith("UserError True beam.runner DaskRunner needs Dask") and "'.[dask]'" in out
