"""`rewardmill batch-server` as a user starts it (docs/batch.md): it comes up on 127.0.0.1, a judge backend with a
`batch:` block gets its answers through it (a real `vllm run-batch` on the default model), and Ctrl-C stops it."""

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from rewardmill.transforms.batch.client import BatchJudgeClient
from rewardmill.transforms.judges.client import BackendConfig, BatchConfig, JudgeRequest, Sampling
from tests.transforms.judges.fault_proxy import free_port

pytestmark = [pytest.mark.model, pytest.mark.server]

BIN = Path(sys.executable).parent


def test_batch_server_answers_a_batch_and_stops_on_ctrl_c(policy_dir, tmp_path):
    port, upstream = free_port(), free_port()  # nothing listens upstream: only batches are sent here
    server = subprocess.Popen(
        [str(BIN / "rewardmill"), "batch-server", "--model", str(policy_dir), "--work", str(tmp_path / "work"),
         "--port", str(port), "--upstream", f"http://127.0.0.1:{upstream}/v1", "--", "--dtype", "float32",
         "--enforce-eager"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120  # a loaded machine starts the command slowly
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                    assert response.status == 200
                    break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, server.stdout.read()
                time.sleep(0.2)
        config = BackendConfig(
            kind="openai", model=str(policy_dir), base_url=f"http://127.0.0.1:{port}/v1",
            cache_dir=str(tmp_path / "calls"), batch=BatchConfig(poll_seconds=0.5, max_poll_seconds=2.0),
        )  # fmt: skip
        asked = [JudgeRequest(({"role": "user", "content": q},), Sampling(max_tokens=5)) for q in ("Hi", "2 + 2?")]
        got = BatchJudgeClient(config).complete(asked)
        assert all(r.error is None and r.completion_tokens > 0 for r in got), [r.error for r in got]
    finally:
        server.send_signal(signal.SIGINT)
        status = server.wait(timeout=30)
    assert status == 0
    # the runner got the arguments after `--` (its log starts with its command line)
    assert "--enforce-eager" in (tmp_path / "work" / "batch-000001" / "runner.log").read_text().splitlines()[0]
