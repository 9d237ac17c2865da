"""The rubrics stage's Beam pieces: group each chosen prompt with its rollouts, chunk, and write rubrics.

`WriteRubrics` is the thin wrapper around RubricWriter: it takes a chunk of (prompt, rollouts) pairs, calls the
writer once (so the writer's requests go to the model as one batch), and yields rubric rows on the main output and
rejects on REJECTED, counting both.
"""

import apache_beam as beam

from rewardmill.transforms.io.progress import Progress
from rewardmill.transforms.rubrics.learner import learn
from rewardmill.transforms.rubrics.writer import REJECT, RubricWriter

NAMESPACE = "rubrics"
REJECTED = "rejected"
CALL_COUNTERS = ("requests", "cache_hits", "cache_misses", "prompt_tokens", "completion_tokens")


def with_rollouts(keyed: tuple[str, dict]) -> tuple[dict, list[dict]]:
    """(prompt_id, {prompt: [row], rollouts: [rows]}) -> (prompt, its rollouts sorted by id)."""
    _, grouped = keyed
    (prompt,) = grouped["prompt"]
    return prompt, sorted(grouped["rollouts"], key=lambda r: r["rollout_id"])


class WriteRubrics(beam.DoFn):
    def __init__(self, writer: RubricWriter, total: int | None = None):
        self.writer = writer
        self.total = total
        self.written = beam.metrics.Metrics.counter(NAMESPACE, "rubrics")
        self.rejected = beam.metrics.Metrics.counter(NAMESPACE, "rejected")

    def setup(self):
        self.progress = Progress(self.writer.stage, self.total, unit="prompts")

    def process(self, chunk: list[tuple[dict, list[dict]]]):
        before = self.writer.usage()
        written = learn(self.writer, chunk) if self.writer.params.mode == "autorule" else self.writer.write(chunk)
        for kind, row in written:
            if kind == REJECT:
                self.rejected.inc()
                yield beam.pvalue.TaggedOutput(REJECTED, row)
            else:
                self.written.inc()
                yield row
        self.writer.flush()
        after = self.writer.usage()
        for key in CALL_COUNTERS:  # this run's writer calls: sent, and served by the call cache
            if after.get(key, 0) > before.get(key, 0):
                beam.metrics.Metrics.counter(NAMESPACE, key).inc(after[key] - before.get(key, 0))
        self.progress.update(len(chunk))

    def teardown(self):
        self.writer.close()
