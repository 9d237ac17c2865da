"""The rollouts stage running an environment's episodes vs a plain loop that runs the same episodes itself, measured
in the same run.

Both sides use the same materialized model, prompts, n, turns, max_new_tokens, sampling settings and the same
environment object (`feedback` by default: math-verify replies "not correct, try again" up to --max-turns attempts;
`--environment python_tool` for the sandboxed Python tool). The plain loop is what a user would write: for each batch
of prompts, round by round, one batched `generate` over every live conversation (the stage batches the same way),
then the environment's `parse` and `step`; no Beam, no seeding per turn, no cache, no accounting, no Parquet. The
pipeline side is the real rollouts stage (Beam on FnApiRunner, per-turn seeded sampling, special strings broken in
the turns, the turn cache off, ROLLOUT_V3 rows and the episodes summary). Both include model loading; an untimed
warm-up does the per-process imports first. Runs alternate, each printed with the CPU seconds other processes used
meanwhile (its noise). The sides sample different tokens, so their episodes differ; the figure is of throughput: the
ratio of the two sides' median assistant tokens per second. The last line is `ratio=<pipeline/plain>`.

    python bench/environment.py [--prompts 16] [--n 2] [--batch-size 8] [--max-new-tokens 48] [--max-turns 3]
        [--environment feedback] [--repeats 3]
"""

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import torch
from sampling import alternate, bench_inputs, pipeline, warm_up

from rewardmill.pipelines.rollouts import RolloutsConfig
from rewardmill.transforms.environments import get_environment_class
from rewardmill.transforms.environments.contract import ParsingEnvironment, PromptingEnvironment, has_hook
from rewardmill.transforms.environments.params import EnvironmentParams
from rewardmill.transforms.sampling.transformers_generate import load_policy


def plain_loop(model_dir: str, prompts: list[dict], cfg: RolloutsConfig) -> tuple[int, float]:
    """Load the model and the environment, then run every episode: per batch of prompts, one generate per round over
    the live conversations, then parse and step each. -> (assistant tokens, seconds)."""
    start = time.perf_counter()
    policy = load_policy(model_dir)
    tok, model = policy.tokenizer, policy.model
    cls, config = cfg.environment.resolve()
    env = cls(config)
    system = env.system_message() if has_hook(env, PromptingEnvironment) else None
    parse = (
        env.parse if has_hook(env, ParsingEnvironment) else lambda text, turn: {"role": "assistant", "content": text}
    )
    tokens = 0
    torch.manual_seed(cfg.seed)
    try:
        for i in range(0, len(prompts), cfg.batch_size):
            live = []
            for prompt in prompts[i : i + cfg.batch_size]:
                for _ in range(cfg.n):
                    messages = ([system] if system else []) + list(prompt["messages"])
                    live.append({"messages": messages, "state": env.reset(prompt), "turn": 0})
            for _ in range(cfg.environment.max_turns):
                if not live:
                    break
                texts = [
                    tok.apply_chat_template(e["messages"], add_generation_prompt=True, tokenize=False) for e in live
                ]
                enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
                with torch.inference_mode():
                    out = model.generate(
                        **enc,
                        do_sample=True,
                        temperature=cfg.temperature,
                        top_p=cfg.top_p,
                        top_k=cfg.top_k,
                        max_new_tokens=cfg.max_new_tokens,
                        pad_token_id=tok.pad_token_id,
                        eos_token_id=policy.eos_token_ids,
                    )
                still = []
                for episode, row in zip(live, out[:, enc["input_ids"].shape[1] :].tolist(), strict=True):
                    n = next((j + 1 for j, t in enumerate(row) if t in policy.eos_token_ids), len(row))
                    tokens += n
                    text = tok.decode(row[:n], skip_special_tokens=True).strip()
                    message = parse(text, episode["turn"])
                    episode["state"], result = env.step(episode["state"], message)
                    episode["messages"] += [{"role": "assistant", "content": message.get("content") or ""}]
                    episode["messages"] += list(result.messages)
                    episode["turn"] += 1
                    if not result.done:
                        still.append(episode)
                live = still
    finally:
        if hasattr(env, "close"):
            env.close()
    return tokens, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="an HF folder; default: materialize the built-in default model")
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--n", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--max-turns", type=int, default=3)
    parser.add_argument("--environment", default="feedback", help="a registry key: feedback | python_tool")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    get_environment_class(args.environment)  # an unknown name fails before any work
    work = Path(tempfile.mkdtemp(prefix="rewardmill-bench-"))
    try:
        model_dir, prompts, prompts_dir = bench_inputs(work, args.model, args.prompts)
        config = {"max_attempts": args.max_turns} if args.environment == "feedback" else {}
        cfg = RolloutsConfig(
            n=args.n,
            temperature=0.8,
            top_p=0.95,
            top_k=0,
            max_new_tokens=args.max_new_tokens,
            seed=1,
            batch_size=args.batch_size,
            environment=EnvironmentParams(args.environment, config, max_turns=args.max_turns),
        )
        warm_up(model_dir)
        print(f"torch threads: {torch.get_num_threads()}, environment: {args.environment}")
        sides = [
            ("plain loop", lambda: plain_loop(model_dir, prompts, cfg)),
            ("rollouts pipeline", lambda: pipeline(model_dir, prompts_dir, cfg, len(prompts), work)),
        ]
        rates = alternate(sides, args.repeats)
        plain, pipe = statistics.median(rates["plain loop"]), statistics.median(rates["rollouts pipeline"])
        print(
            f"median of {args.repeats}: pipeline {pipe:.1f} tok/s, plain loop {plain:.1f} tok/s ({args.prompts} "
            f"prompts, n={args.n}, batch={args.batch_size}, max_new_tokens={args.max_new_tokens}, "
            f"max_turns={args.max_turns}, {args.environment})"
        )
        print(f"ratio={pipe / plain:.3f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
