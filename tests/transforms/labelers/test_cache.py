import pickle
from pathlib import Path

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
    # code that timed out is incorrect, but maybe only because the machine was loaded: the next run tries again
    cache.put("c", Label(0.0, 0.9, "incorrect", "test 0 timed out", cacheable=False))
    assert not list(tmp_path.rglob("*.jsonl")) and cache.get("a") is None and cache.get("c") is None


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


def _judge_config(model: str, **backend):
    from rewardmill.transforms.judges.client import BackendConfig
    from rewardmill.transforms.labelers.reference_judge import ReferenceJudgeConfig

    return ReferenceJudgeConfig(backend=BackendConfig(model=model, **backend))


def _write_policy(folder, fingerprint: str) -> None:
    import json

    folder.mkdir(exist_ok=True)
    (folder / "rewardmill_policy.json").write_text(
        json.dumps({"name": "m", "source": "s", "fingerprint": fingerprint})
    )


def test_namespace_follows_the_judge_models_fingerprint_not_its_path(tmp_path):
    from rewardmill.transforms.labelers.reference_judge import ReferenceJudge

    folder = tmp_path / "policy"
    _write_policy(folder, "a" * 64)
    before = namespace(ReferenceJudge, _judge_config(str(folder)))
    assert namespace(ReferenceJudge, _judge_config(str(folder))) == before  # same model, same labels
    _write_policy(folder, "b" * 64)  # another model at the same path (model.source changed, the stage reran)
    assert namespace(ReferenceJudge, _judge_config(str(folder))) != before


def test_namespace_follows_an_endpoints_served_fingerprint():
    from rewardmill.transforms.labelers.reference_judge import ReferenceJudge

    served = dict(kind="openai", base_url="http://h/v1")
    names = {namespace(ReferenceJudge, _judge_config("m", **served, fingerprint=f)) for f in (None, "rev-1", "rev-2")}
    assert len(names) == 3


def test_namespace_follows_inner_labeler_versions(monkeypatch):
    from rewardmill.transforms.labelers.reference_judge import AppealSpec, ReferenceJudge, ReferenceJudgeConfig
    from rewardmill.transforms.labelers.tiered import TieredConfig, TieredVerifier, TierSpec

    appeal = ReferenceJudgeConfig(appeal=AppealSpec("math_answer", {"timeout_seconds": 5}))
    tiers = TieredConfig(tiers=(TierSpec(labeler="math_answer", config={}),))
    before = (namespace(ReferenceJudge, appeal), namespace(TieredVerifier, tiers))
    monkeypatch.setattr(MathAnswerVerifier, "version", "99")  # the inner verifier changed what it returns
    after = (namespace(ReferenceJudge, appeal), namespace(TieredVerifier, tiers))
    assert before[0] != after[0] and before[1] != after[1]


def test_a_change_to_any_file_a_labeler_runs_is_a_new_namespace(monkeypatch):
    """A fix to a verifier's helper relabels without a version bump: the namespace keys on the code it runs."""
    from rewardmill.transforms.labelers import code_digest
    from rewardmill.transforms.labelers.reference_judge import AppealSpec, ReferenceJudge, ReferenceJudgeConfig

    runs = code_digest.closure(code_digest.source_file(MathAnswerVerifier))
    helper = code_digest.ROOT / "transforms/labelers/math_commitment.py"
    assert helper in runs and code_digest.ROOT / "transforms/labelers/code_tests.py" not in runs
    before = namespace(MathAnswerVerifier, MathAnswerConfig())
    appeal = ReferenceJudgeConfig(appeal=AppealSpec("math_answer", {"timeout_seconds": 5}))
    appeal_before = namespace(ReferenceJudge, appeal)
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda p: real(p) + (b"# edited" if p == helper else b""))
    assert namespace(MathAnswerVerifier, MathAnswerConfig()) != before
    assert namespace(ReferenceJudge, appeal) != appeal_before  # the appeal re-runs math_answer: its code counts too
