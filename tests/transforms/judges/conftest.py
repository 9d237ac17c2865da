"""Judge client fixtures: the real default model as a local judge, and behind a real OpenAI-compatible server.

Both are session-scoped (loading the model and starting `transformers serve` take seconds each); tests keep
max_tokens tiny so the whole judge client suite stays short on 2 CPU cores.
"""

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardmill.transforms.judges.client import BackendConfig
from rewardmill.transforms.judges.transformers_client import TransformersJudgeClient
from tests.transforms.judges.fault_proxy import free_port

TRANSFORMERS_CLI = Path(sys.executable).with_name("transformers")


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """Generate on one thread here: on a 2-core machine shared with another job, torch's second OpenMP thread
    spin-waits for a busy core and a tiny generate call gets ~10x slower (0.8 s -> 9 s measured)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def local_judge(policy_dir) -> TransformersJudgeClient:
    """The real default model as a local judge client, loaded once per session."""
    return TransformersJudgeClient(BackendConfig(model=str(policy_dir), batch_size=4))


@pytest.fixture(scope="session")
def judge_server(policy_dir, tmp_path_factory) -> Iterator[str]:
    """`transformers serve` on the default model, CPU, float32: yields its root URL (clients add /v1)."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("judge_server") / "serve.log"
    command = [str(TRANSFORMERS_CLI), "serve", str(policy_dir), "--host", "127.0.0.1", "--port", str(port)]
    command += ["--device", "cpu", "--dtype", "float32"]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"},
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if process.poll() is not None:
                pytest.fail(f"transformers serve exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"transformers serve not healthy after 180 s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
