"""ReasoningGymVerifier: the reasoning-gym task's own `score_answer` on the completion's answer.

Prompts from the `reasoning_gym` source carry the entry in their metadata (task, seed, config, the entry's own
metadata); the label stage joins the prompts' `metadata` to each rollout (pipelines/label.py). The answer is read
after any leading reasoning block (reasoning.answer_text), then, as reasoning-gym's scorers expect it, the last
`<answer>…</answer>` (`extraction: answer_tag`, reasoning-gym's own `extract_answer`; no tag: the scorer gets None)
or the whole answer text (`final_text`), or (`committed`, for tasks whose answers are values: numbers, fractions) the
final committed value as the math_answer labeler reads it (math_answer.read_answer: the last answer statement, with
no hedge, negation, range or alternative attached; none: the scorer gets None). A model that never writes the tags
("The answer is 8.") is scored on what it committed to, and a hedge ("8 or 9") or a list of values scores nothing,
where `final_text` would give the list the task's substring partial credit. The score is the task's, partial credit
included; correct at `pass_threshold`. A prompt without an entry abstains; a scorer that raises is an `error` label.
"""

import functools
import json
from dataclasses import dataclass
from typing import Any, Literal

from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.main_thread import HardTimeout, MainThreadRunner
from rewardmill.transforms.labelers.reasoning import answer_text
from rewardmill.transforms.sources.reasoning_gym import METADATA_KEY, make, package_version

EXTRACTIONS = ("answer_tag", "final_text", "committed")


@dataclass(frozen=True)
class ReasoningGymConfig:
    # what of the answer the scorer gets: answer_tag | final_text | committed (the final committed value)
    extraction: Literal["answer_tag", "final_text", "committed"] = "answer_tag"
    pass_threshold: float = 1.0  # score at or above which the answer is correct (scorers give partial credit)
    timeout_seconds: int = 5  # committed: math-verify's bound on reading one answer; past it the label is `timeout`

    def __post_init__(self):
        if self.extraction not in EXTRACTIONS:
            raise ValueError(f"extraction must be one of {EXTRACTIONS}, got {self.extraction!r}")
        if not 0 < self.pass_threshold <= 1:
            raise ValueError(f"pass_threshold must be in (0, 1], got {self.pass_threshold}")


def entry_of(messages: list[dict[str, str]], reference: str | None, metadata: str | None) -> dict[str, Any] | None:
    """The reasoning-gym entry a prompt was made from (question, answer, metadata) and its identity, or None."""
    spec = (json.loads(metadata) if metadata else {}).get(METADATA_KEY)
    if not spec:
        return None
    question = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    return {"spec": spec, "entry": {"question": question, "answer": reference, "metadata": spec["metadata"]}}


@functools.lru_cache(maxsize=64)
def scorer(task: str, seed: int, config: str):
    """The task dataset's `score_answer` (its config can change how it scores), built once per worker."""
    return make(task, {"seed": seed, "count": 1, "config": json.loads(config)}).score_answer


def committed_value(completion: str, timeout_seconds: int) -> str | None:
    """The final committed value of `completion` as math_answer reads it, as text ("8", "-4", "1/2"); None when it
    commits to none. Main thread only (math-verify's alarm): the labeler calls it through a MainThreadRunner."""
    from rewardmill.transforms.labelers.math_answer import read_answer
    from rewardmill.transforms.labelers.math_final import committed_text

    reading = read_answer(committed_text(completion), ("math_verify",), timeout_seconds)
    return None if reading.rejected or not reading.answer else str(reading.answer[-1])


def extract(completion: str, extraction: str) -> str | None:
    text = answer_text(completion)
    if extraction == "final_text":
        return text.strip()
    from reasoning_gym.utils import extract_answer

    return extract_answer(text)


class ReasoningGymVerifier:
    """Input columns: completion, reference, messages, metadata (the prompt's, joined by the label stage).
    Output: score = the task's score_answer, verdict correct at pass_threshold, raw = {task, answer, score}."""

    name = "reasoning_gym"
    version = "1"
    reads = ("completion", "reference", "messages", "metadata")
    tasks = ("reasoning",)
    Config = ReasoningGymConfig

    def __init__(self, config: ReasoningGymConfig | None = None):
        self.config = config or ReasoningGymConfig()
        self._runner = MainThreadRunner()

    def teardown(self) -> None:
        self._runner.close()

    def _answer(self, completion: str) -> str | None:
        if self.config.extraction != "committed":
            return extract(completion, self.config.extraction)
        bound = self.config.timeout_seconds
        return self._runner.call(committed_value, (completion, bound), hard_timeout=3 * bound + 5)

    def label(self, completion: str, reference: str | None, messages: list, metadata: str | None) -> Label:
        found = entry_of(messages, reference, metadata)
        if found is None:
            return Label(None, 0.0, "abstain", "the prompt has no reasoning-gym entry (prompts source reasoning_gym)")
        spec, entry = found["spec"], found["entry"]
        try:
            answer = self._answer(completion)
        except (HardTimeout, TimeoutError) as exc:  # not cached: a rerun on a quieter machine retries
            return Label(None, 0.0, "timeout", f"reading the committed answer: {exc}"[:500], cacheable=False)
        try:
            score_answer = scorer(spec["task"], spec["seed"], json.dumps(spec["config"], sort_keys=True))
            score = float(score_answer(answer, entry))
        except Exception as exc:  # the task's own scorer failed on this answer: said, not a crash of the stage
            return Label(None, 0.0, "error", f"{spec['task']} score_answer raised {type(exc).__name__}: {exc}"[:500])
        raw = json.dumps({"task": spec["task"], "answer": answer, "score": score}, ensure_ascii=False)
        version = package_version()
        made = f" (prompt made with reasoning-gym {spec['version']}, scored with {version})"
        note = made if spec.get("version") != version else ""
        if answer is None:
            missing = "no committed value" if self.config.extraction == "committed" else "no <answer> tag"
            return Label(score, 1.0, "incorrect", f"{missing} in the answer{note}", raw)
        verdict = "correct" if score >= self.config.pass_threshold else "incorrect"
        return Label(score, 1.0, verdict, f"{spec['task']} score_answer: {score:g}{note}", raw)
