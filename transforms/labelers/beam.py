"""The generic Beam wrapper: unpack a rollout row, call the labeler's pure `label(...)`, yield a LABEL_V1 row."""

import apache_beam as beam

from rewardmill.pipelines.stage import reject
from rewardmill.transforms.labelers.base import label_row

REJECTED = "rejected"


class LabelRollouts(beam.DoFn):
    """Main output: LABEL_V1 rows. Tagged `rejected`: rows lacking a column the labeler reads.

    A labeler that raises yields a label with verdict `error` and score None (the row is still accounted for).
    """

    def __init__(self, labeler_cls, config, key: str):
        self.labeler_cls = labeler_cls
        self.config = config
        self.key = key
        self.labeler = None

    def setup(self):
        self.labeler = self.labeler_cls(self.config)

    def process(self, row):
        from rewardmill.transforms.labelers.base import Label

        missing = [c for c in self.labeler.reads if c not in row]
        if missing:
            beam.metrics.Metrics.counter("label", "rejected_missing_column").inc()
            yield beam.pvalue.TaggedOutput(
                REJECTED, reject(f"label@{self.key}", row.get("rollout_id"), "missing_column", f"missing {missing}")
            )
            return
        try:
            label = self.labeler.label(*(row[c] for c in self.labeler.reads))
        except Exception as exc:  # one bad row never stops the stage
            label = Label(None, 0.0, "error", f"{type(exc).__name__}: {exc}"[:500])
        beam.metrics.Metrics.counter("label", f"verdict_{label.verdict}").inc()
        yield label_row(row, self.key, self.labeler.version, label)

    def teardown(self):
        if self.labeler is not None and hasattr(self.labeler, "teardown"):
            self.labeler.teardown()
