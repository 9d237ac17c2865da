"""Our Dask runner (a local cluster of 2 worker processes): its options, and the Beam shapes upstream's loses rows on.

Beam's own Dask runner loses rows (transforms/stage/dask_runner.py says how); `beam.runner: DaskRunner` selects ours.
That the stages write the in-process runner's bytes on it is checked once, on the real DAG:
tests/e2e/test_repro.py::test_the_dag_on_other_runners_writes_the_same_bytes (and with S3 paths,
tests/pipelines/test_object_storage.py).
"""

import apache_beam as beam
import pytest

from rewardmill.transforms.stage.runner import BeamConfig, pipeline_options, run_pipeline

OUR_RUNNER = "rewardmill.transforms.stage.dask_runner.DaskRunner"


@pytest.fixture(scope="module")
def cluster():
    import dask
    from distributed import LocalCluster

    with dask.config.set({"distributed.worker.daemon": False}):  # workers start helper processes (math-verify)
        local = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with local:
        yield local


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
