import json
import os
import pickle

import pytest

from rewardmill.transforms.io import segments
from rewardmill.transforms.io.segments import SegmentStore


def test_put_flush_every_and_reload(tmp_path):
    store = SegmentStore(tmp_path, "value", flush_every=2)
    assert store.get("a") is None and store.misses == 1
    store.put("a", {"x": 1})
    assert not list(tmp_path.glob("*.jsonl")) and store.pending == 1  # buffered until flush_every
    store.put("b", {"x": 2})
    assert len(list(tmp_path.glob("*.jsonl"))) == 1 and store.pending == 0
    store.put("c", {"x": 3})
    store.flush()
    assert len(list(tmp_path.glob("*.jsonl"))) == 2  # one new segment per flush, never a rewrite
    fresh = SegmentStore(tmp_path, "value")
    assert not fresh.loaded
    assert fresh.get("b") == {"x": 2} and fresh.hits == 1 and len(fresh) == 3 and "c" in fresh
    line = json.loads(next(tmp_path.glob("*.jsonl")).read_text().splitlines()[0])
    assert set(line) == {"key", "value"}


def test_unflushed_entries_are_lost_flushed_ones_survive(tmp_path):
    store = SegmentStore(tmp_path, flush_every=2)
    for key in "abc":
        store.put(key, {"k": key})
    del store  # what kill -9 leaves: no close, no flush
    fresh = SegmentStore(tmp_path)
    assert fresh.get("a") and fresh.get("b") and fresh.get("c") is None


def test_torn_and_malformed_lines_are_skipped(tmp_path):
    store = SegmentStore(tmp_path, flush_every=1)
    store.put("good", {"v": 1})
    segment = next(tmp_path.glob("*.jsonl"))
    segment.write_text(segment.read_text() + '{"key": "other"}\n["not a dict"]\nnot json\n{"key": "torn", "val')
    fresh = SegmentStore(tmp_path)
    assert len(fresh) == 1 and fresh.get("good") == {"v": 1} and fresh.get("torn") is None


def test_decode_rejections_are_skipped_like_torn_lines(tmp_path):
    SegmentStore(tmp_path, flush_every=1).put("k", {"n": "not a number"})
    store = SegmentStore(tmp_path, decode=lambda d: float(d["n"]))
    assert store.get("k") is None and len(store) == 0


def test_segment_writes_are_atomic(tmp_path, monkeypatch):
    store = SegmentStore(tmp_path, flush_every=10)
    store.put("a", {"v": 1})

    def crash(src, dst):  # die between writing the temp file and renaming it
        raise OSError("killed")

    monkeypatch.setattr(segments.os, "replace", crash)
    with pytest.raises(OSError):
        store.flush()
    monkeypatch.setattr(segments.os, "replace", os.replace)
    assert not list(tmp_path.glob("*.jsonl"))  # readers never see a half-written segment
    assert [p.name.startswith(".") for p in tmp_path.iterdir()] == [True]
    assert len(SegmentStore(tmp_path)) == 0


def test_encode_runs_at_put_so_bad_values_fail_at_their_caller(tmp_path):
    store = SegmentStore(tmp_path)
    with pytest.raises(TypeError):
        store.put("k", {"v": object()})
    value = {"v": [1]}
    store.put("ok", value)
    value["v"].append(2)  # later mutation does not reach the stored line
    store.flush()
    assert SegmentStore(tmp_path).get("ok") == {"v": [1]}


def test_pickle_ships_settings_not_state(tmp_path):
    store = SegmentStore(tmp_path, "label", flush_every=5)
    store.put("k", {"v": 1})
    store.get("k")
    copy = pickle.loads(pickle.dumps(store))
    assert not copy.loaded and copy.pending == 0 and copy.hits == 0
    assert (copy.directory, copy.field, copy.flush_every) == (str(tmp_path), "label", 5)


def test_flush_every_must_be_positive(tmp_path):
    with pytest.raises(ValueError):
        SegmentStore(tmp_path, flush_every=0)
