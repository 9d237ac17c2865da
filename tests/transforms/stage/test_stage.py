"""transforms/stage/: what every stage shares. Here: Beam logs a failing DoFn's exception with its traceback before
re-raising it; a user's mistake then ends as the CLI's one line only, while a bug keeps Beam's logged traceback."""

import logging

import apache_beam as beam
import pytest

from rewardmill.transforms.errors import UserError
from rewardmill.transforms.stage.runner import BEAM_ERROR_LOGGER, BeamConfig, run_pipeline, setup_logging


class _Raise(beam.DoFn):
    def __init__(self, error: Exception):
        self.error = error

    def process(self, element):
        raise self.error


@pytest.mark.parametrize(
    "error, logged",
    [
        # a user's mistake found inside a worker: the CLI prints it as one line, Beam's traceback would bury it
        (UserError("prompts.jsonl: not there"), False),
        # a missing file is a user error too (the CLI's is_user_error)
        (FileNotFoundError("models/policy: missing"), False),
        # a bug: the traceback is what a developer needs
        (RuntimeError("boom"), True),
    ],
)
def test_beam_logs_a_traceback_only_for_a_bug(caplog, error, logged):
    setup_logging()
    with caplog.at_level(logging.ERROR, logger=BEAM_ERROR_LOGGER), pytest.raises(type(error)):
        run_pipeline(lambda p: p | beam.Create([1]) | beam.ParDo(_Raise(error)), BeamConfig())
    tracebacks = [r for r in caplog.records if r.name == BEAM_ERROR_LOGGER and r.exc_info]
    assert bool(tracebacks) == logged, [r.getMessage() for r in caplog.records]
