"""A judge label stage that loses more of its rollouts to failed judge calls than `max_failed_calls` allows fails with
one line and exit status 2, writes nothing, and a rerun resumes from the calls that succeeded; below the limit it
passes and reports the client's concurrency in its metrics.

The endpoint is paced_server.PacedServer, a real HTTP server on 127.0.0.1 that answers 503 to the first requests it
gets: a real model server cannot be made to refuse on cue (tests/pipelines/test_label_judges.py runs the same stage
against `transformers serve` behind a fault proxy).
"""

import json
import shutil

import pyarrow.parquet as pq
import pytest

from rewardmill.pipelines import cli, label
from rewardmill.schemas import ROLLOUT_V2
from rewardmill.transforms.io.parquet import rows_to_table, write_table
from tests.conftest import tiny_params
from tests.pipelines.test_label_and_assemble import rollout
from tests.transforms.judges.paced_server import PacedServer

ROWS = 10


@pytest.fixture
def rollouts(tmp_path):
    out = tmp_path / "rollouts"
    out.mkdir()
    rows = [rollout("p1", i, f"The answer is {i}.") for i in range(ROWS)]
    write_table(rows_to_table(rows, ROLLOUT_V2), str(out / "part-00000-of-00001.parquet"))
    return out


def stage(tmp_path, params_file, server: PacedServer, **entry) -> list[str]:
    """Params with one pointwise judge on `server` (no retries, no probes: every refused request is a lost row), and
    the `rewardmill run label` arguments."""
    backend = {"kind": "openai", "model": "m", "base_url": server.url + "/v1", "max_retries": 0, "max_concurrency": 4}
    params = tiny_params()
    params["labelers"] = {
        "judge": {"labeler": "pointwise_judge", "config": {"backend": backend}, "probe_prompts": 0, **entry}
    }
    params_file(params)
    cache = tmp_path / "cache" / "labels"
    return ["run", "label", "judge", "--rollouts", str(tmp_path / "rollouts"), "--out", str(tmp_path / "labels")] + [
        "--cache",
        str(cache),
        "--metrics",
        str(tmp_path / "metrics.json"),
    ]


@pytest.mark.slow
def test_more_failed_calls_than_allowed_fail_the_stage_in_one_line_and_a_rerun_resumes(
    tmp_path, params_file, rollouts, capsys
):
    with PacedServer(0.01, serial=False, refuse=range(3)) as server:
        argv = stage(tmp_path, params_file, server)  # max_failed_calls: the default 0.05
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        errors = [line for line in err.splitlines() if line.startswith("rewardmill: error: ")]
        assert len(errors) == 1 and "Traceback" not in err, err
        (line,) = errors
        for says in ("label@judge", "3 of 10 rollouts (30%)", "judge_call_failed", "max_failed_calls 0.05"):
            assert says in line, line
        for advice in ("max_concurrency", "request_timeout", "failures 3"):
            assert advice in line, line
        assert not (tmp_path / "labels").exists() and not (tmp_path / "metrics.json").exists()  # nothing in place

        # The 7 calls that succeeded are in the call cache: without the label cache, a rerun sends only the 3 others.
        shutil.rmtree(tmp_path / "cache" / "labels")
        server.refuse, sent = range(0), server.requests  # healthy again, same endpoint (its URL keys the caches)
        assert cli.main(argv) == 0
        assert server.requests - sent == 3
    assert pq.read_table(tmp_path / "labels").num_rows == ROWS


def test_fewer_failed_calls_than_allowed_pass_with_the_rows_rejected_and_the_concurrency_reported(
    tmp_path, params_file, rollouts
):
    with PacedServer(0.01, serial=False, refuse=range(1)) as server:
        label.main(stage(tmp_path, params_file, server, max_failed_calls=0.2)[2:])
    rejects = pq.read_table(tmp_path / "labels" / "_rejects").to_pylist()
    assert [r["reason"] for r in rejects] == ["judge_call_failed"]
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["rejects"] == {"judge_call_failed": 1} and metrics["labels"] == ROWS - 1
    usage = metrics["usage"]
    assert usage["requests"] == ROWS and usage["failures"] == 1
    assert 1 <= usage["concurrency_limit"] <= usage["concurrency_peak"] <= 4


@pytest.mark.parametrize(
    ("failed", "labeled", "limit", "fails"),
    [
        (0, 10, 0.0, False),  # nothing lost passes any limit
        (1, 19, 0.05, False),  # exactly at the limit passes
        (2, 18, 0.05, True),  # above it fails
        (5, 0, 1.0, False),  # a limit of 1 never fails
    ],
)
def test_check_failed_calls_table(failed, labeled, limit, fails):
    check = lambda: label.check_failed_calls("label@j", "j", limit, failed, labeled, {})  # noqa: E731
    if fails:
        with pytest.raises(label.FailedCallsError, match=r"label@j: .* above labelers\.j\.max_failed_calls"):
            check()
    else:
        check()
