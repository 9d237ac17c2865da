"""Process-reward step labeling cost: exhaustive Monte Carlo (Math-Shepherd) vs binary search (OmegaPRM), same run.

Both methods label the same rollouts with the same k, and the last line is
`ratio=<binary search continuations / exhaustive continuations>` (lower = binary search is cheaper). The first-error
agreement between the two is printed above it: binary search assumes MC never rises after it falls to 0, and a
noisy pre-error step that happens to draw 0 of k successes can move either method's first error.

Default mode (model-free, a few seconds): simulated rollouts with n_steps uniform in [--steps-min, --steps-max], a
share --share-correct with no error, otherwise a uniform first-error step. A step's true MC success probability is
--p-before (plus Gaussian --noise, clipped to [0.02, 1]) before the first error and --p-after (default 0, the
monotone case binary search assumes) at and after it. Each (rollout, step) prefix's n_correct ~ Binomial(k, p) is
drawn once up front, so both methods see the same outcome for the same prefix (as the real continuation cache and
per-prefix seeds give). Both planners are driven by `run_rounds`, as `StepLabeler` drives them.

Model mode (--model and --rollouts): `StepLabeler(method="mc")` and `StepLabeler(method="binary_search")` on the same
math rollouts of a ROLLOUT_V2 folder (rollout-id order, as the steps stage samples; rollouts with fewer than 2
steps are skipped: neither method spends anything on them), sentence segmentation, each method with its own
in-memory `CachedContinuer` over a `TransformersContinuer`, so each pays its own generation. Model loading is done
before the clock starts; the wall time per method is labeling only (generation + math-verify checks). Wall times
are indicative only: MC runs first and pays one-time warm-up (first torch kernels, math-verify), and it batches all
prefixes in one round while binary search runs smaller sequential rounds; the ratio counts continuations.

    python bench/steps.py [--sim-rollouts 2000] [--k 4] [--steps-min 2] [--steps-max 12] [--noise 0.15]
    python bench/steps.py --model models/policy --rollouts data/rollouts [--max-rollouts 16] [--k 4]
"""

import argparse
import json
import math
import time
from collections import defaultdict

import numpy as np

from rewardmill.transforms.steps.search import (
    BinarySearch,
    ExhaustiveMC,
    StepDecision,
    first_error_agreement,
    run_rounds,
)

METHODS = (("exhaustive (mc)", ExhaustiveMC), ("binary search", BinarySearch))


def simulate(args) -> tuple[list[tuple[int, int]], np.ndarray]:
    """(n_steps, true first error or -1) per rollout, and n_correct per (rollout, step) drawn once: shape
    (rollouts, steps_max)."""
    rng = np.random.default_rng(args.seed)
    rollouts = []
    counts = np.zeros((args.sim_rollouts, args.steps_max), dtype=np.int64)
    for i in range(args.sim_rollouts):
        n_steps = int(rng.integers(args.steps_min, args.steps_max + 1))
        first_error = -1 if rng.random() < args.share_correct else int(rng.integers(0, n_steps))
        p = np.clip(args.p_before + rng.normal(0.0, args.noise, n_steps), 0.02, 1.0)
        if first_error >= 0:
            p[first_error:] = args.p_after
        counts[i, :n_steps] = rng.binomial(args.k, p)
        rollouts.append((n_steps, first_error))
    return rollouts, counts


def run_simulated(args, planner_cls, rollouts, counts) -> tuple[list[StepDecision], int, float]:
    planners = [planner_cls(n, first_error < 0, args.k, args.budget) for n, first_error in rollouts]
    start = time.perf_counter()
    decisions, rounds = run_rounds(planners, lambda work: [int(counts[i, step]) for i, step in work])
    return decisions, rounds, time.perf_counter() - start


def print_table(results: dict[str, dict]) -> None:
    timed = any("wall_s" in r for r in results.values())
    header = f"{'method':<16} {'rollouts':>8} {'steps':>7} {'continuations':>13} {'cont/step':>9} {'rounds':>6}"
    print(header + (f" {'wall_s':>8}" if timed else ""))
    for name, r in results.items():
        per_step = r["continuations"] / r["steps"] if r["steps"] else float("nan")
        line = (
            f"{name:<16} {r['rollouts']:>8} {r['steps']:>7} {r['continuations']:>13} {per_step:>9.3f} {r['rounds']:>6}"
        )
        print(line + (f" {r['wall_s']:>8.1f}" if timed else ""))


def print_ratio(results: dict[str, dict]) -> None:
    exhaustive, binary = (results[name]["continuations"] for name, _ in METHODS)
    print(f"ratio={binary / exhaustive:.3f}" if exhaustive else "ratio=nan")


def bench_simulated(args) -> None:
    rollouts, counts = simulate(args)
    results, decisions = {}, {}
    for name, planner_cls in METHODS:
        found, rounds, took = run_simulated(args, planner_cls, rollouts, counts)
        decisions[name] = found
        results[name] = {
            "rollouts": len(found),
            "steps": sum(n for n, _ in rollouts),
            "continuations": sum(sum(d.n_continuations) for d in found),
            "rounds": rounds,
        }
        truth = sum(d.complete and d.first_error == fe for d, (_, fe) in zip(found, rollouts, strict=True))
        print(f"{name}: {took * 1000:.0f} ms planning; first error = simulated truth for {truth}/{len(found)}")
    with_error = sum(fe >= 0 for _, fe in rollouts)
    print(
        f"simulated: {len(rollouts)} rollouts, n_steps {args.steps_min}..{args.steps_max}, "
        f"{with_error} with an error, "
        f"k={args.k}, p_before={args.p_before}, noise={args.noise}, p_after={args.p_after}, budget={args.budget}"
    )
    # Binary search's saving grows with the step count (k·log2(n) vs k·(n-1)); the table is per n_steps.
    by_n: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
    (_, ex), (_, bs) = decisions.items()
    for (n, _), d_ex, d_bs in zip(rollouts, ex, bs, strict=True):
        by_n[n][0] += 1
        by_n[n][1] += sum(d_ex.n_continuations)
        by_n[n][2] += sum(d_bs.n_continuations)
    for n in sorted(by_n):
        count, c_ex, c_bs = by_n[n]
        ratio = c_bs / c_ex if c_ex else float("nan")
        print(
            f"  n_steps={n:>2}: {count:>4} rollouts, continuations/rollout exhaustive {c_ex / count:6.2f}, "
            f"binary {c_bs / count:6.2f}, ratio {ratio:.3f}"
        )
    print_table(results)
    agree = sum(first_error_agreement(a, b) for a, b in zip(ex, bs, strict=True))
    print(f"first-error agreement: {agree}/{len(ex)} rollouts ({agree / len(ex):.3f})")
    print_ratio(results)


def select_rollouts(args) -> list[dict]:
    from rewardmill.schemas import ROLLOUT_V2
    from rewardmill.transforms.io.parquet import read_rows
    from rewardmill.transforms.steps.segment import segment

    rows = sorted(read_rows(args.rollouts, ROLLOUT_V2), key=lambda r: r["rollout_id"])
    math_rows = [r for r in rows if r.get("task") == "math" and (r.get("reference") or "").strip()]
    chosen = [r for r in math_rows if len(segment(r["completion"] or "", "sentences", None, args.max_steps)) >= 2]
    print(
        f"rollouts: {len(rows)} read, {len(math_rows)} math with a reference, {len(chosen)} with >= 2 steps, "
        f"using {min(len(chosen), args.max_rollouts)}"
    )
    return chosen[: args.max_rollouts]


def bench_model(args) -> None:
    from rewardmill.transforms.sampling.policy import model_identity
    from rewardmill.transforms.steps.continuations import (
        CachedContinuer,
        ContinuationSampling,
        TransformersContinuer,
    )
    from rewardmill.transforms.steps.labeler import SegmentConfig, StepLabeler, StepsConfig

    rollouts = select_rollouts(args)
    if not rollouts:
        raise SystemExit("no math rollouts with a reference and >= 2 steps")
    sampling = ContinuationSampling(max_new_tokens=args.max_new_tokens, batch_size=args.batch_size, seed=args.seed)
    fingerprint = model_identity(args.model)
    results, firsts = {}, {}
    for (name, _), method in zip(METHODS, ("mc", "binary_search"), strict=True):
        config = StepsConfig(
            method=method,
            k=args.k,
            budget=args.budget,
            segment=SegmentConfig(strategy="sentences", max_steps=args.max_steps),
            continuation=sampling,
        )
        inner = TransformersContinuer(args.model, sampling, args.k, args.device)
        inner.load()  # outside the clock: both methods load the same model
        continuer = CachedContinuer(inner, None, fingerprint)
        labeler = StepLabeler(f"bench-{method}", config, continuer)
        start = time.perf_counter()
        rows, rejects = labeler.label_chunk(rollouts)
        took = time.perf_counter() - start
        continuer.close()
        per_rollout = {r["rollout_id"]: r for r in rows}
        firsts[name] = {
            rid: (r["first_error_step"], json.loads(r["raw"])["complete"]) for rid, r in per_rollout.items()
        }
        results[name] = {
            "rollouts": len(per_rollout),
            "steps": len(rows),
            "continuations": sum(r["n_continuations"] for r in rows),
            "rounds": labeler.rounds,
            "wall_s": took,
        }
        reasons = sorted({reason for _, reason, _ in rejects})
        print(f"{name}: {len(rejects)} rejected {reasons}; {continuer.generated} continuations generated, {took:.1f}s")
    print(f"model: {args.model}, k={args.k}, max_new_tokens={args.max_new_tokens}, budget={args.budget}")
    print_table(results)
    (_, ex), (_, bs) = firsts.items()
    both = sorted(set(ex) & set(bs))
    agree = sum(ex[r][1] and bs[r][1] and ex[r][0] == bs[r][0] for r in both)
    share = agree / len(both) if both else math.nan
    print(f"first-error agreement: {agree}/{len(both)} rollouts labeled by both ({share:.3f})")
    for rid in both:
        if ex[rid] != bs[rid]:
            print(f"  {rid}: exhaustive first error {ex[rid][0]}, binary search {bs[rid][0]}")
    print_ratio(results)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=4, help="continuations per estimated step (params default: 4)")
    parser.add_argument("--budget", type=int, default=None, help="most continuations per rollout (default: none)")
    parser.add_argument("--seed", type=int, default=0, help="simulation RNG / continuation sampling seed")
    sim = parser.add_argument_group("simulation (default mode)")
    sim.add_argument("--sim-rollouts", type=int, default=2000)
    sim.add_argument("--steps-min", type=int, default=2)
    sim.add_argument("--steps-max", type=int, default=12)
    sim.add_argument("--share-correct", type=float, default=0.3, help="rollouts with no wrong step")
    sim.add_argument("--p-before", type=float, default=0.7, help="mean MC success probability before the error")
    sim.add_argument("--noise", type=float, default=0.15, help="std of per-step noise on --p-before")
    sim.add_argument("--p-after", type=float, default=0.0, help="MC at and after the error (> 0: non-monotone)")
    real = parser.add_argument_group("model mode (both --model and --rollouts)")
    real.add_argument("--model", help="the policy folder (models/policy)")
    real.add_argument("--rollouts", help="a ROLLOUT_V2 folder (data/rollouts)")
    real.add_argument("--max-rollouts", type=int, default=16, help="first N eligible math rollouts by rollout id")
    real.add_argument("--max-steps", type=int, default=8, help="segmentation cap (SegmentConfig default: 8)")
    real.add_argument("--max-new-tokens", type=int, default=64, help="per continuation (ContinuationSampling: 64)")
    real.add_argument("--batch-size", type=int, default=8, help="prefixes per generate call")
    real.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    if (args.model is None) != (args.rollouts is None):
        parser.error("model mode needs both --model and --rollouts")
    if not 1 <= args.steps_min <= args.steps_max:
        parser.error("need 1 <= --steps-min <= --steps-max")
    if args.model:
        bench_model(args)
    else:
        bench_simulated(args)


if __name__ == "__main__":
    main()
