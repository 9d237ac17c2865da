"""The generic Beam wrapper: unpack a rollout row, call the labeler's pure `label(...)`, yield a LABEL_V1 row."""

import logging

import apache_beam as beam

from rewardmill.transforms.io.progress import Progress
from rewardmill.transforms.labelers.base import Label, as_labels, label_row, uses_groups
from rewardmill.transforms.labelers.cache import LabelCache, call_cache_dir, label_group_with_cache, label_with_cache
from rewardmill.transforms.labelers.contract import CallCachingLabeler, declared_tasks, has_hook, tear_down, usage_of
from rewardmill.transforms.planning.budget import BUDGET_REASON
from rewardmill.transforms.sampling.reasoning import BLOCKED, blocked_reason
from rewardmill.transforms.stage.outputs import reject

REJECTED = "rejected"
USAGE_NAMESPACE = "judge"
NOT_APPLICABLE = "not_applicable"

log = logging.getLogger("rewardmill")


class LabelAll(beam.PTransform):
    """rollout rows -> LabelRollouts outputs, in batches so labelers with `label_many` run rows in parallel.

    A labeler with `label_group(rows) -> list[Label]` gets the rollouts of one prompt at a time instead (sorted
    by rollout_id), for judgments that compare rollouts (pairwise judges)."""

    def __init__(self, dofn: "LabelRollouts", batch_size: int = 32):
        super().__init__()
        self.dofn = dofn
        self.batch_size = batch_size

    def expand(self, rows):
        if uses_groups(self.dofn.labeler_cls, self.dofn.config):
            # Group labelers (pairwise judges) see all rollouts of a prompt at once.
            grouped = rows | "Key by prompt" >> beam.Map(lambda r: (r["prompt_id"], r)) | "Group" >> beam.GroupByKey()
            batched = grouped | "One group" >> beam.Map(lambda kv: [kv])
        else:
            # Small batches: a killed stage loses at most one batch of work (the cache is written per batch).
            batched = rows | "Batch" >> beam.BatchElements(
                min_batch_size=min(8, self.batch_size), max_batch_size=self.batch_size
            )
        return batched | "Label" >> beam.ParDo(self.dofn).with_outputs(REJECTED, NOT_APPLICABLE, main="labels")


class LabelRollouts(beam.DoFn):
    """Main output: LABEL_V1 rows. Tagged `rejected`: rows lacking a column the labeler reads. Tagged
    `not_applicable`: (task, rollout_id) of rows whose task the labeler does not handle (its `tasks`).

    A labeler that raises yields a label with verdict `error` and score None (the row is still accounted for). A
    label with a `reject_reason` (a judge call that failed beyond its retries) goes to `rejected` instead, uncached.
    Judge labelers' calls and tokens are counted in Beam counters (namespace `judge`) for the stage's metrics.
    With `cache_dir`, labels are read from and written to a per-record LabelCache. `tasks` overrides the
    labeler's own `tasks` (params `labelers.<key>.tasks`).
    """

    def __init__(
        self,
        labeler_cls,
        config,
        key: str,
        cache_dir: str | None = None,
        flush_every: int = 64,
        total: int | None = None,
        tasks: tuple[str, ...] | None = None,
    ):
        self.total = total
        self.tasks = tuple(tasks) if tasks is not None else None
        self.progress = None
        self.labeler_cls = labeler_cls
        self.config = config
        self.key = key
        self.cache = LabelCache(cache_dir, labeler_cls, config, flush_every) if cache_dir else None
        self.cache_dir = cache_dir
        self.labeler = None
        self._usage_seen: dict[str, int] = {}
        self.excluded: frozenset[str] = frozenset()  # prompts left out by the stage's budget
        self.budget_note = ""

    def over_budget(self, prompt_ids: frozenset[str], why: str) -> None:
        """Reject the rollouts of `prompt_ids` with reason `budget` (`why`: which budget) instead of labeling them."""
        self.excluded, self.budget_note = frozenset(prompt_ids), why

    def setup(self):
        self.labeler = self.labeler_cls(self.config)
        if self.cache_dir and has_hook(self.labeler, CallCachingLabeler):
            # Model-based labelers also cache every model call (by content hash) beside the label cache.
            self.labeler.set_call_cache(call_cache_dir(self.cache_dir))
        self.progress = Progress(f"label@{self.key}", self.total, unit="rollout")

    def process(self, element):
        """`element` is one rollout row, a list of rows (after BatchElements), or [(prompt_id, rows)] for labelers
        with `label_group`."""
        if isinstance(element, list) and element and isinstance(element[0], tuple):
            yield from self._process_group(sorted(element[0][1], key=lambda r: r["rollout_id"]))
            return
        rows = element if isinstance(element, list) else [element]
        kept = []
        for row in rows:
            skip = self._skip(row)
            if skip is not None:
                yield skip
            else:
                kept.append(row)
        kept = yield from self._no_credit(kept)
        values = [tuple(row[c] for c in self.labeler.reads) for row in kept]
        labels = label_with_cache(self.labeler, self.cache, values)
        yield from self._emit(kept, {id(row): label for row, label in zip(kept, labels, strict=True)})

    def _skip(self, row: dict):
        """The tagged output for a row this labeler does not label (other task, missing column), else None."""
        tasks = self.tasks if self.tasks is not None else declared_tasks(self.labeler)
        # A row without a task (a plain file labeled with `rewardmill label`) is not routed.
        if tasks and row.get("task") is not None and row["task"] not in tasks:
            beam.metrics.Metrics.counter("label", "not_applicable").inc()
            self.progress.update(1)
            return beam.pvalue.TaggedOutput(NOT_APPLICABLE, (row.get("task"), row.get("rollout_id")))
        if row.get("prompt_id") in self.excluded:
            beam.metrics.Metrics.counter("label", "rejected_budget").inc()
            self.progress.update(1)
            detail = f"{self.budget_note} was reached before this prompt; a rerun with a larger budget labels it"
            return beam.pvalue.TaggedOutput(
                REJECTED, reject(f"label@{self.key}", row.get("rollout_id"), BUDGET_REASON, detail)
            )
        missing = [c for c in self.labeler.reads if c not in row]
        if missing:
            beam.metrics.Metrics.counter("label", "rejected_missing_column").inc()
            return beam.pvalue.TaggedOutput(
                REJECTED, reject(f"label@{self.key}", row.get("rollout_id"), "missing_column", f"missing {missing}")
            )
        return None

    def _no_credit(self, rows: list[dict]):
        """Label a rollout whose reasoning was cut off before its answer, or left no answer after it
        (`reasoning_status`, rollouts.reasoning), incorrect with score 0.0 and the reason, whatever the labeler: no
        labeler is asked, so none can credit it (a reward model would score the empty answer like any other). The rows
        it leaves are returned."""
        blocked = [row for row in rows if row.get("reasoning_status") in BLOCKED]
        if not blocked:
            return rows
        for row in blocked:
            beam.metrics.Metrics.counter("label", "no_credit_reasoning").inc()
            self.progress.update(1)
            why = blocked_reason(row["reasoning_status"])
            yield label_row(row, self.key, self.labeler.version, Label(0.0, 1.0, "incorrect", why))
        return [row for row in rows if row.get("reasoning_status") not in BLOCKED]

    def _emit(self, rows: list[dict], done: dict):
        self._count_usage()
        for row in rows:
            result = done.get(id(row))
            if result is None:
                continue
            self.progress.update(1)
            labels = as_labels(result)  # one label, or one per aspect
            failed = next((label for label in labels if label.reject_reason is not None), None)
            if failed is not None:
                beam.metrics.Metrics.counter("label", f"rejected_{failed.reject_reason}").inc()
                stage = f"label@{self.key}"
                yield beam.pvalue.TaggedOutput(
                    REJECTED, reject(stage, row.get("rollout_id"), failed.reject_reason, failed.rationale)
                )
                continue
            for label in labels:
                beam.metrics.Metrics.counter("label", f"verdict_{label.verdict}").inc()
                yield label_row(row, self.key, self.labeler.version, label)

    def _count_usage(self) -> None:
        """Judge calls and tokens since the last batch, as Beam counters (summed over workers by the runner)."""
        usage = usage_of(self.labeler)
        for name, total in (usage or {}).items():
            delta = total - self._usage_seen.get(name, 0)
            if delta:
                beam.metrics.Metrics.counter(USAGE_NAMESPACE, name).inc(delta)
            self._usage_seen[name] = total

    def _process_group(self, rows: list[dict]):
        """All rollouts of one prompt through `label_group`. Each label is cached under the row's own values plus
        the values of its whole group (a pairwise judgment depends on the other answers too)."""
        kept = []
        for row in rows:
            skip = self._skip(row)
            if skip is not None:
                yield skip
            else:
                kept.append(row)
        kept = yield from self._no_credit(kept)
        if not kept:
            return
        values = [tuple(row[c] for c in self.labeler.reads) for row in kept]
        labels = label_group_with_cache(self.labeler, self.cache, values)
        yield from self._emit(kept, {id(row): label for row, label in zip(kept, labels, strict=True)})

    def finish_bundle(self):
        if self.cache is not None:
            self.cache.flush()

    def teardown(self):
        if self.cache is not None:
            self.cache.flush()
            log.info("label@%s: cache %d hits, %d computed", self.key, self.cache.hits, self.cache.misses)
        usage = usage_of(self.labeler)
        if usage is not None:
            log.info("label@%s: judge calls %s", self.key, usage)
        if self.labeler is not None:
            tear_down(self.labeler)
