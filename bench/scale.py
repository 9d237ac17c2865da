"""assemble on a Dask cluster of 2 worker processes against Beam's in-process runner (1 worker), same run, same data.

Synthetic data as bench/assemble.py writes it (--rollouts labeled rollouts, --n per prompt, two labelers), split
into --shards files per folder as the upstream stages write them with `num_shards` (a one-file input is read by one
worker whatever the runner). The in-process run and the Dask run alternate (--repeats each, medians reported),
every run is a fresh `rewardmill run assemble` subprocess, and the Dask cluster (a distributed.LocalCluster of 2
worker processes with one thread each, started here) serves every Dask run.

Printed: each side's rollouts/s (median); the driver's and each Dask worker's peak RSS (VmHWM: ru_maxrss would carry
the parent's peak over through fork and exec, so a child process writes the data and this one stays small); whether
the two outputs are byte-identical (every Parquet file and manifest); last `ratio=<Dask rollouts/s / in-process
rollouts/s>`.

    python bench/scale.py [--rollouts 1000000] [--n 8] [--shards 8] [--repeats 3]
"""

import argparse
import hashlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def synthetic():
    """bench/assemble.py's data writer and params (by path: `assemble` would also name the stage module)."""
    spec = importlib.util.spec_from_file_location("bench_assemble", REPO / "bench" / "assemble.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.synthesize, module.bench_params


def reshard(folder: Path, shards: int) -> None:
    """The one Parquet file in `folder` -> `shards` files of consecutive rows (whole prompts stay together only by
    chance; assemble does not need them to)."""
    import pyarrow.parquet as pq

    (single,) = folder.glob("*.parquet")
    table = pq.read_table(single)
    single.unlink()
    size = -(-table.num_rows // shards)
    for i in range(shards):
        pq.write_table(table.slice(i * size, size), folder / f"part-{i:05d}-of-{shards:05d}.parquet")


def digests(root: Path) -> dict[str, str]:
    files = sorted(p for p in root.rglob("*") if p.suffix == ".parquet" or p.name == "_manifest.json")
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def run_stage(root: Path, name: str, beam: dict, params: dict) -> dict:
    """One `rewardmill run assemble` in a fresh process: wall seconds and the driver's peak RSS."""
    params = {**params, "beam": beam}
    path = root / f"params-{name}.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    out = root / f"out-{name}"
    code = (
        "import json, sys, time\n"
        "from rewardmill.pipelines import assemble\n"
        f"sys.path.insert(0, {str(REPO / 'bench')!r})\n"
        "from scale import peak_mib\n"
        "start = time.perf_counter()\n"
        "assemble.main(sys.argv[1:])\n"
        "took = time.perf_counter() - start\n"
        "print(json.dumps({'seconds': took, 'rss_mib': peak_mib()}))\n"
    )
    argv = ["--rollouts", str(root / "rollouts"), "--labels", str(root / "labels"), "--out", str(out)]
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv],
        env={**os.environ, "REWARDMILL_PARAMS": str(path)},
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{name}: assemble failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["rollouts"] = json.loads((out / "pairs/_manifest.json").read_text())["counts"]["rollouts"]
    return result


def peak_mib() -> float:
    """This process's peak resident memory (VmHWM), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def worker_rss_mib(client) -> dict[str, float]:
    return {address.rsplit(":", 1)[1]: round(mib) for address, mib in sorted(client.run(peak_mib).items())}


def write_data(root: Path, rollouts: int, n: int, shards: int) -> None:
    synthesize, _ = synthetic()
    synthesize(root, rollouts, n)
    for folder in (root / "rollouts", root / "labels/math_answer", root / "labels/panel"):
        reshard(folder, shards)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rollouts", type=int, default=1_000_000)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import multiprocessing

    import dask
    from distributed import Client, LocalCluster

    _, bench_params = synthetic()
    with tempfile.TemporaryDirectory(prefix="rewardmill-scale-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        writer = multiprocessing.get_context("spawn").Process(
            target=write_data, args=(root, args.rollouts, args.n, args.shards)
        )
        writer.start()
        writer.join()
        if writer.exitcode != 0:
            raise SystemExit("writing the synthetic data failed")
        took = time.perf_counter() - start
        print(f"data: {args.rollouts} rollouts, {args.n} per prompt, 2 labelers, {args.shards} shards ({took:.1f}s)")
        with dask.config.set({"distributed.worker.daemon": False}):
            cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        with cluster, Client(cluster) as client:
            sides = {
                "fnapi": {"runner": "FnApiRunner"},
                "dask": {"runner": "DaskRunner", "dask_client_address": cluster.scheduler_address},
            }
            runs: dict[str, list[dict]] = {name: [] for name in sides}
            for i in range(args.repeats):
                order = list(sides) if i % 2 == 0 else list(reversed(sides))
                for name in order:
                    result = run_stage(root, name, sides[name], bench_params())
                    runs[name].append(result)
                    rate = result["rollouts"] / result["seconds"]
                    print(f"  run {i + 1} {name}: {result['seconds']:.1f}s, {rate:,.0f} rollouts/s", flush=True)
            workers = worker_rss_mib(client)
        identical = digests(root / "out-fnapi") == digests(root / "out-dask")
        rates = {name: statistics.median(r["rollouts"] / r["seconds"] for r in rs) for name, rs in runs.items()}
        rss = {name: max(r["rss_mib"] for r in rs) for name, rs in runs.items()}
        print(f"in-process (FnApiRunner, 1 worker): {rates['fnapi']:,.0f} rollouts/s, peak RSS {rss['fnapi']:.0f} MiB")
        print(
            f"Dask (2 worker processes): {rates['dask']:,.0f} rollouts/s, driver peak RSS {rss['dask']:.0f} MiB, "
            f"worker peak RSS (MiB, by port) {workers}"
        )
        print(f"identical_bytes={identical}")
        print(f"ratio={rates['dask'] / rates['fnapi']:.3f}")


if __name__ == "__main__":
    main()
