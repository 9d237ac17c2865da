"""VerifiersRubricVerifier: a verifiers environment's own rubric, one label per reward function.

Prompts from the `verifiers` source carry their task (the label stage joins the prompts' `metadata`). The labeler
rebuilds the task and the rollout as a `vf.Trace` (the task's opening messages, then the trajectory's turns, or the
completion as the one assistant turn of a single-turn sample) and scores it with the task's `Task.score`, which is
what verifiers' own rollouts call: so each reward function's score equals verifiers' on the same rollout. One label
per function, aspect = its name, score = its score as is, weight and the weighted total in raw; verdict correct at
`pass_threshold`. `reward: NAME` keeps only that function, which makes it one decided label fit for an assemble gate.

A prompt without a task abstains. An environment whose code changed since the prompts were made (its source digest
differs), or a task that no longer rebuilds, is an `error` label that says to rerun the prompts stage.
"""

import functools
import json
from dataclasses import dataclass

from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.sources import vf_tasks


@dataclass(frozen=True)
class VerifiersRubricConfig:
    reward: str | None = None  # one reward function's name: only its label; null = one label per function
    pass_threshold: float = 1.0  # a function's score at or above this is verdict correct


@functools.lru_cache(maxsize=8)
def taskset(env_id: str, args: str):
    return vf_tasks.load_taskset(env_id, json.loads(args))


class VerifiersRubricVerifier:
    """Input columns: completion, turns (ROLLOUT_V3, None for a single-turn sample), metadata (the prompt's).
    Output: one label per reward function (aspect = its name), raw = {weight, reward (the weighted total)}."""

    name = "verifiers"
    version = "1"
    reads = ("completion", "turns", "metadata")
    tasks = ("environment",)
    Config = VerifiersRubricConfig

    def __init__(self, config: VerifiersRubricConfig | None = None):
        self.config = config or VerifiersRubricConfig()

    def label(self, completion: str, turns: list | None, metadata: str | None) -> Label | list[Label]:
        spec = (json.loads(metadata) if metadata else {}).get(vf_tasks.METADATA_KEY)
        if not spec:
            return Label(None, 0.0, "abstain", "the prompt has no verifiers task (prompts source kind verifiers)")
        environment = spec["environment"]
        try:
            installed = vf_tasks.module_identity(environment["id"])
            if installed["source_sha256"] != environment["module"]["source_sha256"]:
                raise ValueError(
                    f"environment {environment['id']!r} changed since the prompts were made (source digest "
                    f"{installed['source_sha256'][:12]}, not {environment['module']['source_sha256'][:12]}): rerun "
                    "the prompts and rollouts stages"
                )
            tasks = taskset(environment["id"], json.dumps(environment["args"], sort_keys=True))
            task = vf_tasks.task_from_record(tasks, spec["task"])
            steps = [dict(t) for t in turns] if turns else [{"role": "assistant", "content": completion or ""}]
            rewards = vf_tasks.score(task, vf_tasks.trace_of(task, vf_tasks.prompt_messages(task.data), steps))
        except Exception as exc:  # the environment or its rubric failed on this row: said, never a silent 0
            return Label(None, 0.0, "error", f"{type(exc).__name__}: {exc}"[:500])
        total = sum(r["score"] * r["weight"] for r in rewards.values())
        names = [self.config.reward] if self.config.reward else sorted(rewards)
        if self.config.reward and self.config.reward not in rewards:
            return Label(
                None, 0.0, "error", f"the rubric has no reward {self.config.reward!r}; it has {sorted(rewards)}"
            )
        return [self._label(name, rewards[name], total) for name in names] or Label(
            None, 0.0, "abstain", "the rubric has no reward functions"
        )

    def _label(self, name: str, reward: dict[str, float], total: float) -> Label:
        score = reward["score"]
        verdict = "correct" if score >= self.config.pass_threshold else "incorrect"
        raw = json.dumps({"weight": reward["weight"], "reward": total}, sort_keys=True)
        return Label(score, 1.0, verdict, f"{name} = {score:g} (weight {reward['weight']:g})", raw, aspect=name)
