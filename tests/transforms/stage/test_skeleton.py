"""transforms/stage/skeleton.py: run_stage owns one order for every stage: pipeline, checks, manifest, metrics, then
the output in place, the closing line and the budget report. A tiny real pipeline on FnApiRunner in tmp_path."""

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import apache_beam as beam
import pyarrow as pa
import pytest

from rewardmill.transforms.io.parquet import WriteSortedParquet
from rewardmill.transforms.planning.budget import Admission, Budget
from rewardmill.transforms.planning.spend import Spend
from rewardmill.transforms.stage import skeleton
from rewardmill.transforms.stage.budget import StageBudget
from rewardmill.transforms.stage.conservation import ConservationError
from rewardmill.transforms.stage.outputs import MANIFEST, reject, write_rejects
from rewardmill.transforms.stage.runner import BeamConfig
from rewardmill.transforms.stage.skeleton import ManifestSpec, run_stage

TOY_V1 = pa.schema([("id", pa.string()), ("n", pa.int64())], metadata={"rewardmill.schema": "toy_v1"})
ROWS = [{"id": "b", "n": 2}, {"id": "a", "n": 1}]


@dataclass(frozen=True)
class ToyConfig:
    k: int = 1


def build(p, tmp: str) -> None:
    _ = p | "Rows" >> beam.Create(ROWS) | "Write" >> WriteSortedParquet(tmp, TOY_V1, sort_key=lambda r: r["id"])
    write_rejects(p | "Rejects" >> beam.Create([reject("toy", "c", "bad")]), tmp)


def leftovers(out) -> list[str]:
    """Temp or old folders beside `out` (atomic_output's)."""
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f"{out.name}."))


@pytest.fixture
def spec(tmp_path) -> ManifestSpec:
    source = tmp_path / "source.txt"
    source.write_text("input")
    return ManifestSpec(TOY_V1, ToyConfig(), {"source": str(source)}, extra={"note": "fixed"})


def test_the_output_appears_after_checks_manifest_and_metrics(tmp_path, spec, stage_log):
    out, metrics = tmp_path / "out", tmp_path / "metrics.json"
    events = []

    def check(tmp, result):
        # the pipeline has written its shards; no manifest yet, and nothing in place
        assert [f.name for f in Path(tmp).iterdir() if f.suffix == ".parquet"] and not out.exists()
        assert not (tmp_path / tmp / MANIFEST).exists()
        events.append("check")
        return {"seen": 2}

    def extra(done):
        assert not (Path(done.tmp) / MANIFEST).exists() and done.checked == {"seen": 2}
        events.append("extra")
        return {"seen": done.checked["seen"]}

    def record(done, manifest):
        assert (Path(done.tmp) / MANIFEST).exists() and not out.exists()  # the manifest, still in the temp folder
        events.append("metrics")
        return {"rows": manifest["rows"], "rejects": manifest["rejects"]}

    def log_run(run):
        assert out.exists() and metrics.exists()
        events.append("log_run")
        logging.getLogger("rewardmill").info("toy: this run's counters")  # must come before the closing line

    run = run_stage(
        "toy",
        str(out),
        BeamConfig(),
        build,
        ManifestSpec(spec.schema, spec.config, spec.inputs, extra=extra),
        check=check,
        metrics=str(metrics),
        metrics_record=record,
        log_run=log_run,
    )
    assert events == ["check", "extra", "metrics", "log_run"]
    manifest = json.loads((out / MANIFEST).read_text())
    assert run.manifest == manifest and run.checked == {"seen": 2}
    assert manifest["stage"] == "toy" and manifest["schema"] == "toy_v1" and manifest["seen"] == 2
    assert manifest["rows"] == 2 and manifest["rejects"] == {"bad": 1} and set(manifest["inputs"]) == {"source"}
    assert json.loads(metrics.read_text()) == {"rows": 2, "rejects": {"bad": 1}}  # no budget: no budget record
    assert leftovers(out) == []
    lines = [r.getMessage() for r in stage_log.records if r.getMessage().startswith("toy:")]
    assert lines[0] == "toy: starting" and lines[1] == "toy: this run's counters" and "done in" in lines[2]


def test_a_failed_check_leaves_no_output_no_manifest_and_no_metrics(tmp_path, spec, monkeypatch):
    out, metrics = tmp_path / "out", tmp_path / "metrics.json"
    out.mkdir()
    (out / "previous.txt").write_text("the last good output")
    written = []
    monkeypatch.setattr(skeleton, "write_manifest", lambda *a, **kw: written.append(a))

    def check(tmp, result):
        raise ConservationError("toy: 3 input rows but 2 in the output, 1 rejected: 0 missing. Nothing was written")

    with pytest.raises(ConservationError, match="Nothing was written"):
        run_stage("toy", str(out), BeamConfig(), build, spec, check=check, metrics=str(metrics), metrics_record=dict)
    assert written == []  # the manifest is never written for an output that failed its checks
    assert [f.name for f in out.iterdir()] == ["previous.txt"] and leftovers(out) == []
    assert not metrics.exists()


def test_a_build_that_raises_leaves_nothing(tmp_path, spec):
    out, metrics = tmp_path / "out", tmp_path / "metrics.json"
    checked = []

    def broken(p, tmp):
        raise RuntimeError("boom: the graph could not be built")

    with pytest.raises(RuntimeError, match="boom"):
        run_stage(
            "toy",
            str(out),
            BeamConfig(),
            broken,
            spec,
            check=lambda tmp, result: checked.append(tmp),
            metrics=str(metrics),
            metrics_record=lambda done, manifest: {},
        )
    assert checked == [] and not out.exists() and not metrics.exists() and leftovers(out) == []


def test_a_budget_goes_in_the_metrics_and_its_report_closes_the_stage(tmp_path, spec, stage_log):
    out, metrics = tmp_path / "out", tmp_path / "metrics.json"
    admitted = Admission(admitted={"p1"}, excluded={"p2"}, spend=Spend(requests=3), left=Spend(requests=2))
    budget = StageBudget("toy.budget", Budget(max_requests=4), admitted)
    assert budget.over == frozenset({"p2"})
    run_stage(
        "toy",
        str(out),
        BeamConfig(),
        build,
        spec,
        metrics=str(metrics),
        metrics_record=lambda done, manifest: {"rows": manifest["rows"]},
        budget=budget,
    )
    record = json.loads(metrics.read_text())
    assert record["rows"] == 2 and record["budget"]["prompts_over_budget"] == 1
    assert record["budget"]["planned_requests"] == 3 and record["budget"]["left_requests"] == 2
    assert json.loads((out / MANIFEST).read_text())["note"] == "fixed"
    lines = [r.getMessage() for r in stage_log.records if r.getMessage().startswith("toy:")]
    assert "done in" in lines[-2] and lines[-1].startswith("toy: budget reached (max_requests=4)")
