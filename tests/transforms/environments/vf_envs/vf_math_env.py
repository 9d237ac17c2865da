"""A single-turn verifiers environment (verifiers 0.4's v1 stack) for the tests: one-digit sums, a two-function rubric.

`correct` (weight 1.0): the last integer of the reply is the sum. `brief` (weight 0.5): the reply has at most
`max_words` words. Importable by id `vf_math_env` with this folder on the path."""

import re

import verifiers.v1 as vf

SYSTEM = "Answer with the number only."


class SumData(vf.TaskData):
    answer: int


class SumTaskConfig(vf.TaskConfig):
    max_words: int = 8


class SumTask(vf.Task[SumData, vf.State, SumTaskConfig]):
    @vf.reward(weight=1.0)
    async def correct(self, trace: vf.Trace) -> float:
        numbers = re.findall(r"-?\d+", trace.last_reply)
        return float(bool(numbers) and int(numbers[-1]) == self.data.answer)

    @vf.reward(weight=0.5)
    async def brief(self, trace: vf.Trace) -> float:
        return float(len(trace.last_reply.split()) <= self.config.max_words)


class SumConfig(vf.TasksetConfig):
    task: SumTaskConfig = SumTaskConfig()
    count: int = 4


class SumTaskset(vf.Taskset[SumTask, SumConfig]):
    def load(self) -> list[SumTask]:
        pairs = [(1 + i % 4, 2 + (3 * i) % 5) for i in range(self.config.count)]
        return [
            SumTask(SumData(idx=i, prompt=f"What is {a} + {b}?", system_prompt=SYSTEM, answer=a + b), self.config.task)
            for i, (a, b) in enumerate(pairs)
        ]


__all__ = ["SumTaskset"]
