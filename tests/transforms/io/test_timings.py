import json
import subprocess
import sys
import threading
import time

import pytest

from rewardmill.transforms.io import timings
from rewardmill.transforms.io.timings import Clock


def test_overlapping_blocks_of_a_kind_count_their_wall_time_once():
    clock = Clock()
    clock.enter(("labeler", "inside"), 0.0)
    clock.enter(("labeler", "inside"), 1.0)  # a second thread starts while the first is open
    clock.leave(("labeler", "inside"), 2.0)
    clock.enter(("generate", "inside"), 2.5)  # another model kind inside the same window
    clock.leave(("generate", "inside"), 3.5)
    clock.leave(("labeler", "inside"), 4.0)
    clock.enter(("parquet",), 5.0)
    clock.leave(("parquet",), 6.0)
    assert clock.totals() == {"labeler": 4.0, "inside": 4.0, "generate": 1.0, "parquet": 1.0}


def test_timed_is_a_no_op_unless_the_variable_is_set(monkeypatch):
    monkeypatch.delenv(timings.ENV, raising=False)
    before = timings.CLOCK.totals()
    with timings.timed("labeler"):
        pass
    assert timings.CLOCK.totals() == before


def test_threads_labeling_in_parallel_are_not_counted_twice(monkeypatch, tmp_path):
    monkeypatch.setenv(timings.ENV, str(tmp_path / "t.jsonl"))
    monkeypatch.setattr(timings, "CLOCK", Clock(origin=time.perf_counter()))

    def work():
        with timings.timed("labeler"):
            time.sleep(0.3)

    threads = [threading.Thread(target=work) for _ in range(4)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - start
    totals = timings.CLOCK.totals()
    assert 0.29 <= totals["labeler"] <= took  # four threads of 0.3 s in parallel: about 0.3 s, not 1.2 s
    assert totals["inside"] == totals["labeler"]


def test_a_stage_process_appends_its_record_at_exit(tmp_path):
    out = tmp_path / "timings.jsonl"
    code = (
        "from rewardmill.transforms.io import timings\n"
        "import time\n"
        "timings.start('label@demo')\n"
        "time.sleep(0.2)\n"
        "timings.pipeline_started()\n"
        "with timings.timed('labeler'):\n"
        "    time.sleep(0.2)\n"
    )
    for _ in range(2):  # two processes append, neither overwrites
        subprocess.run([sys.executable, "-c", code], env={timings.ENV: str(out)}, check=True)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["stage"] for r in records] == ["label@demo", "label@demo"]
    for r in records:
        assert r["kinds"]["labeler"] >= 0.19 and r["kinds"]["inside"] == r["kinds"]["labeler"]
        assert r["kinds"]["startup"] >= 0.19  # from process start to pipeline_started, imports included
        assert r["wall"] >= r["kinds"]["startup"] + r["kinds"]["labeler"]
        assert abs(sum(r["split"].values()) - r["wall"]) < 1e-6


def test_the_split_gives_each_moment_to_one_part_and_adds_up_to_the_wall_time():
    clock = Clock(origin=0.0)
    clock.enter(("startup",), 0.0)
    clock.leave(("startup",), 2.0)  # 0-2 start-up
    clock.enter(("pipeline",), 2.0)
    clock.enter(("parquet",), 3.0)  # 3-4 reading inside the pipeline: parquet, not pipeline
    clock.leave(("parquet",), 4.0)
    clock.enter(("labeler", "inside"), 4.0)
    clock.enter(("parquet",), 5.0)  # a write while a labeler runs in another thread: the labeler's moment
    clock.leave(("parquet",), 6.0)
    clock.leave(("labeler", "inside"), 7.0)
    clock.leave(("pipeline",), 8.0)
    split = clock.partition(9.0)  # 8-9: after the pipeline (manifest, rename)
    assert split == {"startup": 2.0, "pipeline": 2.0, "parquet": 1.0, "inside": 3.0, "other": 1.0}
    assert sum(split.values()) == 9.0


@pytest.mark.slow
def test_a_real_stage_records_its_split_and_a_label_stage_its_labeler_time(tmp_path, params_file):
    """`rewardmill run prompts` and `run label math_answer` with REWARDMILL_TIMINGS: one record each, named by the
    stage, whose parts add up to its wall time; only the label stage has time inside a labeler."""
    import os

    import pyarrow as pa

    from rewardmill.schemas import ROLLOUT_V2
    from rewardmill.transforms.io.parquet import write_table
    from tests.transforms.validation.rows import rollout_row

    params = params_file()
    out = tmp_path / "timings.jsonl"
    env = {**os.environ, timings.ENV: str(out), "REWARDMILL_PARAMS": str(params)}
    rewardmill = [sys.executable, "-m", "rewardmill.pipelines.cli"]
    subprocess.run([*rewardmill, "run", "prompts", "--out", str(tmp_path / "prompts")], env=env, check=True)
    rollouts = tmp_path / "rollouts"
    rollouts.mkdir()
    row = rollout_row(0, completion="2 + 3 = 5. The answer is 5.")
    write_table(pa.Table.from_pylist([row], schema=ROLLOUT_V2), str(rollouts / "part-00000.parquet"))
    label = ["run", "label", "math_answer", "--rollouts", str(rollouts), "--out", str(tmp_path / "labels")]
    subprocess.run([*rewardmill, *label], env=env, check=True)
    records = {r["stage"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(records) == {"prompts", "label@math_answer"}
    for r in records.values():
        assert abs(sum(r["split"].values()) - r["wall"]) < 1e-6
        assert r["split"]["startup"] > 0 and r["split"]["pipeline"] > 0
    assert "inside" not in records["prompts"]["split"]
    assert records["label@math_answer"]["kinds"]["labeler"] > 0
