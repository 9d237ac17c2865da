import pickle
import threading
import time

import pytest

from rewardmill.transforms.labelers import LABELERS, get_labeler_class
from rewardmill.transforms.labelers.main_thread import HardTimeout, MainThreadRunner
from rewardmill.transforms.labelers.math_answer import MathAnswerConfig, MathAnswerVerifier, verify_answer


@pytest.mark.parametrize(
    ("completion", "reference", "verdict", "score"),
    [
        ("so the answer is \\boxed{12}", "12", "correct", 1.0),  # boxed
        ("7 + 5 = 12", "12", "correct", 1.0),  # last number, no anchor
        ("The total is 1,000 coins.", "1000", "correct", 1.0),  # thousands separator
        ("$\\frac{1}{3}$", "12/36", "correct", 1.0),  # equivalent fractions
        ("\\boxed{0.5}", "\\frac{1}{2}", "correct", 1.0),  # decimal vs LaTeX fraction
        ("7 + 5 = 13", "12", "incorrect", 0.0),  # wrong value
        ("I don't know.", "3", "incorrect", 0.0),  # no answer at all: wrong, but says so
        ("\\boxed{12}", "\\frac{", "abstain", None),  # gold does not parse: never reward
        ("\\boxed{12}", "", "abstain", None),  # no gold
        ("\\boxed{12}", None, "abstain", None),  # no gold
        ("", "5", "incorrect", 0.0),  # empty completion
    ],
)
def test_verdict_table(completion, reference, verdict, score):
    label = MathAnswerVerifier().label(completion, reference)
    assert (label.verdict, label.score) == (verdict, score)
    assert label.rationale  # every verdict says why


def test_correct_is_more_confident_than_incorrect_and_abstain_has_none():
    v = MathAnswerVerifier()
    assert v.label("\\boxed{2}", "2").confidence > v.label("\\boxed{3}", "2").confidence > 0
    assert v.label("\\boxed{2}", None).confidence == 0.0


def test_extracted_answer_is_kept_raw():
    assert verify_answer("so x = \\boxed{42}", "42", 5).raw == "42"


def test_works_from_a_worker_thread():
    """Beam calls DoFns from worker threads, where signal-based timeouts cannot run directly."""
    v = MathAnswerVerifier()
    out = []
    t = threading.Thread(target=lambda: out.append(v.label("\\boxed{7}", "7")))
    t.start()
    t.join(120)
    v.teardown()
    assert out and out[0].verdict == "correct"


def test_hard_timeout_kills_a_hung_call_from_a_thread():
    runner = MainThreadRunner()
    errors = []

    def call():
        try:
            runner.call(time.sleep, (30,), hard_timeout=3)
        except HardTimeout as exc:
            errors.append(exc)

    start = time.monotonic()
    t = threading.Thread(target=call)
    t.start()
    t.join(60)
    assert errors and time.monotonic() - start < 30
    assert runner._pool is None  # killed; the next call starts a fresh process


def test_registry_and_pickle_round_trip():
    assert get_labeler_class("math_answer") is MathAnswerVerifier is LABELERS["math_answer"]
    with pytest.raises(KeyError, match="unknown labeler"):
        get_labeler_class("nope")
    v = pickle.loads(pickle.dumps(MathAnswerVerifier(MathAnswerConfig(timeout_seconds=2))))
    assert v.config.timeout_seconds == 2 and v.label("\\boxed{1}", "1").verdict == "correct"


def test_label_many_matches_label_in_order():
    rows = [("\\boxed{4}", "4"), ("\\boxed{5}", "4"), ("\\boxed{1}", None), ("1/2", "0.5")]
    v = MathAnswerVerifier(MathAnswerConfig(workers=2))
    try:
        assert v.label_many(rows) == [v.label(*row) for row in rows]
    finally:
        v.teardown()
