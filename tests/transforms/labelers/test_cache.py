import pickle

from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.cache import LabelCache, namespace, record_key
from rewardmill.transforms.labelers.math_answer import MathAnswerConfig, MathAnswerVerifier

GOOD = Label(1.0, 0.99, "correct", "ok", "4")


def test_put_flush_reload(tmp_path):
    cache = LabelCache(tmp_path, MathAnswerVerifier, MathAnswerConfig(), flush_every=2)
    key = record_key(("\\boxed{4}", "4"))
    assert cache.get(key) is None
    cache.put(key, GOOD)
    assert not list(tmp_path.rglob("*.jsonl"))  # buffered until flush_every
    cache.put(record_key(("x", "4")), Label(0.0, 0.86, "incorrect"))
    assert len(list(tmp_path.rglob("*.jsonl"))) == 1
    fresh = LabelCache(tmp_path, MathAnswerVerifier, MathAnswerConfig())
    assert fresh.get(key) == GOOD and fresh.hits == 1


def test_timeouts_and_errors_are_not_cached(tmp_path):
    cache = LabelCache(tmp_path, MathAnswerVerifier, MathAnswerConfig(), flush_every=1)
    cache.put("a", Label(None, 0.0, "timeout", "slow"))
    cache.put("b", Label(None, 0.0, "error", "boom"))
    assert not list(tmp_path.rglob("*.jsonl")) and cache.get("a") is None


def test_namespace_separates_configs_and_versions():
    class V2(MathAnswerVerifier):
        version = "2"

    base = namespace(MathAnswerVerifier, MathAnswerConfig())
    assert base == namespace(MathAnswerVerifier, MathAnswerConfig())
    assert base != namespace(MathAnswerVerifier, MathAnswerConfig(timeout_seconds=9))
    assert base != namespace(V2, MathAnswerConfig())


def test_torn_segment_lines_are_recomputed_not_fatal(tmp_path):
    cache = LabelCache(tmp_path, MathAnswerVerifier, MathAnswerConfig(), flush_every=1)
    cache.put("k", GOOD)
    segment = next(tmp_path.rglob("*.jsonl"))
    segment.write_text(segment.read_text() + '{"key": "torn", "lab')
    fresh = LabelCache(tmp_path, MathAnswerVerifier, MathAnswerConfig())
    assert fresh.get("k") == GOOD and fresh.get("torn") is None


def test_record_key_depends_on_values_only():
    assert record_key(("a", "b")) == record_key(("a", "b")) != record_key(("a", "c"))


def test_pickle_ships_settings_not_state(tmp_path):
    cache = LabelCache(tmp_path, MathAnswerVerifier, MathAnswerConfig())
    cache.put("k", GOOD)
    copy = pickle.loads(pickle.dumps(cache))
    assert copy._pending == [] and copy._labels is None and copy.directory == cache.directory
