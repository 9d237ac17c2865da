"""Our IFEval labeler on the IFEval paper's own GPT-4 responses, beside the accuracies the paper published for them.

The paper (Zhou et al. 2023, arXiv:2311.07911, Table 3) scored GPT-4's responses to its 541 prompts with
google-research's instruction_following_eval; both files it scored are in bench/data/ifeval/ (README.md there says
where they come from). Each prompt is labeled once by InstructionFollowingVerifier: its `raw` keeps every
instruction's strict and loose result, and the four accuracies are the paper's:

- prompt-level: the fraction of prompts whose instructions are all followed,
- instruction-level: the fraction of all instructions followed,

each strict (the response as is) and loose (any of IFEval's 8 variants). A prompt the labeler cannot label (score
None: bad kwargs, missing NLTK data) counts as not followed and is listed, so it can never raise our figures.
The last line is `max_abs_diff=<largest |ours - published|, in points>`.

    python bench/ifeval_gpt4.py [--data bench/data/ifeval]
"""

import argparse
import json
from pathlib import Path

from rewardmill.transforms.labelers.instruction_following import InstructionFollowingVerifier

DATA = Path(__file__).parent / "data" / "ifeval"
INPUTS = "input_data.jsonl"
RESPONSES = "input_response_data_gpt4_20231107_145030.jsonl"
# Zhou et al. 2023, Table 3, GPT-4 (percent).
PUBLISHED = {
    "prompt-level strict": 76.89,
    "instruction-level strict": 83.57,
    "prompt-level loose": 79.30,
    "instruction-level loose": 85.37,
}


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def score(data: Path) -> tuple[dict[str, float], list[tuple[int, str]], int]:
    """(the four accuracies in percent, the prompts that could not be labeled as (key, rationale), prompts)."""
    responses = {r["prompt"]: r["response"] for r in read_jsonl(data / RESPONSES)}
    labeler = InstructionFollowingVerifier()
    prompts = {"strict": 0, "loose": 0}
    followed = {"strict": 0, "loose": 0}
    instructions, unlabeled = 0, []
    inputs = read_jsonl(data / INPUTS)
    for row in inputs:
        constraints = json.dumps({"instruction_id_list": row["instruction_id_list"], "kwargs": row["kwargs"]})
        label = labeler.label(responses[row["prompt"]], constraints)
        instructions += len(row["instruction_id_list"])
        if label.score is None:
            unlabeled.append((row["key"], label.rationale))
            continue
        results = json.loads(label.raw)["instructions"]
        for mode in ("strict", "loose"):
            hits = sum(r[mode] for r in results)
            followed[mode] += hits
            prompts[mode] += hits == len(results)
    accuracy = {}
    for mode in ("strict", "loose"):
        accuracy[f"prompt-level {mode}"] = 100 * prompts[mode] / len(inputs)
        accuracy[f"instruction-level {mode}"] = 100 * followed[mode] / instructions
    return accuracy, unlabeled, len(inputs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder with the two IFEval files")
    args = parser.parse_args()
    accuracy, unlabeled, count = score(args.data)
    print(f"IFEval, GPT-4 responses of the paper: {count} prompts")
    print(f"{'metric':<26}{'ours':>8}{'published':>11}{'diff':>8}")
    for metric, published in PUBLISHED.items():
        ours = accuracy[metric]
        print(f"{metric:<26}{ours:>8.2f}{published:>11.2f}{ours - published:>+8.2f}")
    print(f"unlabeled={len(unlabeled)}")
    for key, rationale in unlabeled:
        print(f"  key {key}: {rationale}")
    print(f"max_abs_diff={max(abs(accuracy[m] - p) for m, p in PUBLISHED.items()):.2f}")


if __name__ == "__main__":
    main()
