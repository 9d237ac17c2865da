"""What batch invariance costs on the local backends, and what it buys (docs/targets.md).

    python bench/batch_invariant.py --model models/policy [--prompts 16] [--judge-requests 32] [--repeats 3]

Sampling: the demo's arithmetic prompts (n=4, max_new_tokens=64, the demo's sampling), batched in one generate call
as the rollouts stage's transformers backend does, and with `batch_invariant` (one call per prompt). Judging: appeal-
style yes/no requests (max_tokens 4, top logprobs), in batches of 8 as the transformers judge client does, and with
`batch_invariant` (one call per request). Runs alternate; each prints its wall time. Then per path the median of each
mode, the ratio invariant / batched measured in the same run, and how far the batched floats are from the invariant
ones (the batch's padding; the invariant ones are a function of the prompt alone, so they are the reference). Run on
a quiet machine: a second model process slows both.
"""

import argparse
import statistics
import time

from rewardmill.transforms.judges.client import BackendConfig, JudgeRequest, Sampling
from rewardmill.transforms.judges.transformers_client import TransformersJudgeClient
from rewardmill.transforms.sampling.params import SamplingParams
from rewardmill.transforms.sampling.transformers_generate import generate_samples, load_policy
from rewardmill.transforms.sources.arithmetic import generate

SYSTEM = "You check whether an answer to a math problem equals the reference answer. Reply yes or no."


def sampling_runs(model: str, prompts: int, repeats: int) -> dict:
    policy = load_policy(model)
    records = generate(prompts, 0, (1, 1, 2))  # the demo's levels
    conversations = [[{"role": "user", "content": r["prompt"]}] for r in records]
    ids = [f"p{i}" for i in range(prompts)]
    demo = {"n": 4, "temperature": 0.8, "top_p": 0.95, "max_new_tokens": 64, "seed": 1234}
    modes = {mode: SamplingParams(**demo, batch_invariant=mode == "invariant") for mode in ("batched", "invariant")}
    times, out = {m: [] for m in modes}, {}
    for rep in range(repeats):
        for mode, sp in modes.items():
            start = time.monotonic()
            out[mode] = generate_samples(policy, conversations, ids, sp)
            times[mode].append(time.monotonic() - start)
            print(f"sampling {mode} run {rep + 1}: {times[mode][-1]:.1f}s", flush=True)
    pairs = [
        (a, b) for pa, pb in zip(out["batched"], out["invariant"], strict=True) for a, b in zip(pa, pb, strict=True)
    ]
    return {
        "times": times,
        "texts_equal": sum(a.completion == b.completion for a, b in pairs),
        "rows": len(pairs),
        "max_delta": max(abs(a.logprob_sum - b.logprob_sum) for a, b in pairs),
    }


def judge_runs(model: str, requests: int, repeats: int) -> dict:
    records = generate(requests, 3, (1, 2, 3))
    asks = [
        JudgeRequest(
            (
                {"role": "system", "content": SYSTEM},
                {
                    "role": "user",
                    "content": f"Problem: {r['prompt']}\nReference: {r['reference']}\n"
                    f"Answer: The answer is {int(r['reference']) + i % 3}.\nEqual?",
                },
            ),
            Sampling(max_tokens=4, top_logprobs=5),
        )  # fmt: skip
        for i, r in enumerate(records)
    ]
    clients = {m: TransformersJudgeClient(BackendConfig(model=model, batch_size=8, batch_invariant=m == "invariant"))
               for m in ("batched", "invariant")}  # fmt: skip
    for client in clients.values():
        client.complete(asks[:1])  # load the model outside the timing
    times, out = {m: [] for m in clients}, {}
    for rep in range(repeats):
        for mode, client in clients.items():
            start = time.monotonic()
            out[mode] = client.complete(asks)
            times[mode].append(time.monotonic() - start)
            print(f"judging {mode} run {rep + 1}: {times[mode][-1]:.1f}s", flush=True)
    first = [(a.completions[0].logprobs[0].logprob, b.completions[0].logprobs[0].logprob)
             for a, b in zip(out["batched"], out["invariant"], strict=True)]  # fmt: skip
    return {
        "times": times,
        "texts_equal": sum(a.text == b.text for a, b in zip(out["batched"], out["invariant"], strict=True)),
        "rows": len(asks),
        "max_delta": max(abs(a - b) for a, b in first),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    parser.add_argument("--model", default="models/policy")
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--judge-requests", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    results = {
        "sampling": sampling_runs(args.model, args.prompts, args.repeats),
        "judging": judge_runs(args.model, args.judge_requests, args.repeats),
    }
    for path, r in results.items():
        batched, invariant = (statistics.median(r["times"][m]) for m in ("batched", "invariant"))
        print(
            f"{path}: batched median {batched:.1f}s, batch_invariant median {invariant:.1f}s, ratio "
            f"{invariant / batched:.2f}x; texts equal {r['texts_equal']}/{r['rows']}; batched floats off by at most "
            f"{r['max_delta']:.1e}"
        )


if __name__ == "__main__":
    main()
