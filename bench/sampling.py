"""Rollout-stage generation throughput vs a plain `model.generate` loop, measured in the same run.

Both sides use the same materialized model, prompts, batch size, n, max_new_tokens and sampling settings
(temperature 0.8, top_p 0.95, top_k; the raw loop passes top_k explicitly, since `generate` otherwise applies
top_k=50), and both include model loading, in one process with the same torch threads; an untimed warm-up first
does the imports either side does once per process. The pipeline side is the real rollouts stage (Beam on
FnApiRunner, RunInference, per-row seeded sampling, logprob accounting, Parquet writing, no cache). Runs alternate
(baseline, pipeline, baseline, ...) so a noisy neighbour hurts both sides alike; every run is printed with the CPU
seconds other processes used meanwhile (its noise), and the ratio is of the two sides' median tok/s. The sides draw
different random tokens, so their token counts differ a little. The last line is `ratio=<pipeline/raw>`.

    python bench/sampling.py [--prompts 16] [--n 4] [--batch-size 8] [--max-new-tokens 64] [--top-k 0] [--repeats 3]
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from rewardmill.pipelines.rollouts import RolloutsConfig, build
from rewardmill.schemas import PROMPT_V1
from rewardmill.transforms.io.parquet import read_rows, rows_to_table, write_table
from rewardmill.transforms.sampling.materialize import materialize
from rewardmill.transforms.sampling.transformers_generate import chat_texts, load_policy
from rewardmill.transforms.sources.arithmetic import generate
from rewardmill.transforms.sources.normalize import normalize
from rewardmill.transforms.stage.runner import BeamConfig, run_pipeline


def prompt_rows(count: int) -> list[dict]:
    return [normalize(r, "bench", "math", 0.0) for r in generate(count, seed=0, levels=(1, 2, 3, 4))]


def raw_loop(model_dir: str, prompts: list[dict], cfg: RolloutsConfig) -> tuple[int, float]:
    """Plain transformers: load, then generate(do_sample=True, num_return_sequences=n) per batch."""
    start = time.perf_counter()
    policy = load_policy(model_dir)
    tok, model = policy.tokenizer, policy.model
    ordered = sorted(prompts, key=lambda p: (sum(len(m["content"]) for m in p["messages"]), p["prompt_id"]))
    tokens = 0
    torch.manual_seed(cfg.seed)
    for i in range(0, len(ordered), cfg.batch_size):
        batch = ordered[i : i + cfg.batch_size]
        enc = tok(
            chat_texts(tok, [p["messages"] for p in batch]),
            return_tensors="pt",
            padding=True,
            add_special_tokens=False,
        )
        with torch.inference_mode():
            out = model.generate(
                **enc,
                do_sample=True,
                temperature=cfg.temperature,
                top_p=cfg.top_p,
                top_k=cfg.top_k,  # 0 = off, as in the stage; left out, generate applies top_k=50
                max_new_tokens=cfg.max_new_tokens,
                num_return_sequences=cfg.n,
                pad_token_id=tok.pad_token_id,
                eos_token_id=policy.eos_token_ids,
            )
        generated = out[:, enc["input_ids"].shape[1] :]
        for row in generated.tolist():  # tokens up to and including the first eos, as the pipeline counts
            n = len(row)
            for j, t in enumerate(row):
                if t in policy.eos_token_ids:
                    n = j + 1
                    break
            tokens += n
    return tokens, time.perf_counter() - start


def warm_up(model_dir: str) -> None:
    """One-off imports (transformers' model classes, Beam's runner) out of the first timed run of either side."""
    import apache_beam as beam

    load_policy(model_dir)
    run_pipeline(lambda p: p | beam.Create([0]) | beam.Map(abs), BeamConfig())


def pipeline(model_dir: str, prompts_dir: Path, cfg: RolloutsConfig, total: int, work: Path) -> tuple[int, float]:
    out = work / "rollouts"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    members = cfg.pool(model_dir)
    start = time.perf_counter()
    run_pipeline(lambda p: build(p, cfg, str(prompts_dir), members, total, str(out)), BeamConfig())
    took = time.perf_counter() - start
    return sum(r["n_tokens"] for r in read_rows(str(out))), took


def busy_seconds() -> float | None:
    """CPU seconds used by every process since boot (Linux's /proc/stat: all but idle and iowait), else None."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def timed(run) -> tuple[int, float, float | None]:
    """run()'s (tokens, seconds), plus the CPU seconds other processes used meanwhile (None where unknown): a run
    they took much from is a noisy one."""
    busy, own = busy_seconds(), time.process_time()
    tokens, took = run()
    own = time.process_time() - own
    after = busy_seconds()
    return tokens, took, None if busy is None or after is None else max(0.0, after - busy - own)


def bench_inputs(work: Path, model: str | None, count: int) -> tuple[str, list[dict], Path]:
    """(model folder, prompt rows, prompts folder) under `work`: `model`, or the builtin default materialized; the
    arithmetic prompts written as the prompts stage writes them."""
    model_dir = model
    if model_dir is None:
        model_dir = str(work / "policy")
        materialize("builtin:smollm2-135m-instruct", model_dir, "SmolLM2-135M-Instruct")
    prompts = prompt_rows(count)
    prompts_dir = work / "prompts"
    prompts_dir.mkdir()
    write_table(rows_to_table(prompts, PROMPT_V1), str(prompts_dir / "part-00000-of-00001.parquet"))
    return model_dir, prompts, prompts_dir


def alternate(sides: list[tuple[str, object]], repeats: int) -> dict[str, list[float]]:
    """Each side's run, alternating, `repeats` times: side name -> tok/s per run; every run printed with its noise."""
    rates: dict[str, list[float]] = {name: [] for name, _ in sides}
    for r in range(repeats):
        for side, run in sides:
            tokens, took, others = timed(run)
            rates[side].append(tokens / took)
            noise = "" if others is None else f" (other processes: {others:.0f} CPU-s)"
            print(f"repeat {r}: {side}: {tokens} tokens in {took:.1f}s = {tokens / took:.1f} tok/s{noise}")
            sys.stdout.flush()
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="an HF folder; default: materialize the built-in default model")
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--top-k", type=int, default=0, help="0 = off (params.yaml's default); top_p is 0.95")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rewardmill-bench-"))
    try:
        model_dir, prompts, prompts_dir = bench_inputs(work, args.model, args.prompts)
        cfg = RolloutsConfig(
            n=args.n,
            temperature=0.8,
            top_p=0.95,
            top_k=args.top_k,
            max_new_tokens=args.max_new_tokens,
            seed=1,
            batch_size=args.batch_size,
        )
        warm_up(model_dir)
        print(f"torch threads: {torch.get_num_threads()}")
        sides = [
            ("raw generate loop", lambda: raw_loop(model_dir, prompts, cfg)),
            ("rollouts pipeline", lambda: pipeline(model_dir, prompts_dir, cfg, len(prompts), work)),
        ]
        rates = alternate(sides, args.repeats)
        raw, pipe = statistics.median(rates["raw generate loop"]), statistics.median(rates["rollouts pipeline"])
        print(
            f"median of {args.repeats}: pipeline {pipe:.1f} tok/s, raw {raw:.1f} tok/s "
            f"({args.prompts} prompts, n={args.n}, batch={args.batch_size}, max_new_tokens={args.max_new_tokens}, "
            f"top_k={args.top_k})"
        )
        print(f"ratio={pipe / raw:.3f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
