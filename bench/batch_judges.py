"""The demo's panel judge stage, online against batch, through one local server (`rewardmill batch-server`'s server:
vLLM's batch runner for batches, a `vllm serve` of the same model behind it for online calls).

    python bench/batch_judges.py --model models/policy [--rollouts 32] [--repeats 3] [--keep DIR]
        [--input-price 0.15] [--output-price 0.60] [--discount 0.5]

Each run is the label stage (`rewardmill run label panel`) on `--rollouts` math rollouts with the demo's `panel`
entry as params.yaml has it (probes included), its backend pointed at the local server, in a fresh cache, so every
call is sent: `online` with no `batch:` block, `batch` with one. Runs alternate (online, batch, online, ...) on one
warm pair of servers. Per run it prints the wall time, the calls sent online and in batches, the share that went
through the batch, and the money at the example prices (USD per million tokens; batched tokens at `--discount` of
them). Then per mode the medians, and batch's ratio to online measured in the same invocation.

Start nothing else on the machine: the two servers already share its cores.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from judge_concurrency import label_command, write_rollouts  # noqa: E402

RUNNER = ["--dtype", "float32", "--enforce-eager", "--max-model-len", "2048"]
ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_upstream(model: str, port: int, log: Path) -> subprocess.Popen:
    """`vllm serve` (the server module: the CPU build's command looks for the `vllm` distribution) on 127.0.0.1."""
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--host", "127.0.0.1"]
    command += ["--port", str(port), *RUNNER]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **ENV})
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"vllm serve exited:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return proc
        except OSError:
            time.sleep(1)
    proc.kill()
    raise SystemExit("vllm serve did not come up in 600 s")


def run_stage(work: Path, model: str, base_url: str, mode: str, index: int) -> dict:
    entry = yaml.safe_load((REPO / "params.yaml").read_text())["labelers"]["panel"]
    backend = {"kind": "openai", "model": model, "base_url": base_url, "fingerprint": "bench"}
    if mode == "batch":
        backend["batch"] = {"poll_seconds": 1.0, "max_poll_seconds": 5.0}
    entry["config"]["backend"] = backend
    run_dir = work / f"{mode}-{index}"
    command = label_command(work, run_dir, "panel", entry)
    start = time.monotonic()
    proc = subprocess.run(command, capture_output=True, text=True)
    seconds = time.monotonic() - start
    (run_dir / "stage.log").write_text(proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} run {index} failed:\n{proc.stderr[-3000:]}")
    metrics = json.loads((run_dir / "metrics.json").read_text())
    usage, batch = metrics.get("usage", {}), metrics.get("batch", {})
    return {
        "mode": mode,
        "seconds": seconds,
        "online": usage.get("requests", 0),
        "batched": batch.get("batch_requests", 0) + batch.get("batch_resubmitted", 0),
        "online_tokens": (usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)),
        "batch_tokens": (batch.get("prompt_tokens", 0), batch.get("completion_tokens", 0)),
    }


def money(run: dict, input_price: float, output_price: float, discount: float) -> float:
    online = run["online_tokens"][0] * input_price + run["online_tokens"][1] * output_price
    batched = run["batch_tokens"][0] * input_price + run["batch_tokens"][1] * output_price
    return (online + discount * batched) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="models/policy", help="the served and batched model's folder")
    parser.add_argument("--rollouts", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", default=None, help="keep the runs' folders here")
    parser.add_argument("--input-price", type=float, default=0.15, help="example USD per million input tokens")
    parser.add_argument("--output-price", type=float, default=0.60, help="example USD per million output tokens")
    parser.add_argument("--discount", type=float, default=0.5, help="the batch price as a share of online")
    args = parser.parse_args()
    from rewardmill.transforms.batch.local_server import LocalBatchServer

    model = str(Path(args.model).resolve())
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-batch-"))
    work.mkdir(parents=True, exist_ok=True)
    write_rollouts(work / "rollouts", args.rollouts)
    port = free_port()
    upstream = start_upstream(model, port, work / "upstream.log")
    runs = []
    try:
        with LocalBatchServer(model, work / "server", RUNNER, f"http://127.0.0.1:{port}/v1", env=ENV) as server:
            for index in range(args.repeats):
                for mode in ("online", "batch"):
                    run = run_stage(work, model, server.url, mode, index)
                    run["usd"] = money(run, args.input_price, args.output_price, args.discount)
                    runs.append(run)
                    share = run["batched"] / max(1, run["batched"] + run["online"])
                    print(f"{mode:6s} run {index}: {run['seconds']:6.1f} s, {run['online']} online, "
                          f"{run['batched']} batched ({share:.0%}), ${run['usd']:.6f}", flush=True)  # fmt: skip
    finally:
        upstream.terminate()
        upstream.wait(timeout=60)
    medians = {}
    for mode in ("online", "batch"):
        mine = [r for r in runs if r["mode"] == mode]
        medians[mode] = {
            "seconds": statistics.median(r["seconds"] for r in mine),
            "usd": statistics.median(r["usd"] for r in mine),
            "share": statistics.median(r["batched"] / max(1, r["batched"] + r["online"]) for r in mine),
        }
        m = medians[mode]
        print(f"{mode:6s} median of {len(mine)}: {m['seconds']:.1f} s, ${m['usd']:.6f}, {m['share']:.0%} batched")
    ratio_s = medians["batch"]["seconds"] / medians["online"]["seconds"]
    ratio_usd = medians["batch"]["usd"] / medians["online"]["usd"] if medians["online"]["usd"] else float("nan")
    print(f"batch / online: wall time {ratio_s:.2f}x, money {ratio_usd:.2f}x (at ${args.input_price}/"
          f"${args.output_price} per M tokens, batch at {args.discount:g} of that)")  # fmt: skip


if __name__ == "__main__":
    main()
