"""Prompts source kind `verifiers`: a verifiers environment's taskset as prompt records, with its task kept."""

import json
from pathlib import Path

import pytest

from rewardmill.transforms.sources import verifiers as source
from rewardmill.transforms.sources.registry import SourceError, check_sources, parse_source

pytestmark = pytest.mark.slow  # the first import of verifiers takes about 4 s

ENVS = Path(__file__).parents[1] / "environments/vf_envs"


@pytest.fixture(autouse=True)
def vf_envs(monkeypatch):
    monkeypatch.syspath_prepend(str(ENVS))


def test_each_task_is_a_prompt_with_its_opening_messages_reference_and_task():
    records = list(source.generate("vf", "vf_math_env", {"count": 3}, None))
    assert [row_id for row_id, _ in records] == ["vf:0", "vf:1", "vf:2"]
    _, first = records[0]
    assert first["messages"] == [
        {"role": "system", "content": "Answer with the number only."},
        {"role": "user", "content": "What is 1 + 2?"},
    ]
    assert first["reference"] == "3" and first["task"] == "environment"
    spec = first["metadata"]["verifiers"]
    assert spec["environment"]["id"] == "vf_math_env" and spec["environment"]["args"] == {"count": 3}
    assert (
        spec["task"]["type"] == "SumTask" and spec["task"]["data"]["answer"] == 3 and len(spec["task"]["hash"]) == 64
    )
    json.dumps(first["metadata"])  # JSON, as Parquet keeps it
    assert len(list(source.generate("vf", "vf_math_env", {"count": 3}, 2))) == 2  # limit: the first N


def test_bad_args_or_an_unknown_module_are_named_before_any_read(tmp_path):
    bad = parse_source({"name": "vf", "kind": "verifiers", "id": "vf_math_env", "args": {"cnt": 3}}, "s")
    with pytest.raises(SourceError, match=r"(?s)prompts.sources\[0\] \(vf\): .*cnt"):
        check_sources([bad], "params.yaml")
    missing = parse_source({"name": "vf", "kind": "verifiers", "id": "vf_nope"}, "s")
    with pytest.raises(SourceError, match="vf_nope"):
        check_sources([missing], "params.yaml")
    with pytest.raises(ValueError, match="limit"):
        parse_source({"name": "vf", "kind": "verifiers", "id": "vf_math_env", "limit": -1}, "s")
