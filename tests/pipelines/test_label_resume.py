"""Kill a label stage halfway, rerun it: labels computed before the kill come from the cache."""

import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from rewardmill.schemas import ROLLOUT_V2
from rewardmill.transforms.io.parquet import read_rows, rows_to_table, write_table
from tests.conftest import REPO, tiny_params
from tests.pipelines.test_label_and_assemble import rollout

RUN = """
import sys
from rewardmill.transforms import labelers
from tests.pipelines.slow_labeler import SlowMathAnswer
labelers.LABELERS["slow_math"] = SlowMathAnswer
from rewardmill.pipelines import label
label.main(sys.argv[1:])
"""


@pytest.mark.slow
def test_killed_label_stage_resumes_from_cache(tmp_path):
    rows = [rollout(f"p{i}", 0, f"\\boxed{{{i}}}") for i in range(20)]
    rollouts = tmp_path / "rollouts"
    rollouts.mkdir()
    write_table(rows_to_table(rows, ROLLOUT_V2), str(rollouts / "part-00000-of-00001.parquet"))
    (rollouts / "_manifest.json").write_text('{"rows": 20}')
    params = tiny_params()
    params["labelers"] = {"slow": {"labeler": "slow_math", "config": {}}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    calls = tmp_path / "calls"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "CALLS_FILE": str(calls),
        "REWARDMILL_PARAMS": str(tmp_path / "params.yaml"),
    }
    args = [
        sys.executable,
        "-c",
        RUN,
        "slow",
        "--rollouts",
        str(rollouts),
        "--out",
        str(tmp_path / "labels"),
        "--cache",
        str(tmp_path / "cache"),
        "--cache-flush-every",
        "2",
    ]

    first = subprocess.Popen(args, env=env, cwd=tmp_path, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not calls.exists() or len(calls.read_text().splitlines()) < 8):
        time.sleep(0.2)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    computed_before = len(calls.read_text().splitlines())
    assert 8 <= computed_before < 20, computed_before
    assert not (tmp_path / "labels").exists()  # no half output

    calls.unlink()
    env["SLOW_SECONDS"] = "0"
    subprocess.run(args, env=env, cwd=tmp_path, check=True, timeout=300)
    recomputed = len(calls.read_text().splitlines())
    assert recomputed <= 20 - computed_before + 2  # at most the last unflushed segment is redone
    assert len(read_rows(str(tmp_path / "labels"))) == 20
