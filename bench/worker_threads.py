"""Two worker processes generating with the default model at the same time, as a stage's model DoFns do on
FnApiRunner with `beam.direct_num_workers: 2`: each with torch's default thread pool (one thread per core, what
the workers got before transforms/stage/worker_threads.py; the baseline) and with the cores shared out between them
(what they get now). Each process loads the model, then times --generations greedy generate calls on a batch of 8
prompts of --new-tokens tokens; a run's time is the slower process's. The model comes from --model, or the builtin
default materialized into a temp folder.

The figure is the median over --repeats runs of each (baseline and shared alternate); the last line is `ratio=`
shared / baseline (lower is better).

    python bench/worker_threads.py [--workers 2] [--new-tokens 32] [--generations 2] [--repeats 3] [--model DIR]
"""

import argparse
import multiprocessing
import os
import statistics
import tempfile
import time

from rewardmill.transforms.stage.worker_threads import VARIABLE, threads_per_worker, usable_cores

PROMPTS = [f"What is {i} plus {3 * i}? Answer in one sentence." for i in range(8)]


def generate(model_dir: str, threads: int, new_tokens: int, generations: int, ready, start, out) -> None:
    os.environ[VARIABLE] = str(threads)  # before torch starts its pool, as a worker inherits it
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    batch = tokenizer(PROMPTS, return_tensors="pt", padding=True)
    ready.wait()  # both loaded: the timed part overlaps
    start.wait()
    began = time.perf_counter()
    for _ in range(generations):
        model.generate(**batch, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False)
    out.put((torch.get_num_threads(), time.perf_counter() - began))


def run(model_dir: str, workers: int, threads: int, new_tokens: int, generations: int) -> float:
    """Seconds until the last of `workers` concurrent processes finished; each ran torch on `threads` threads."""
    ctx = multiprocessing.get_context("spawn")
    ready, start, out = ctx.Barrier(workers + 1), ctx.Barrier(workers + 1), ctx.Queue()
    procs = [
        ctx.Process(target=generate, args=(model_dir, threads, new_tokens, generations, ready, start, out))
        for _ in range(workers)
    ]
    for proc in procs:
        proc.start()
    ready.wait()
    start.wait()
    results = [out.get() for _ in procs]
    for proc in procs:
        proc.join()
    assert {t for t, _ in results} == {threads}, results
    return max(seconds for _, seconds in results)


def rounded(seconds: list[float]) -> list[float]:
    return [round(s, 1) for s in seconds]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--generations", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default=None, help="a model folder (default: the builtin default, materialized)")
    args = parser.parse_args()
    cores = usable_cores()
    shared_threads = threads_per_worker(args.workers, cores)
    with tempfile.TemporaryDirectory(prefix="rewardmill-bench-") as tmp:
        model_dir = args.model
        if model_dir is None:
            from rewardmill.transforms.sampling.materialize import materialize

            model_dir = tmp
            materialize("builtin:smollm2-135m-instruct", model_dir, "SmolLM2-135M-Instruct")
        work = (args.new_tokens, args.generations)
        baseline, shared = [], []
        for _ in range(args.repeats):
            baseline.append(run(model_dir, args.workers, cores, *work))
            shared.append(run(model_dir, args.workers, shared_threads, *work))
    print(f"{args.workers} workers, {cores} cores, {args.generations} x generate(8 prompts, {args.new_tokens} tokens)")
    print(f"baseline: {statistics.median(baseline):.1f} s ({cores} threads per worker), runs {rounded(baseline)}")
    print(f"shared: {statistics.median(shared):.1f} s ({shared_threads} thread(s) per worker), runs {rounded(shared)}")
    print(f"ratio={statistics.median(shared) / statistics.median(baseline):.3f}")


if __name__ == "__main__":
    main()
