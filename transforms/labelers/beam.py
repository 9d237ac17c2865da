"""The generic Beam wrapper: unpack a rollout row, call the labeler's pure `label(...)`, yield a LABEL_V1 row."""

import logging

import apache_beam as beam

from rewardmill.pipelines.stage import reject
from rewardmill.transforms.io.progress import Progress
from rewardmill.transforms.labelers.base import Label, label_row
from rewardmill.transforms.labelers.cache import LabelCache, record_key

REJECTED = "rejected"
NOT_APPLICABLE = "not_applicable"

log = logging.getLogger("rewardmill")


class LabelRollouts(beam.DoFn):
    """Main output: LABEL_V1 rows. Tagged `rejected`: rows lacking a column the labeler reads. Tagged
    `not_applicable`: (task, rollout_id) of rows whose task the labeler does not handle (its `tasks`).

    A labeler that raises yields a label with verdict `error` and score None (the row is still accounted for).
    With `cache_dir`, labels are read from and written to a per-record LabelCache.
    """

    def __init__(
        self,
        labeler_cls,
        config,
        key: str,
        cache_dir: str | None = None,
        flush_every: int = 64,
        total: int | None = None,
    ):
        self.total = total
        self.progress = None
        self.labeler_cls = labeler_cls
        self.config = config
        self.key = key
        self.cache = LabelCache(cache_dir, labeler_cls, config, flush_every) if cache_dir else None
        self.labeler = None

    def setup(self):
        self.labeler = self.labeler_cls(self.config)
        self.progress = Progress(f"label@{self.key}: rollouts", self.total)

    def process(self, row):
        tasks = getattr(self.labeler, "tasks", None)
        if tasks and row.get("task") not in tasks:
            beam.metrics.Metrics.counter("label", "not_applicable").inc()
            self.progress.update(1)
            yield beam.pvalue.TaggedOutput(NOT_APPLICABLE, (row.get("task"), row.get("rollout_id")))
            return
        reads = self.labeler.reads
        missing = [c for c in reads if c not in row]
        if missing:
            beam.metrics.Metrics.counter("label", "rejected_missing_column").inc()
            yield beam.pvalue.TaggedOutput(
                REJECTED, reject(f"label@{self.key}", row.get("rollout_id"), "missing_column", f"missing {missing}")
            )
            return
        values = tuple(row[c] for c in reads)
        key = record_key(values) if self.cache is not None else None
        label = self.cache.get(key) if self.cache is not None else None
        if label is None:
            try:
                label = self.labeler.label(*values)
            except Exception as exc:  # one bad row never stops the stage
                label = Label(None, 0.0, "error", f"{type(exc).__name__}: {exc}"[:500])
            if self.cache is not None:
                self.cache.put(key, label)
        beam.metrics.Metrics.counter("label", f"verdict_{label.verdict}").inc()
        self.progress.update(1)
        yield label_row(row, self.key, self.labeler.version, label)

    def finish_bundle(self):
        if self.cache is not None:
            self.cache.flush()

    def teardown(self):
        if self.cache is not None:
            self.cache.flush()
            log.info("label@%s: cache %d hits, %d computed", self.key, self.cache.hits, self.cache.misses)
        if self.labeler is not None and hasattr(self.labeler, "teardown"):
            self.labeler.teardown()
