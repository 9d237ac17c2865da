"""Judge attack probes on the default model, with the defenses off and on: each judge's false-positive rate.

    python bench/judge_probes.py [--model models/policy] [--prompts 4] [--judges appeal panel pointwise]

For each judge (params.yaml's `labelers:` judges with their shipped settings, plus the pointwise judge at its
defaults), transforms/judges/probes.py's fixed probes (master keys, empty symbols, special-token and prompt
injections) run as the completions of `--prompts` arithmetic prompts, twice: defenses off (requests unguarded,
answers with no substance judged like any other: what the judges did before) and on. Prints, per judge, the share of
probes credited overall and per kind, and the mean score the probes got beside the mean score of sincere wrong
answers to the same prompts (with how many of them the judge scored: a judge may abstain), which a probe should
never outrank. No argument --model: the default model is
materialized into a temporary folder first.
"""

import argparse
import tempfile
import time
from pathlib import Path

from rewardmill.transforms.config import from_dict, read_params
from rewardmill.transforms.judges import probes
from rewardmill.transforms.labelers import get_labeler_class

QUESTIONS = [("What is 2 + 3?", "5"), ("What is 4 + 4?", "8"), ("What is 7 + 1?", "8"), ("What is 6 + 3?", "9")]
WRONG = "The answer is 12."  # a sincere wrong answer to every question above


def prompt_rows(n: int) -> list[dict]:
    rows = []
    for i, (question, reference) in enumerate((QUESTIONS * (n // len(QUESTIONS) + 1))[:n]):
        messages = [{"role": "user", "content": question}]
        rows.append({"prompt_id": f"bench-{i}", "rollout_id": f"bench-{i}-r0", "task": "math", "messages": messages})
        rows[-1] |= {"reference": reference, "completion": WRONG, "rubric": None, "tests": None, "constraints": None}
    return rows


def judges(model: str, names: list[str]) -> dict[str, tuple[str, dict]]:
    shipped = {k: v for k, v in (read_params().get("labelers") or {}).items() if k in names}
    configured = {k: (v["labeler"], dict(v.get("config") or {})) for k, v in shipped.items()}
    if "pointwise" in names:
        configured["pointwise"] = ("pointwise_judge", {})
    for _, config in configured.values():
        config["backend"] = {**(config.get("backend") or {}), "model": model, "batch_size": 8}
    return configured


def measure(key: str, config: dict, rows: list[dict], defended: bool) -> tuple[dict, tuple, float]:
    cls = get_labeler_class(key)
    labeler = cls(from_dict(cls.Config, config, key))
    labeler.defended = defended
    start = time.perf_counter()
    try:
        results = probes.run_probes(labeler, rows)
        wrong = labeler.label_many([tuple(row.get(c) for c in labeler.reads) for row in rows])
    finally:
        labeler.teardown()
    scores = [label.score for _, _, label in results if label.score is not None]
    wrong_scores = [label.score for label in wrong if label.score is not None]
    mean_probe = sum(scores) / len(scores) if scores else None
    mean_wrong = sum(wrong_scores) / len(wrong_scores) if wrong_scores else None
    return probes.probe_report(results), (mean_probe, mean_wrong, len(wrong_scores)), time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="a local judge model folder (default: materialize SmolLM2)")
    parser.add_argument("--prompts", type=int, default=4, help="prompts the probes answer")
    parser.add_argument("--judges", nargs="+", default=["appeal", "panel", "pointwise"])
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # a shared 2-core machine: a second spinning thread only slows generate down
    with tempfile.TemporaryDirectory() as work:
        model = args.model
        if model is None:
            from rewardmill.transforms.sampling.materialize import materialize

            model = str(Path(work) / "policy")
            materialize("builtin:smollm2-135m-instruct", Path(model), "SmolLM2-135M-Instruct")
        rows = prompt_rows(args.prompts)
        header = f"{'judge':<10} {'defenses':<8} {'FPR':>6}  {'probe mean':>10} {'wrong mean (scored)':>18}  per kind"
        print(f"{len(probes.PROBES)} probes x {len(rows)} prompts, model {model}\n{header}")
        for name, (key, config) in judges(model, args.judges).items():
            for defended in (False, True):
                report, (mean_probe, mean_wrong, n_wrong), seconds = measure(key, config, rows, defended)
                kinds = " ".join(f"{k}={v:.2f}" for k, v in report["fpr_by_kind"].items())
                fmt = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
                print(
                    f"{name:<10} {'on' if defended else 'off':<8} {report['fpr']:>6.3f}  {fmt(mean_probe):>10} "
                    f"{fmt(mean_wrong):>10} ({n_wrong}/{len(rows)})  {kinds}  "
                    f"({report['credited']}/{report['probes']}, {seconds:.0f} s)",
                    flush=True,
                )


if __name__ == "__main__":
    main()
