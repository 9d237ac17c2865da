"""The framework's share of `dvc repro`: wall time outside model and verifier calls, per stage and in total.

Runs the demo DAG (the repo's params.yaml; `--small` shrinks its counts to a few minutes) in a scratch DVC project
with REWARDMILL_TIMINGS set, so every stage process records (transforms/io/timings.py) the wall time spent inside
model and verifier work (sampling, labelers with their judge calls, step labelers with their continuations, model
loading, reward-model training and scoring) and splits the rest into start-up (imports, params, planning), Parquet
reading and writing, Great Expectations (the validate stage's suites and Data Docs), the rest of the Beam pipeline
(bundles, shuffles, serialization) and what follows it (manifests, renames, metrics). DVC's own time is the repro's
wall time less the stage processes'.

Each repeat is `dvc repro --force` with rewardmill's caches (params cache.root) removed, so every model call happens
again. Figures are medians over --repeats. The last line is `share=`: the median over the repros of each one's
time outside model and verifier calls over its wall time; the target is <= 0.10.

    python bench/overhead.py [--repeats 3] [--small] [--work DIR]
"""

import argparse
import json
import os
import shutil
import statistics
import time
from collections import defaultdict
from pathlib import Path

from dvc_project import BIN, make_project, repo_params, run

PARTS = {
    "startup": "stage start-up (interpreter, imports, params, planning)",
    "parquet": "Parquet reading and writing",
    "validation": "Great Expectations suites and Data Docs (validate)",
    "pipeline": "Beam pipeline around the calls (bundles, shuffles, encoding)",
    "other": "after the pipeline (manifests, renames, metrics)",
}


def small(params: dict) -> dict:
    """The demo's structure with fewer prompts, samples and tokens (minutes instead of a quarter hour)."""
    arithmetic, code = params["prompts"]["sources"]
    arithmetic.update(count=8)
    code.update(limit=4)
    params["rollouts"].update(n=3, max_new_tokens=32)
    for entry in params.get("steps", {}).values():
        entry["max_rollouts"] = 4
    params["evaluate"]["train"].update(max_steps=2)
    return params


def one_repro(root: Path, threads: int, record: Path) -> tuple[float, list[dict]]:
    shutil.rmtree(root / ".rewardmill", ignore_errors=True)  # params cache.root: every model call runs again
    record.unlink(missing_ok=True)
    wall = run([BIN / "dvc", "repro", "--force"], root, threads, {"REWARDMILL_TIMINGS": str(record)})
    return wall, [json.loads(line) for line in record.read_text().splitlines()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--small", action="store_true", help="fewer prompts and tokens, same DAG")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--work", type=Path, default=Path.home() / ".cache/rewardmill/bench/overhead")
    args = ap.parse_args()
    params = repo_params()
    params = small(params) if args.small else params
    root = make_project(args.work.resolve() / "project", params, args.threads, ("data/benchmarks",))

    walls: list[float] = []
    shares: list[float] = []  # each repro's own outside share: medians of its parts would mix repros
    per_stage: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    dvc_own: list[float] = []
    for repeat in range(args.repeats):
        start = time.perf_counter()
        wall, records = one_repro(root, args.threads, args.work.resolve() / "timings.jsonl")
        walls.append(wall)
        dvc_own.append(wall - sum(r["wall"] for r in records))
        for r in records:
            stage = per_stage[r["stage"]]
            stage["wall"].append(r["wall"])
            for part, seconds in r["split"].items():
                stage[part].append(seconds)
        inside = sum(r["split"].get("inside", 0.0) for r in records)
        shares.append((wall - inside) / wall)
        print(
            f"run {repeat + 1}/{args.repeats}: repro {wall:.1f} s, inside model/verifier calls {inside:.1f} s, "
            f"{len(records)} stage processes ({time.perf_counter() - start:.0f} s)",
            flush=True,
        )

    def med(stage: str, part: str) -> float:
        values = per_stage[stage].get(part, [])
        return statistics.median(values + [0.0] * (args.repeats - len(values)))

    print(f"{'stage':24s} {'wall s':>8s} {'inside s':>9s} {'outside s':>10s} {'outside':>8s}  largest outside part")
    for stage in sorted(per_stage):
        wall, inside = med(stage, "wall"), med(stage, "inside")
        parts = {p: med(stage, p) for p in PARTS}
        top = max(parts, key=parts.get)
        print(
            f"{stage:24s} {wall:8.1f} {inside:9.1f} {wall - inside:10.1f} {(wall - inside) / wall:8.1%}  "
            f"{top} {parts[top]:.1f} s"
        )
    repro = statistics.median(walls)
    inside_total = sum(med(s, "inside") for s in per_stage)
    costs = {p: sum(med(s, p) for s in per_stage) for p in PARTS}
    costs["dvc"] = statistics.median(dvc_own)
    names = {**PARTS, "dvc": "DVC itself (hashing, lock file, cache, stage processes' launch)"}
    print(
        f"repro: median {repro:.1f} s (runs {' '.join(f'{w:.1f}' for w in walls)}); inside model and verifier "
        f"calls {inside_total:.1f} s; outside {repro - inside_total:.1f} s"
    )
    print("largest costs outside model and verifier calls (summed over stages, medians):")
    for rank, (part, seconds) in enumerate(sorted(costs.items(), key=lambda kv: -kv[1])[:3], start=1):
        print(f"  {rank}. {names[part]}: {seconds:.1f} s ({seconds / repro:.1%} of the repro)")
    print(f"share per repro: {' '.join(f'{x:.3f}' for x in shares)} (the median below)")
    print(f"share={statistics.median(shares):.3f}")


if __name__ == "__main__":
    main()
