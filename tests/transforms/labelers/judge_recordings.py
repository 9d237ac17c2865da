"""Recorded outputs of the real default model for the judge labelers' happy-path tests, and the script that makes them.

The judge labelers' tests for position swap, panel thresholds and rubric scoring replay what SmolLM2-135M-Instruct
really answered: `recordings/judge_calls.jsonl` is a call-cache snapshot (the CachedJudgeClient format: content
hash of model, messages and sampling -> response) made by running every scenario below on the real model.
`replay()` serves those calls and fails on any call that was not recorded, so a changed prompt cannot slip through
unnoticed; `test_recordings_are_the_real_models_answers` re-asks the model a sample of them.

Re-record after changing a judge's prompt or a scenario (about a minute on 2 CPU cores):

    python -m tests.transforms.labelers.judge_recordings
"""

import json
import shutil
import sys
import tempfile
from pathlib import Path

from rewardmill.transforms.judges.call_cache import CachedJudgeClient
from rewardmill.transforms.labelers import judge_base
from rewardmill.transforms.labelers.pairwise_judge import PairwiseJudge, PairwiseJudgeConfig
from rewardmill.transforms.labelers.panel_judge import PanelJudge, PanelJudgeConfig
from rewardmill.transforms.labelers.reference_judge import AppealSpec, ReferenceJudge, ReferenceJudgeConfig
from rewardmill.transforms.labelers.rubric_judge import RubricJudge, RubricJudgeConfig

RECORDINGS = Path(__file__).with_name("recordings")
CALLS_FILE = RECORDINGS / "judge_calls.jsonl"
MODEL_ID_FILE = RECORDINGS / "model_id.txt"


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


# Pairwise: the rollouts of each prompt, one right answer among wrong or empty ones.
PAIRWISE_GROUPS = [
    [(user("What is 7 + 5?"), c) for c in ("12", "7 + 5 = 75", "The answer is 12.", "13")],
    [(user("What is the capital of France?"), c) for c in ("Paris.", "London.", "The capital of France is Paris.")],
    [
        (user("Write a Python function that returns the square of x."), c)
        for c in ("def square(x):\n    return x * x", "def square(x):\n    return x + x")
    ],
]

# Reference appeal: math_answer accepts some, misses equivalent forms in others; the judge re-checks those.
APPEAL_ROWS = [
    (user("Simplify 12/36."), "The answer is $\\frac{1}{3}$.", "\\frac{1}{3}"),
    (user("Simplify 12/36."), "It is one third.", "\\frac{1}{3}"),
    (user("Simplify 12/36."), "The answer is 4.", "\\frac{1}{3}"),
    (user("Solve x + 2 = 5."), "x equals three", "3"),
    (user("Solve x + 2 = 5."), "The answer is 7.", "3"),
    (user("How many days are in a week?"), "A week has seven days.", "7"),
]


# Panels: right and wrong answers, with references for the binary (yes/no) panel.
PANEL_ROWS = [
    (user("What is 7 + 5?"), "7 + 5 = 12", "12"),
    (user("What is 7 + 5?"), "7 + 5 = 75", "12"),
    (user("What is the capital of France?"), "The capital of France is Paris.", "Paris"),
    (user("What is the capital of France?"), "London.", "Paris"),
    (user("How many legs does a spider have?"), "A spider has eight legs.", "8"),
    (user("How many legs does a spider have?"), "", "8"),
]

# Rubrics: (messages, completion, reference, rubric column, task) - a prompt's own rubric, a task rubric, params.
STORY_RUBRIC = [
    {"criterion": "The story is about a cat.", "weight": 2.0},
    {"criterion": "The story is at most three sentences long.", "weight": 1.0},
]
RUBRIC_ROWS = [
    (
        user("Write a very short story about a cat."),
        "The cat slept in the sun all day. Then it ate.",
        None,
        STORY_RUBRIC,
        "open",
    ),
    (
        user("Write a very short story about a cat."),
        "Dogs are loyal animals that like to play fetch.",
        None,
        STORY_RUBRIC,
        "open",
    ),
    (user("What is 7 + 5?"), "7 + 5 = 12", "12", None, "math"),
    (user("What is 7 + 5?"), "7 + 5 = 75", "12", None, "math"),
    (
        user("Explain what a prime number is."),
        "A prime number has exactly two divisors: 1 and itself.",
        None,
        None,
        "open",
    ),
    (user("Explain what a prime number is."), "Bananas are yellow.", None, None, "open"),
]
MATH_RUBRIC = {
    "criteria": "Is the final answer mathematically correct?",
    "descriptions": {
        1: "The final answer is wrong.",
        2: "The answer is wrong but the method is partly right.",
        3: "The answer is close but not exact.",
        4: "The answer is right with a small flaw.",
        5: "The final answer is exactly right.",
    },
}


def pairwise_judge() -> PairwiseJudge:
    return PairwiseJudge(PairwiseJudgeConfig(max_tokens=24))


def reference_judge() -> ReferenceJudge:
    return ReferenceJudge(ReferenceJudgeConfig(appeal=AppealSpec("math_answer", {"timeout_seconds": 5})))


def panel_judge(**config) -> PanelJudge:
    return PanelJudge(PanelJudgeConfig(**{"max_tokens": 16, **config}))


def rubric_judge(**config) -> RubricJudge:
    return RubricJudge(RubricJudgeConfig(**{"max_tokens": 48, "task_rubrics": {"math": MATH_RUBRIC}, **config}))


def run_scenarios() -> dict[str, list]:
    """Every scenario's labels, with whatever clients `judge_base.make_client` currently builds. Scenarios that
    differ only in how votes are combined (panel thresholds) make the same calls, so they share recordings."""
    judge = pairwise_judge()
    return {
        "pairwise": [judge.label_group(group) for group in PAIRWISE_GROUPS],
        "reference": reference_judge().label_many(APPEAL_ROWS),
        "panel_likert": panel_judge(kind="likert").label_many(PANEL_ROWS),
        "panel_binary": panel_judge(kind="binary", max_tokens=4).label_many(PANEL_ROWS),
        "panel_reflection": panel_judge(kind="likert", reflection=True).label_many(PANEL_ROWS),
        "rubric_prometheus": rubric_judge(mode="prometheus").label_many(RUBRIC_ROWS),
        "rubric_principles": rubric_judge(mode="principles").label_many(RUBRIC_ROWS),
        "rubric_principles_each": rubric_judge(mode="principles", principle_calls="each").label_many(RUBRIC_ROWS),
    }


class NotRecorded:
    """The inner client behind the replay cache: any call that reaches it was not recorded."""

    def __init__(self, model_id: str):
        self.model_id = model_id

    def complete(self, requests):
        first = requests[0].messages[-1]["content"][:200] if requests else ""
        raise AssertionError(
            f"{len(requests)} judge call(s) not in {CALLS_FILE.name} (first asks: {first!r}); "
            "re-record with `python -m tests.transforms.labelers.judge_recordings`"
        )

    def usage(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        pass


def replay(monkeypatch, tmp_path: Path) -> str:
    """Make every judge labeler's client answer from the recordings (a copy, so the cache's hit counters and
    flushes never touch the committed file). Returns the recorded model id."""
    model_id = MODEL_ID_FILE.read_text().strip()
    directory = tmp_path / "replay"
    cache_folder = Path(CachedJudgeClient(NotRecorded(model_id), directory).directory)
    cache_folder.mkdir(parents=True)
    shutil.copy(CALLS_FILE, cache_folder / "segment-recorded.jsonl")
    monkeypatch.setattr(judge_base, "make_client", lambda backend: CachedJudgeClient(NotRecorded(model_id), directory))
    return model_id


def record(policy_dir: Path) -> None:
    """Run every scenario on the real model, then keep exactly the calls they made, sorted by key."""
    from rewardmill.transforms.judges.client import BackendConfig
    from rewardmill.transforms.judges.transformers_client import TransformersJudgeClient

    model = TransformersJudgeClient(BackendConfig(model=str(policy_dir), batch_size=8))
    with tempfile.TemporaryDirectory() as scratch:
        cached = CachedJudgeClient(model, scratch)
        judge_base.make_client = lambda backend: cached  # every backend of every scenario -> the local model
        run_scenarios()
        cached.flush()
        lines = [
            json.loads(line)
            for path in sorted(Path(cached.directory).glob("segment-*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines()
        ]
    RECORDINGS.mkdir(exist_ok=True)
    unique = {item["key"]: item for item in lines}
    CALLS_FILE.write_text(
        "".join(json.dumps(unique[k], ensure_ascii=False, sort_keys=True) + "\n" for k in sorted(unique)),
        encoding="utf-8",
    )
    MODEL_ID_FILE.write_text(model.model_id + "\n")
    print(f"recorded {len(unique)} calls of {model.model_id[:16]} to {CALLS_FILE}", file=sys.stderr)


def main() -> None:
    from rewardmill.transforms.sampling.materialize import materialize

    with tempfile.TemporaryDirectory() as tmp:
        materialize("builtin:smollm2-135m-instruct", Path(tmp), "SmolLM2-135M-Instruct")
        record(Path(tmp))


if __name__ == "__main__":
    main()
