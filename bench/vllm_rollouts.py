"""The rollouts stage on vLLM vs a plain `LLM.generate` over the same prompts and settings, in the same run; and
vLLM vs transformers tokens/s on this machine.

Fairness rules:
- One engine serves both vLLM sides (the stage's handler gets the process's engine, `vllm_engine.engine`), started
  once and timed on its own line: neither side pays it, and a real stage pays it once as a plain script would.
- Same prompts (arithmetic word problems), n, temperature, top_p, max_new_tokens and per-request seeds on both
  sides. The baseline is what a vLLM user writes: chat-templated prompts, one `LLM.generate` call with one
  `SamplingParams(n=..., seed=..., logprobs=0)` per prompt. The stage runs whole: Beam (FnApiRunner), reading the
  prompts, deterministic batches of `--batch-size` prompts, RunInference, rollout rows, sorted Parquet.
- No cache on the stage side; token counts are checked equal on both vLLM sides (same samples).
- One untimed warm-up generate first (the engine's first call is slower); then runs alternate (baseline, stage,
  baseline, ...) and medians are compared, so a noisy neighbour hurts both alike.
- The transformers side is the same stage with `backend: transformers` (its model load included, as in
  bench/sampling.py), on the same prompts; vLLM's CPU worker computes on one thread (it keeps a core for its
  front end), torch on all cores.

The last line is `ratio=<stage tok/s / plain LLM.generate tok/s>` (medians).

(Not named vllm.py: run as a script, that name would shadow the vllm package.)

    python bench/vllm_rollouts.py [--prompts 24] [--n 4] [--max-new-tokens 32] [--batch-size 24] [--repeats 3]
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")


def main() -> None:
    from sampling import pipeline, prompt_rows  # bench/sampling.py: the same prompts and the same stage runner

    from rewardmill.pipelines.rollouts import RolloutsConfig
    from rewardmill.schemas import PROMPT_V1
    from rewardmill.transforms.io.parquet import rows_to_table, write_table
    from rewardmill.transforms.sampling.materialize import materialize
    from rewardmill.transforms.sampling.transformers_generate import chat_texts
    from rewardmill.transforms.sampling.vllm_backend import vllm_sampling_kwargs
    from rewardmill.transforms.sampling.vllm_engine import engine, shutdown_engines

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="an HF folder; default: materialize the built-in default model")
    parser.add_argument("--prompts", type=int, default=24)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=24, help="the stage's prompts per generate call")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-transformers", action="store_true")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="rewardmill-bench-vllm-"))
    try:
        model_dir = args.model
        if model_dir is None:
            model_dir = str(work / "policy")
            materialize("builtin:smollm2-135m-instruct", model_dir, "SmolLM2-135M-Instruct")
        prompts = prompt_rows(args.prompts)
        prompts_dir = work / "prompts"
        prompts_dir.mkdir()
        write_table(rows_to_table(prompts, PROMPT_V1), str(prompts_dir / "part-00000-of-00001.parquet"))
        settings = dict(n=args.n, temperature=0.8, top_p=0.95, max_new_tokens=args.max_new_tokens, seed=1)

        start = time.perf_counter()
        llm = engine(model_dir)
        print(f"vllm engine start: {time.perf_counter() - start:.1f}s (once; both vLLM sides share it)")

        def plain() -> tuple[int, float]:
            from vllm import SamplingParams

            cfg = RolloutsConfig(**settings)
            begin = time.perf_counter()
            texts = chat_texts(llm.get_tokenizer(), [p["messages"] for p in prompts])
            params = [SamplingParams(**vllm_sampling_kwargs(cfg.sampling(), p["prompt_id"])) for p in prompts]
            outputs = llm.generate(texts, params, use_tqdm=False)
            took = time.perf_counter() - begin
            return sum(len(o.token_ids) for out in outputs for o in out.outputs), took

        def stage(backend: str) -> tuple[int, float]:
            cfg = RolloutsConfig(backend=backend, batch_size=args.batch_size, **settings)
            return pipeline(model_dir, prompts_dir, cfg, len(prompts), work)

        rates = {"plain": [], "stage": [], "transformers": []}
        plain()  # warm-up, untimed: the engine's first generate is slower, and the baseline would always pay it
        for r in range(args.repeats):
            for name, run in (("plain", plain), ("stage", lambda: stage("vllm"))):
                tokens, took = run()
                rates[name].append(tokens / took)
                print(f"repeat {r}: {name:>5} vLLM: {tokens} tokens in {took:.1f}s = {tokens / took:.1f} tok/s")
                sys.stdout.flush()
        if not args.skip_transformers:
            for r in range(args.repeats):
                tokens, took = stage("transformers")
                rates["transformers"].append(tokens / took)
                print(
                    f"repeat {r}: rollouts stage on transformers: {tokens} tokens in {took:.1f}s = {tokens / took:.1f}"
                )
                sys.stdout.flush()
        median = {k: statistics.median(v) for k, v in rates.items() if v}
        print(
            f"medians over {args.repeats} runs ({args.prompts} prompts, n={args.n}, max_new_tokens="
            f"{args.max_new_tokens}, stage batch {args.batch_size}): plain LLM.generate {median['plain']:.1f} tok/s, "
            f"stage on vLLM {median['stage']:.1f} tok/s"
        )
        if "transformers" in median:
            print(
                f"vLLM vs transformers on this machine (the rollouts stage on each): {median['stage']:.1f} vs "
                f"{median['transformers']:.1f} tok/s = {median['stage'] / median['transformers']:.2f}x"
            )
        print(f"ratio={median['stage'] / median['plain']:.3f}")
    finally:
        shutdown_engines()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":  # vLLM spawns its engine process: construct it only under this guard
    main()
