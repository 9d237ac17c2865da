"""The distilabel side of bench/peers/distilabel.py: run in distilabel's own venv, never imported by rewardmill.

A distilabel Pipeline as its docs write one: LoadDataFromDicts -> TextGeneration(TransformersLLM,
num_generations=N) -> a step that checks every generation's final answer against the reference with math-verify.
Reads the prompts as JSON lines ({prompt_id, messages: one user turn, reference}), writes one JSON line per generation
({prompt_id, index, completion, correct}) and a summary JSON with the versions and the torch threads.

Its caller sets DISTILABEL_CACHE_DIR to a fresh folder per run, so distilabel has nothing to reuse.

    python -I bench/peers/distilabel_job.py --prompts P.jsonl --model DIR --out OUT.jsonl --summary S.json ...
"""

import argparse
import json
import time

import distilabel
import math_verify
import torch
import transformers
from distilabel.models.llms import TransformersLLM
from distilabel.pipeline import Pipeline
from distilabel.steps import LoadDataFromDicts, StepInput, step
from distilabel.steps.tasks import TextGeneration


@step(inputs=["generation", "reference"], outputs=["correct"])
def MathVerify(inputs: StepInput):
    """Each generation's final answer against the reference (math-verify's parse and verify)."""
    for row in inputs:
        gold = math_verify.parse(f"${row['reference']}$")
        row["correct"] = [
            bool(gold) and math_verify.verify(gold, math_verify.parse(g or "")) for g in row["generation"]
        ]
    yield inputs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompts", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--batch-size", type=int, required=True)
    ap.add_argument("--max-new-tokens", type=int, required=True)
    ap.add_argument("--temperature", type=float, required=True)
    ap.add_argument("--top-p", type=float, required=True)
    ap.add_argument("--top-k", type=int, required=True)
    args = ap.parse_args()
    start = time.perf_counter()
    with open(args.prompts) as f:
        rows = [json.loads(line) for line in f]
    for r in rows:  # TextGeneration takes one user turn; rewardmill renders the same turn with the same template
        if [m["role"] for m in r["messages"]] != ["user"]:
            raise SystemExit(f"prompt {r['prompt_id']}: TextGeneration needs exactly one user message")
    data = [
        {"prompt_id": r["prompt_id"], "instruction": r["messages"][0]["content"], "reference": r["reference"]}
        for r in rows
    ]

    with Pipeline(name="rewardmill-peer-bench") as pipeline:
        load = LoadDataFromDicts(data=data, batch_size=args.batch_size)
        generate = TextGeneration(
            llm=TransformersLLM(
                model=args.model,
                torch_dtype="float32",
                generation_kwargs={
                    "max_new_tokens": args.max_new_tokens,
                    "temperature": args.temperature,
                    "top_p": args.top_p,
                    "top_k": args.top_k,
                    "repetition_penalty": 1.0,  # distilabel's default is 1.1; rewardmill applies none
                    "do_sample": True,
                },
            ),
            num_generations=args.n,
            group_generations=True,
            input_batch_size=args.batch_size,
            use_default_structured_output=False,
        )
        check = MathVerify(input_batch_size=args.batch_size)
        load >> generate >> check
    distiset = pipeline.run(use_cache=False)
    took = time.perf_counter() - start

    out_rows = distiset["default"]["train"]
    written = 0
    with open(args.out, "w") as f:
        for row in out_rows:
            for i, (text, ok) in enumerate(zip(row["generation"], row["correct"], strict=True)):
                f.write(
                    json.dumps({"prompt_id": row["prompt_id"], "index": i, "completion": text, "correct": ok}) + "\n"
                )
                written += 1
    with open(args.summary, "w") as f:
        json.dump(
            {
                "distilabel": distilabel.__version__,
                "transformers": transformers.__version__,
                "torch": torch.__version__,
                "math_verify": getattr(math_verify, "__version__", "?"),
                "torch_threads": torch.get_num_threads(),
                "rows": len(out_rows),
                "generations": written,
                "in_process_seconds": took,
            },
            f,
        )


if __name__ == "__main__":
    main()
