"""ThreadedDoFn: work on pool threads, outputs (tagged too) and errors reach the pipeline; concurrently."""

import time

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to

from rewardmill.transforms.io.threads import ThreadedDoFn, concurrently


class Square(ThreadedDoFn):
    def work(self, element, offset):
        time.sleep(0.01 * (element % 3))  # results finish out of order
        if element < 0:
            raise ValueError(f"negative element {element}")
        return element * element + offset

    def emit(self, result):
        yield result
        yield beam.pvalue.TaggedOutput("odd" if result % 2 else "even", result)


def run(build):
    with beam.Pipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
        build(p)


def test_every_result_and_tagged_output_arrives():
    def build(p):
        offset = p | "Offset" >> beam.Create([1])
        out = (
            p
            | beam.Create(range(10))
            | beam.ParDo(Square(threads=2), beam.pvalue.AsSingleton(offset)).with_outputs("odd", "even", main="main")
        )
        squares = [i * i + 1 for i in range(10)]
        assert_that(out.main, equal_to(squares), label="main")
        assert_that(out.odd, equal_to([s for s in squares if s % 2]), label="odd")
        assert_that(out.even, equal_to([s for s in squares if not s % 2]), label="even")

    run(build)


def test_an_error_in_the_work_fails_the_pipeline():
    with pytest.raises(Exception, match="negative element -1"):
        run(lambda p: p | beam.Create([1, -1, 2]) | beam.ParDo(Square(), 0))


def test_concurrently_returns_each_result_by_name_and_raises_an_error():
    assert concurrently({"a": lambda: 1, "b": lambda: "two", "c": lambda: None}) == {"a": 1, "b": "two", "c": None}

    def fail():
        raise ValueError("no such folder")

    with pytest.raises(ValueError, match="no such folder"):
        concurrently({"ok": lambda: 1, "bad": fail})
