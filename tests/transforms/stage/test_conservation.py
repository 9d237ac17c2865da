"""Conservation: a stage whose ids do not reconcile fails, naming itself and the count, and writes nothing."""

import zlib

import apache_beam as beam
import pytest

from rewardmill.pipelines import assemble, label, prompts
from rewardmill.transforms.aggregate.beam import BucketShard
from rewardmill.transforms.io.parquet import ReadStageOutput
from rewardmill.transforms.stage.conservation import ConservationError, reconcile
from tests.conftest import only_labelers, tiny_params
from tests.pipelines.test_label_and_assemble import ROLLOUTS, rollouts_dir  # noqa: F401  (the fixture)


@pytest.mark.parametrize(
    "inputs, outputs, rejects, not_applicable, allow_empty, error",
    [
        (10, 7, 3, 0, False, None),  # every input accounted for
        (10, 0, 0, 10, False, None),  # all routed elsewhere (a code labeler on math rollouts): a valid empty output
        (0, 0, 0, 0, False, None),  # nothing in, nothing out
        (10, 6, 3, 0, False, r"s1: 10 input rows but 6 in the output, 3 rejected: 1 missing"),
        (10, 8, 3, 0, False, r"1 more than came in"),  # duplicated ids
        (10, 0, 10, 0, False, r"none of 10 input rows reached the output"),  # all rejected: never a success
        (10, 0, 10, 0, True, None),  # where that is legitimate (rl rows when every prompt is flagged)
        (10, 0, 0, 0, True, r"10 missing"),  # allow_empty never excuses a loss
    ],
)
def test_reconcile(inputs, outputs, rejects, not_applicable, allow_empty, error):
    kwargs = dict(inputs=inputs, outputs=outputs, rejects=rejects, not_applicable=not_applicable)
    if error is None:
        reconcile("s1", **kwargs, allow_empty=allow_empty)
    else:
        with pytest.raises(ConservationError, match=error):
            reconcile("s1", **kwargs, allow_empty=allow_empty)


class _ReadAndDrop(beam.PTransform):
    """Reads a stage output like ReadStageOutput, then silently drops every third row (a runner losing rows)."""

    def __init__(self, directory, schema=None):
        super().__init__()
        self.read = ReadStageOutput(directory, schema)

    def expand(self, pbegin):
        return (
            pbegin
            | "Read" >> self.read
            | "Drop" >> beam.Filter(lambda row: zlib.crc32(row["rollout_id"].encode()) % 3)
        )


def lose_rows(monkeypatch, module):
    def read_and_drop(directory, schema=None):
        return _ReadAndDrop(directory, schema)

    monkeypatch.setattr(module, "ReadStageOutput", read_and_drop)


@pytest.mark.slow
def test_a_label_stage_that_loses_rows_fails_and_writes_nothing(tmp_path, params_file, rollouts_dir, monkeypatch):  # noqa: F811
    params_file(only_labelers(tiny_params(), ("math_answer",)))
    out = tmp_path / "data/labels/math_answer"
    label.main(["math_answer", "--rollouts", str(rollouts_dir), "--out", str(out)])  # reconciles when nothing is lost
    before = sorted(p.name for p in out.iterdir())
    lose_rows(monkeypatch, label)
    with pytest.raises(ConservationError, match=rf"label@math_answer: {len(ROLLOUTS)} input rollouts but .* missing"):
        label.main(["math_answer", "--rollouts", str(rollouts_dir), "--out", str(out)])
    assert sorted(p.name for p in out.iterdir()) == before  # the last good output stays, nothing half-written
    assert not list(out.parent.glob("*.tmp-*"))


def test_a_prompts_stage_that_loses_rows_fails(tmp_path, params_file, monkeypatch):
    params_file(tiny_params())

    class Drop(beam.DoFn):
        def process(self, element):
            if zlib.crc32(str(element[2]).encode()) % 2:  # by the record's row id (not hash(): salted per process)
                yield element

    monkeypatch.setattr(prompts, "Normalize", lambda *args, _real=prompts.Normalize: _Chain(Drop(), _real(*args)))
    with pytest.raises(ConservationError, match=r"prompts: \d+ input source records but .* missing"):
        prompts.main(["--out", str(tmp_path / "prompts")])
    assert not (tmp_path / "prompts").exists()


class _Chain(beam.DoFn):
    def __init__(self, first: beam.DoFn, then: beam.DoFn):
        self.first = first
        self.then = then

    def process(self, element):
        for kept in self.first.process(element):
            yield from self.then.process(kept)


@pytest.mark.slow
def test_assemble_fails_when_the_buckets_lose_rollouts(tmp_path, params_file, rollouts_dir, monkeypatch):  # noqa: F811
    params = only_labelers(tiny_params(), ("math_answer",))
    params.pop("steps")
    params_file(params)
    labels = tmp_path / "data/labels"
    label.main(["math_answer", "--rollouts", str(rollouts_dir), "--out", str(labels / "math_answer")])
    real = BucketShard.process

    def drop_half(self, path):
        for bucket, part in real(self, path):
            if bucket % 2 == 0:
                yield bucket, part

    monkeypatch.setattr(BucketShard, "process", drop_half)
    out = tmp_path / "datasets"
    with pytest.raises(ConservationError, match=r"assemble: \d+ input rollouts in the buckets but .* missing"):
        assemble.main(["--rollouts", str(rollouts_dir), "--labels", str(labels), "--out", str(out)])
    assert not out.exists()


def test_a_labeler_that_errs_on_every_row_fails_the_stage(tmp_path, params_file, rollouts_dir, monkeypatch):  # noqa: F811
    """A broken environment (here: math-verify's helper process cannot start) must not pass as a column of errors."""
    from rewardmill.transforms.labelers import main_thread

    def cannot_start(self, *args, **kwargs):
        raise AssertionError("daemonic processes are not allowed to have children")

    for method in ("map", "call"):  # the batch, then the row-by-row retry
        monkeypatch.setattr(main_thread.MainThreadRunner, method, cannot_start)
    params_file(only_labelers(tiny_params(), ("math_answer",)))
    out = tmp_path / "labels"
    with pytest.raises(ConservationError, match=r"no label has a score and \d+ of \d+ are errors.*daemonic processes"):
        label.main(["math_answer", "--rollouts", str(rollouts_dir), "--out", str(out)])
    assert not out.exists()
