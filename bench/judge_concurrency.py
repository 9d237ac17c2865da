"""The README's served judge (`Your first hour`, step 3) against a real server, at three concurrency settings.

    transformers serve models/policy --device cpu --port 8000 > serve.log 2>&1 &     # as the README starts it
    python bench/judge_concurrency.py [--base-url http://127.0.0.1:8000/v1] [--rollouts 32] [--repeats 3]
        [--modes one adaptive pinned] [--request-timeout S] [--run-timeout 1200] [--keep DIR]

Each run is the label stage (`rewardmill run label judge`, probes included) on `--rollouts` math rollouts, with the
README's judge entry as written (read from the README's `first-hour: judge` block) and a fresh cache, so every call
goes to the server:

- `one`: max_concurrency 1, the setting that was known to work on a CPU server;
- `adaptive`: the README's max_concurrency 8 as a ceiling (the client finds what the server takes);
- `pinned`: max_concurrency 8 with adaptive_concurrency false: 8 in flight from the first request, as the client
  sent them before the adaptive limit.

Runs of the modes alternate (one, adaptive, pinned, one, ...) so they share the machine's load. Prints each run's
wall time, exit status, requests/retries/failures, rows rejected as judge_call_failed and the final/peak limit, then
per mode the median wall time and its ratio to `one`'s median measured in the same invocation. Run it in a folder
where `models/policy` is the served model's folder (the name the judge config asks the server for); start one model
process only: on 2 cores a second one slows both.
"""

import argparse
import ast
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
MODES = {
    "one": {"max_concurrency": 1},
    "adaptive": {},
    "pinned": {"adaptive_concurrency": False},
}
QUESTIONS = [(f"What is {a} + {b}?", a + b) for a, b in ((17, 25), (6, 7), (40, 2), (13, 29), (8, 9), (21, 21))]


def readme_judge() -> dict:
    """The judge entry of the README's `first-hour: judge` block, as a user pastes it into params.yaml."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"<!-- first-hour: judge -->\n```yaml\n(.*?)```", text, flags=re.S)
    if block is None:
        raise SystemExit("README.md has no `first-hour: judge` block")
    return yaml.safe_load(block[1])["labelers"]["judge"]


def rollout_rows(n: int) -> list[dict]:
    """`n` math rollouts: four answers (right, wrong, worked, terse) to each of a few sums."""
    rows = []
    for i in range(n):
        question, answer = QUESTIONS[(i // 4) % len(QUESTIONS)]
        prompt_id = f"bench-{i // 4}"
        completion = [
            f"The answer is {answer}.",
            f"The answer is {answer + 1}.",
            f"{question[8:-1]} = {answer}, so the answer is {answer}.",
            f"I think it is {answer - 2}.",
        ][i % 4]
        rows.append(
            {
                "rollout_id": f"{prompt_id}-r{i % 4}",
                "prompt_id": prompt_id,
                "task": "math",
                "messages": [{"role": "user", "content": question}],
                "reference": str(answer),
                "tests": None,
                "constraints": None,
                "rubric": None,
                "split": "train",
                "sample_index": i % 4,
                "completion": completion,
                "n_tokens": len(completion.split()),
                "finish_reason": "stop",
                "logprob_sum": None,
                "policy": {"name": "bench", "fingerprint": "bench", "backend": "transformers"},
                "sampling": "{}",
                "seed": i % 4,
            }
        )
    return rows


def write_rollouts(folder: Path, n: int) -> None:
    from rewardmill.schemas import ROLLOUT_V2
    from rewardmill.transforms.io.parquet import rows_to_table, write_table

    folder.mkdir(parents=True)
    write_table(rows_to_table(rollout_rows(n), ROLLOUT_V2), str(folder / "part-00000-of-00001.parquet"))


def label_command(work: Path, run_dir: Path, name: str, entry: dict) -> list[str]:
    """`rewardmill run label NAME` on work/rollouts with params.yaml's settings and `entry` as its only labeler, in
    `run_dir` (made here) with its own params file, labels, cache and metrics."""
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["labelers"] = {name: entry}
    run_dir.mkdir()
    (run_dir / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    command = [str(Path(sys.executable).parent / "rewardmill"), "--params", str(run_dir / "params.yaml"), "run"]
    command += ["label", name, "--rollouts", str(work / "rollouts"), "--out", str(run_dir / "labels")]
    return command + ["--cache", str(run_dir / "cache" / "labels"), "--metrics", str(run_dir / "metrics.json")]


def run_stage(work: Path, judge: dict, base_url: str, mode: str, index: int, timeout: float, request_timeout) -> dict:
    """One label stage run in its own params file and cache: wall time, exit status and the client's usage."""
    entry = json.loads(json.dumps(judge))
    entry["config"]["backend"] |= {"base_url": base_url, **MODES[mode]}
    if request_timeout is not None:
        entry["config"]["backend"]["request_timeout"] = request_timeout
    run_dir = work / f"{mode}-{index}"
    command = label_command(work, run_dir, "judge", entry)
    start = time.monotonic()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        status, log = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired as exc:
        status, log = "killed", (exc.stderr or b"").decode(errors="replace")
    seconds = time.monotonic() - start
    usage = {}
    for found in re.findall(r"judge calls (\{.*?\})", log):
        usage = ast.literal_eval(found)  # the stage's last report: its whole run
    (run_dir / "stage.log").write_text(log)
    rejected = re.search(r"(\d+) of \d+ rollouts \(\d+%\) lost their judge call", log)
    if rejected is None and (run_dir / "metrics.json").exists():
        rejects = json.loads((run_dir / "metrics.json").read_text()).get("rejects", {})
        lost = rejects.get("judge_call_failed", 0)
    else:
        lost = int(rejected[1]) if rejected else None
    return {"mode": mode, "seconds": seconds, "status": status, "lost": lost, **usage}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default="http://127.0.0.1:8000/v1")
    parser.add_argument("--rollouts", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--run-timeout", type=float, default=1200.0, help="seconds before a run is killed")
    parser.add_argument(
        "--request-timeout",
        type=float,
        default=None,
        help="override the backend's request_timeout (default: the README's, i.e. BackendConfig's 60 s); a short one "
        "shows in minutes what a slower machine shows with the default",
    )
    parser.add_argument("--keep", default=None, help="keep each run's params, stage log and metrics in this folder")
    args = parser.parse_args()
    judge = readme_judge()
    print(f"judge entry (README first-hour): {json.dumps(judge)}")
    runs = []
    with tempfile.TemporaryDirectory(prefix="judge-concurrency-") as tmp:
        work = Path(args.keep or tmp)
        write_rollouts(work / "rollouts", args.rollouts)
        for index in range(args.repeats):
            for mode in args.modes:
                run = run_stage(work, judge, args.base_url, mode, index, args.run_timeout, args.request_timeout)
                runs.append(run)
                print(
                    f"{mode:9s} run {index + 1}: {run['seconds']:7.1f} s  exit {run['status']}  "
                    f"requests {run.get('requests')} retries {run.get('retries')} failures {run.get('failures')}  "
                    f"rejected judge_call_failed {run['lost']}  limit final {run.get('concurrency_limit')} "
                    f"peak {run.get('concurrency_peak')} lowered {run.get('concurrency_decreases')}",
                    flush=True,
                )
    medians = {m: statistics.median(r["seconds"] for r in runs if r["mode"] == m) for m in args.modes}
    for mode, median in medians.items():
        ratio = f"  {median / medians['one']:.2f}x one's" if "one" in medians else ""
        print(f"{mode:9s} median {median:7.1f} s over {args.repeats} run(s){ratio}")


if __name__ == "__main__":
    main()
