"""assemble throughput and peak memory on synthetic labeled rollouts, against a row-at-a-time baseline, same run.

Synthetic data: --rollouts rollouts (--n per prompt; prompt texts of random words so near-duplicate detection has
real work and few hits), each labeled by a rule verifier gate (math_answer: 90 % decided) and a model judge (panel),
written as Parquet like the upstream stages write them. Three measurements, each in a fresh subprocess so its peak
RSS (ru_maxrss) is its own:

- core: `assemble_bucket` (polars) on all rollouts at once, in one process: the work per bucket without Beam.
- stage: `rewardmill run assemble` end to end (Beam FnApiRunner, prompt filters incl. MinHash, all outputs written),
  --repeats times into fresh folders; the line `stage: median ...k rollouts/s (runs ...), peak ... GiB` gives the
  median run and the highest peak of them.
- baseline: the same reward + best-vs-worst pairs computed row at a time in plain Python (a dict per label, a loop
  per prompt: how the stage worked before the polars core), on --baseline-rollouts rollouts.

The last line is `ratio=<core rollouts/s / baseline rollouts/s>`.

    python bench/assemble.py [--rollouts 1000000] [--n 8] [--baseline-rollouts 100000] [--repeats 3]
"""

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from rewardmill.schemas import LABEL_V1, ROLLOUT_V2

WORDS = [f"w{i}" for i in range(5000)]
REPO = Path(__file__).resolve().parents[1]


def synthesize(root: Path, n_rollouts: int, n: int, seed: int = 0) -> None:
    """rollouts/ and labels/{math_answer,panel}/ under root, columnar (fast to write a million rows)."""
    rng = random.Random(seed)
    n_prompts = n_rollouts // n
    prompt_ids = [f"p{i:08d}" for i in range(n_prompts)]
    texts = [" ".join(rng.choices(WORDS, k=20)) for _ in range(n_prompts)]
    rollout_ids, pids, messages, splits, completions, n_tokens, finish = [], [], [], [], [], [], []
    for i, pid in enumerate(prompt_ids):
        msg = [{"role": "user", "content": texts[i]}]
        split = "test" if i % 10 == 0 else "train"
        for k in range(n):
            rollout_ids.append(f"{pid}-{k}")
            pids.append(pid)
            messages.append(msg)
            splits.append(split)
            completions.append(f"answer {k} to {pid}")
            n_tokens.append(rng.randint(5, 500))
            finish.append("length" if rng.random() < 0.05 else "stop")
    size = len(rollout_ids)
    rollouts = pa.table(
        {
            "rollout_id": rollout_ids,
            "prompt_id": pids,
            "task": ["math"] * size,
            "messages": messages,
            "reference": ["42"] * size,
            "tests": pa.nulls(size, pa.string()),
            "constraints": pa.nulls(size, pa.string()),
            "rubric": pa.nulls(size, ROLLOUT_V2.field("rubric").type),
            "split": splits,
            "sample_index": [int(r.rsplit("-", 1)[1]) for r in rollout_ids],
            "completion": completions,
            "n_tokens": n_tokens,
            "finish_reason": finish,
            "logprob_sum": pa.nulls(size, pa.float64()),
            "policy": [{"name": "m", "fingerprint": "f", "backend": "synthetic"}] * size,
            "sampling": ["{}"] * size,
            "seed": list(range(size)),
        }
    ).cast(ROLLOUT_V2)
    (root / "rollouts").mkdir(parents=True)
    pq.write_table(rollouts, root / "rollouts/part-00000-of-00001.parquet")
    skill = [rng.random() for _ in prompt_ids]
    decided = [rng.random() < 0.9 for _ in rollout_ids]
    ok = [rng.random() < skill[i // n] for i in range(size)]
    for labeler, version in (("math_answer", "2"), ("panel", "1")):
        if labeler == "math_answer":
            score = [float(o) if d else None for o, d in zip(ok, decided, strict=True)]
            verdict = [("correct" if o else "incorrect") if d else "abstain" for o, d in zip(ok, decided, strict=True)]
            confidence = [1.0 if d else 0.0 for d in decided]
        else:
            score = [round(rng.random(), 2) for _ in range(size)]
            verdict = ["abstain"] * size
            confidence = [rng.choice((0.3, 0.7, 1.0)) for _ in range(size)]
        labels = pa.table(
            {
                "rollout_id": rollout_ids,
                "prompt_id": pids,
                "labeler": [labeler] * size,
                "labeler_version": [version] * size,
                "aspect": ["correctness"] * size,
                "score": score,
                "confidence": confidence,
                "verdict": verdict,
                "rationale": pa.nulls(size, pa.string()),
                "raw": pa.nulls(size, pa.string()),
            }
        ).cast(LABEL_V1)
        (root / "labels" / labeler).mkdir(parents=True)
        pq.write_table(labels, root / "labels" / labeler / "part-00000-of-00001.parquet")


def bench_params() -> dict:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["labelers"] = {k: params["labelers"][k] for k in ("math_answer", "panel")}
    params["assemble"]["aggregate"].update(gates=["math_answer"], weights={"panel": 1.0})
    params["assemble"]["filters"]["decontaminate"]["files"] = []
    params.pop("steps", None)
    return params


def core(root: Path) -> dict:
    from rewardmill.pipelines.assemble import AssembleConfig
    from rewardmill.transforms.aggregate.bucket import assemble_bucket
    from rewardmill.transforms.config import from_dict

    cfg = from_dict(AssembleConfig, bench_params()["assemble"], "assemble").core()
    rollouts = pq.read_table(root / "rollouts")
    labels = pa.concat_tables(pq.read_table(root / "labels" / n) for n in ("math_answer", "panel"))
    start = time.perf_counter()
    result = assemble_bucket(rollouts, labels, {}, cfg)
    took = time.perf_counter() - start
    return {"seconds": took, "rollouts": rollouts.num_rows, "pairs": result.tables["pairs"].num_rows}


def core_pairs(root: Path) -> dict:
    """The baseline's work, on the polars core: reward per rollout, then best-vs-worst pairs (ids only)."""
    import polars as pl

    from rewardmill.transforms.aggregate.bucket import LABEL_COLUMNS
    from rewardmill.transforms.aggregate.reward import AggregateConfig, score_rollouts
    from rewardmill.transforms.aggregate.status import flags_frame
    from rewardmill.transforms.pairing.strategies import PairsConfig, choose_pairs

    rollouts = pq.read_table(root / "rollouts", columns=["rollout_id", "prompt_id", "n_tokens"])
    names = ("math_answer", "panel")
    labels = pa.concat_tables(pq.read_table(root / "labels" / n, columns=list(LABEL_COLUMNS)) for n in names)
    start = time.perf_counter()
    ro, lab = pl.from_arrow(rollouts), pl.from_arrow(labels)
    scored = score_rollouts(ro, lab, AggregateConfig(gates=("math_answer",), weights={"panel": 1.0}))
    kept = scored.filter(pl.col("reward").is_not_null()).with_columns(pl.col("correct"))
    prompts = scored.select("prompt_id").unique().join(flags_frame({}), on="prompt_id", how="left")
    picked, _, _ = choose_pairs(kept, prompts, PairsConfig(strategies=("best_vs_worst",)))
    took = time.perf_counter() - start
    return {"seconds": took, "rollouts": rollouts.num_rows, "pairs": picked.height}


def stage(root: Path) -> dict:
    from rewardmill.pipelines import assemble

    (root / "params.yaml").write_text(yaml.safe_dump(bench_params()))
    os.environ["REWARDMILL_PARAMS"] = str(root / "params.yaml")
    out = Path(tempfile.mkdtemp(prefix="datasets-", dir=root)) / "datasets"  # a fresh folder for every repeat
    start = time.perf_counter()
    assemble.main(["--rollouts", str(root / "rollouts"), "--labels", str(root / "labels"), "--out", str(out)])
    took = time.perf_counter() - start
    manifest = json.loads((out / "pairs/_manifest.json").read_text())
    shutil.rmtree(out.parent)  # untimed
    return {"seconds": took, "rollouts": manifest["counts"]["rollouts"], "pairs": manifest["rows"]}


def baseline(root: Path, limit: int) -> dict:
    """Reward (gate decides, judge ranks) and best-vs-worst pairs, a Python dict per row and a loop per prompt."""
    rollouts = pq.read_table(root / "rollouts", columns=["rollout_id", "prompt_id", "n_tokens"]).slice(0, limit)
    columns = ["rollout_id", "labeler", "score", "confidence", "verdict"]
    tables = [
        pq.read_table(root / "labels" / name, columns=columns).slice(0, limit) for name in ("math_answer", "panel")
    ]
    start = time.perf_counter()  # from Arrow, like the core: the dict per row is part of the row-at-a-time cost
    rows = rollouts.to_pylist()
    labels = [row for table in tables for row in table.to_pylist()]
    by_rollout: dict[str, list[dict]] = {}
    for lab in labels:
        by_rollout.setdefault(lab["rollout_id"], []).append(lab)
    by_prompt: dict[str, list[tuple[float, str]]] = {}
    for row in rows:
        labs = by_rollout.get(row["rollout_id"], [])
        gate = next(
            (x for x in labs if x["labeler"] == "math_answer" and x["verdict"] in ("correct", "incorrect")), None
        )
        judge = [x["score"] for x in labs if x["labeler"] == "panel" and x["score"] is not None]
        model = sum(judge) / len(judge) if judge else None
        if gate is not None:
            correct = float(gate["verdict"] == "correct")
            reward = 0.75 * correct + 0.25 * (model if model is not None else correct)
        else:
            reward = model
        if reward is not None:
            by_prompt.setdefault(row["prompt_id"], []).append((reward, row["rollout_id"]))
    pairs = 0
    for scored in by_prompt.values():
        best = min(scored, key=lambda x: (-x[0], x[1]))
        worst = min(scored, key=lambda x: (x[0], x[1]))
        pairs += best[0] > worst[0]
    took = time.perf_counter() - start
    return {"seconds": took, "rollouts": len(rows), "pairs": pairs}


def measure(mode: str, root: Path, limit: int) -> dict:
    """Run one mode in a fresh interpreter (this script with --mode); its result plus its own peak RSS."""
    cmd = [sys.executable, __file__, "--mode", mode, "--root", str(root), "--baseline-rollouts", str(limit)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_mode(mode: str, root: Path, limit: int) -> None:
    modes = {"core": core, "core_pairs": core_pairs, "stage": stage}
    result = modes[mode](root) if mode != "baseline" else baseline(root, limit)
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def rate(result: dict) -> float:
    return result["rollouts"] / result["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rollouts", type=int, default=1_000_000)
    parser.add_argument("--n", type=int, default=8, help="rollouts per prompt")
    parser.add_argument("--baseline-rollouts", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3, help="stage runs; the median is reported")
    parser.add_argument("--skip-stage", action="store_true", help="core and baseline only")
    parser.add_argument(
        "--mode", choices=("core", "core_pairs", "stage", "baseline"), help=argparse.SUPPRESS
    )  # one measurement
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode:
        run_mode(args.mode, args.root, args.baseline_rollouts)
        return
    with tempfile.TemporaryDirectory(prefix="bench-assemble-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        synthesize(root, args.rollouts, args.n)
        print(f"synthesized {args.rollouts} rollouts x 2 labelers in {time.perf_counter() - start:.1f}s", flush=True)
        results = {"core": measure("core", root, 0)}
        stages = [] if args.skip_stage else [measure("stage", root, 0) for _ in range(args.repeats)]
        if stages:  # the median run by rate (the higher of two middle ones); the highest peak of all runs
            results["stage"] = {**sorted(stages, key=rate)[len(stages) // 2]}
            results["stage"]["peak_rss_mib"] = max(r["peak_rss_mib"] for r in stages)
        results["core_pairs"] = measure("core_pairs", root, 0)
        results["baseline"] = measure("baseline", root, args.baseline_rollouts)
    labels = {
        "core": "all outputs, polars (assemble_bucket)",
        "stage": "rewardmill run assemble (Beam)",
        "core_pairs": "reward + best_vs_worst, polars",
        "baseline": "reward + best_vs_worst, row at a time",
    }
    for name, r in results.items():
        print(f"{labels[name]:38s} {r['rollouts']:>8d} rollouts {r['seconds']:7.2f}s {rate(r):>8.0f} rollouts/s "
              f"peak RSS {r['peak_rss_mib']:5.0f} MiB  pairs {r['pairs']}")  # fmt: skip
    if stages:
        runs = ", ".join(f"{rate(r) / 1000:.0f}k" for r in stages)
        median = statistics.median_high(rate(r) for r in stages)  # the run in the table above
        peak = max(r["peak_rss_mib"] for r in stages) / 1024
        print(f"stage: median {median / 1000:.0f}k rollouts/s (runs {runs}), peak {peak:.2f} GiB")
    pairs_rate, base_rate = rate(results["core_pairs"]), rate(results["baseline"])
    print(f"ratio={pairs_rate / base_rate:.2f}  (the same work: polars core / row at a time; higher = polars faster)")


if __name__ == "__main__":
    main()
