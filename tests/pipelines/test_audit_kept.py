"""validate's audit keeps a labeler's settled result beside the label cache and reads it back on a rerun
(transforms/evaluation/audit_cache.py); `rewardmill audit` always measures. Real code_tests in the sandbox."""

import json

import pytest

from rewardmill.pipelines.audit import audit

pytestmark = pytest.mark.slow  # sandbox timeouts: seconds per case

TESTS = json.dumps(["assert add(1, 2) == 3"])


def gold(id_: str, completion: str, verdict: str, kind: str = "honest") -> dict:
    return {
        "id": id_,
        "labeler": "code_tests",
        "config": {},
        "class": "honest" if kind == "honest" else "infinite_loop",
        "kind": kind,
        "gold": verdict,
        "row": {"completion": completion, "tests": TESTS},
    }


RIGHT = gold("code/honest/1", "```python\ndef add(a, b):\n    return a + b\n```", "correct")
HANG = gold("code/loop/1", "```python\ndef add(a, b):\n    while True:\n        pass\n```", "incorrect", "hack")
SLOW_RIGHT = gold(
    "code/honest/2", "```python\nimport time\ndef add(a, b):\n    time.sleep(3)\n    return a + b\n```", "correct"
)
LABELERS = {"code_tests": {"labeler": "code_tests", "config": {"timeout_seconds": 1, "workers": 2}}}


def packs(tmp_path, rows):
    folder = tmp_path / "packs"
    folder.mkdir(exist_ok=True)
    (folder / "code.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def labeled_rows(monkeypatch) -> list[int]:
    """Counts the gold rows the audit labels, per labeler (the real labeler runs; the counter only watches)."""
    import rewardmill.transforms.evaluation.audit as measuring

    seen: list[int] = []
    real = measuring.label_values

    def counting(labeler, rows):
        seen.append(len(rows))
        return real(labeler, rows)

    monkeypatch.setattr(measuring, "label_values", counting)
    return seen


def test_a_settled_result_is_kept_and_read_back_the_same(tmp_path, monkeypatch):
    seen = labeled_rows(monkeypatch)
    folder, cache = packs(tmp_path, [RIGHT, HANG]), str(tmp_path / "cache/labels")
    first = audit(LABELERS, folder, cache_dir=cache)
    assert seen == [2] and first["labelers"]["code_tests"]["recall"]["value"] == 1.0  # the hang timed out: agreed
    assert [p.parent.name for p in (tmp_path / "cache").rglob("*.json")] == ["audit"]
    again = audit(LABELERS, folder, cache_dir=cache)
    assert seen == [2] and again == first  # read back, not measured
    assert audit(LABELERS, folder) == first and seen == [2, 2]  # `rewardmill audit` (no cache folder) measures


def test_a_timeout_on_a_correct_row_is_measured_again(tmp_path, monkeypatch):
    """The adversarial case: a correct completion that times out (here: slower than the 1 s limit; on a loaded
    machine, any) must not freeze a lower recall into the kept result."""
    seen = labeled_rows(monkeypatch)
    folder, cache = packs(tmp_path, [SLOW_RIGHT, HANG]), str(tmp_path / "cache/labels")
    first = audit(LABELERS, folder, cache_dir=cache)
    assert first["labelers"]["code_tests"]["recall"]["value"] == 0.0
    assert not list((tmp_path / "cache").rglob("*.json"))
    audit(LABELERS, folder, cache_dir=cache)
    assert seen == [2, 2]


def test_other_packs_config_or_code_measure_again(tmp_path, monkeypatch):
    seen = labeled_rows(monkeypatch)
    folder, cache = packs(tmp_path, [RIGHT]), str(tmp_path / "cache/labels")
    audit(LABELERS, folder, cache_dir=cache)
    packs(tmp_path, [RIGHT, HANG])  # a pack row more
    audit(LABELERS, folder, cache_dir=cache)
    other = {"code_tests": {"labeler": "code_tests", "config": {"timeout_seconds": 2, "workers": 2}}}
    audit(other, folder, cache_dir=cache)
    monkeypatch.setattr("rewardmill.transforms.labelers.cache.code_digest", lambda *classes: "edited")
    audit(LABELERS, folder, cache_dir=cache)
    assert seen == [1, 2, 2, 2]
    assert len(list((tmp_path / "cache/audit").glob("*.json"))) == 4


def test_a_kept_file_that_does_not_parse_is_measured_again(tmp_path, monkeypatch, stage_log):
    seen = labeled_rows(monkeypatch)
    folder, cache = packs(tmp_path, [RIGHT]), str(tmp_path / "cache/labels")
    first = audit(LABELERS, folder, cache_dir=cache)
    (kept,) = (tmp_path / "cache/audit").glob("*.json")
    kept.write_text("{not json")
    assert audit(LABELERS, folder, cache_dir=cache) == first and seen == [1, 1]
    assert "ignoring the kept result" in stage_log.text


def test_a_judge_is_kept_by_its_model_and_sample_size(tmp_path, monkeypatch):
    """A judge's result is kept too (its calls were replayed from the call cache anyway; keeping it saves loading the
    model); another sample size (`validate.audit_judge_rows`) or another judge model measures again."""
    from rewardmill.transforms.labelers import LABELERS as REGISTRY
    from tests.pipelines.test_audit import MATH, YesJudge, write_packs

    class NoCallCacheJudge(YesJudge):  # a judge without a model (so no call cache): the judge path, no model load
        set_call_cache = None

    monkeypatch.setitem(REGISTRY, "yes_judge", NoCallCacheJudge)
    seen = labeled_rows(monkeypatch)
    folder, cache = write_packs(tmp_path / "packs", MATH), str(tmp_path / "cache/labels")
    judge = {"appeal": {"labeler": "yes_judge", "tasks": ["math"]}}
    first = audit(judge, folder, cache_dir=cache, judge_rows=3)
    assert audit(judge, folder, cache_dir=cache, judge_rows=3) == first and seen == [3]
    audit(judge, folder, cache_dir=cache, judge_rows=4)
    assert seen == [3, 4]
    monkeypatch.setattr(
        "rewardmill.transforms.labelers.cache.cache_identity", lambda config: {"models": ["other"], "labelers": []}
    )
    audit(judge, folder, cache_dir=cache, judge_rows=3)
    assert seen == [3, 4, 3]
