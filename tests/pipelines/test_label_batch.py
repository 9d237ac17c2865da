"""A judge label stage on the batch backend, against the local batch server (vLLM's real batch runner on the default
model; tests/transforms/batch/test_local_server.py says why not the hosted service), with `vllm serve` of the same
model behind the same base URL for online calls: the batch gives the online run's labels for every row (the judge's
same words and verdicts; logprob-derived scores equal to 1e-9), and a stage killed (kill -9) after the server
created its batch but before the stage heard the batch's id, then rerun, finds that batch by its token and sends no
request twice. The server's request log is the evidence."""

import json
import os
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from rewardmill.pipelines import label
from rewardmill.schemas import ROLLOUT_V2
from rewardmill.transforms.batch.local_server import Faults, LocalBatchServer
from rewardmill.transforms.io.parquet import rows_to_table, write_table
from tests.conftest import tiny_params
from tests.pipelines.test_label_and_assemble import rollout
from tests.transforms.batch.test_local_server import RUNNER, RUNNER_ENV

pytestmark = [pytest.mark.model, pytest.mark.server]

COMPLETIONS = ["4", "2 + 2 = 4", "5", "The answer is 22.", "four", "2 + 2 is 4, so the answer is 4."]
FIELDS = ("rollout_id", "aspect", "score", "confidence", "verdict", "rationale", "raw")


def params(base_url: str, policy_dir, batch: bool) -> dict:
    backend = {"kind": "openai", "model": str(policy_dir), "base_url": base_url, "fingerprint": "smollm2-test"}
    if batch:
        backend["batch"] = {"poll_seconds": 0.5, "max_poll_seconds": 2.0}
    out = tiny_params()
    config = {"backend": backend, "max_tokens": 6}
    out["labelers"] = {"judge": {"labeler": "pointwise_judge", "config": config, "probe_prompts": 0}}
    return out


def argv(tmp_path, name: str) -> list[str]:
    """The stage's arguments; each run its own caches (the call cache sits beside the label cache)."""
    cache = tmp_path / f"caches-{name}" / "labels"
    return ["judge", "--rollouts", str(tmp_path / "rollouts"), "--out", str(tmp_path / name),
            "--cache", str(cache), "--metrics", str(tmp_path / f"{name}.json")]  # fmt: skip


def labels(folder) -> list[dict]:
    return sorted(
        (({k: r[k] for k in FIELDS}) for r in pq.read_table(folder).to_pylist()), key=lambda r: r["rollout_id"]
    )


def test_batch_labels_equal_online_and_a_killed_stage_sends_nothing_twice(
    tmp_path, params_file, vllm_server, policy_dir
):
    rows = [rollout(f"p{i // 3}", i % 3, c) for i, c in enumerate(COMPLETIONS)]
    (tmp_path / "rollouts").mkdir()
    write_table(rows_to_table(rows, ROLLOUT_V2), str(tmp_path / "rollouts" / "part-00000-of-00001.parquet"))
    faults = Faults()
    work = tmp_path / "server"
    with LocalBatchServer(str(policy_dir), work, RUNNER, vllm_server + "/v1", faults, env=RUNNER_ENV) as server:
        params_file(params(server.url, policy_dir, batch=False))
        label.main(argv(tmp_path, "online"))
        online_calls = [e for e in server.requests() if e.get("online")]
        assert len(online_calls) == len(rows)

        params_file(params(server.url, policy_dir, batch=True))
        faults.hold_seconds = 20  # the batch waits before it runs: the stage is killed while it is in flight
        # and the server answers `create batch` 15 s after creating it: the kill lands in the narrowest window, the
        # batch exists and the stage never learnt its id (the ledger holds only its intent and token)
        faults.create_reply_seconds = 15
        stage_log = (tmp_path / "stage.log").open("wb")
        stage = subprocess.Popen(
            [sys.executable, "-m", "rewardmill.pipelines.label", *argv(tmp_path, "batch")],
            stdout=stage_log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while not server.batches and time.monotonic() < deadline and stage.poll() is None:
            time.sleep(0.2)
        assert server.batches, (tmp_path / "stage.log").read_text()[-3000:]
        os.killpg(stage.pid, signal.SIGKILL)
        stage.wait()
        assert not (tmp_path / "batch").exists()  # nothing published by the killed run
        (ledger,) = (tmp_path / "caches-batch" / "calls" / "batches").glob("*.json")  # its submission is recorded
        (intent,) = json.loads(ledger.read_text())["batches"]
        assert intent["id"] is None and intent["token"]  # as an intent: the id never came back
        faults.create_reply_seconds = 0

        label.main(argv(tmp_path, "batch"))  # the rerun polls the recorded batch
        log = server.requests()
        batches = list(server.batches)
    batched = [e["custom_id"] for e in log if "batch" in e]
    assert batches == ["batch-000001"]  # the rerun submitted nothing
    assert len(batched) == len(rows) and len(set(batched)) == len(batched)  # every request ran once
    assert [e for e in log if e.get("online")] == online_calls  # and none went online
    batch, online = labels(tmp_path / "batch"), labels(tmp_path / "online")
    assert [r["rollout_id"] for r in batch] == [r["rollout_id"] for r in online]
    for b, o in zip(batch, online, strict=True):  # the same labels, row by row
        assert (b["verdict"], b["rationale"], b["aspect"]) == (o["verdict"], o["rationale"], o["aspect"])
        assert json.loads(b["raw"])["texts"] == json.loads(o["raw"])["texts"]  # the judge said the same words
        # G-Eval's score is a sum over the answer token's probabilities: the engine's float32 logprobs differ in
        # their last bits with the batch's shape (a batch of 6 against online requests a few at a time, however the
        # server's scheduler grouped them), nothing more. A float32 ulp near 0.66 is 6e-8; CI saw 2.2e-7 (4 ulps),
        # so the bound is float32 resolution with room, not float64's (1e-9 passed only when the groupings matched)
        assert b["score"] == pytest.approx(o["score"], abs=1e-6)
        assert b["confidence"] == pytest.approx(o["confidence"], abs=1e-6)
    metrics = json.loads((tmp_path / "batch.json").read_text())
    assert metrics["batch"]["rounds"] == 1 and metrics["batch"]["batch_adopted"] == 1
    assert metrics["batch"]["batches"] == 0 and metrics["usage"].get("requests", 0) == 0
    manifest = json.loads((tmp_path / "batch" / "_manifest.json").read_text())
    assert manifest["batch"] == metrics["batch"]
