"""transforms/sources/registry.py: params `prompts.sources` entries -> source objects that validate their keys."""

import json
import pickle

import pytest

from rewardmill.transforms.config import ConfigError
from rewardmill.transforms.sources.arithmetic import generate
from rewardmill.transforms.sources.registry import (
    SOURCE_KINDS,
    ArithmeticSource,
    FileSource,
    HFDatasetSource,
    default_task,
    parse_source,
)

WHERE = "prompts.sources[0]"


@pytest.mark.parametrize(
    "raw, expected",
    [
        # arithmetic with defaults
        ({"name": "a", "kind": "arithmetic"}, ArithmeticSource(name="a")),
        # arithmetic with every key; the levels list becomes a tuple
        (
            {"name": "a", "kind": "arithmetic", "count": 6, "seed": 3, "levels": [1, 3]},
            ArithmeticSource(name="a", count=6, seed=3, levels=(1, 3)),
        ),
        # a file with a column mapping and a default task
        (
            {"name": "f", "kind": "file", "path": "p.jsonl", "task": "open", "columns": {"prompt": "q"}},
            FileSource(name="f", path="p.jsonl", task="open", columns={"prompt": "q"}),
        ),
        # a datasets id with defaults (parsing only: reading an id needs network)
        ({"name": "h", "kind": "hf", "dataset": "org/data"}, HFDatasetSource(name="h", dataset="org/data")),
        # a datasets source with every key
        (
            {
                "name": "h",
                "kind": "hf",
                "dataset": "org/data",
                "config": "main",
                "split": "test",
                "task": "code",
                "limit": 5,
                "columns": {"prompt": "question"},
            },
            HFDatasetSource("h", "org/data", "hf", "main", "test", "code", 5, {"prompt": "question"}),
        ),
    ],
)
def test_parse_source(raw, expected):
    source = parse_source(raw, WHERE)
    assert source == expected
    assert type(source) is SOURCE_KINDS[raw["kind"]]


@pytest.mark.parametrize(
    "raw, match",
    [
        # an unknown kind lists the known ones
        (
            {"name": "x", "kind": "csv"},
            r"'prompts\.sources\[0\]\.kind' 'csv' unknown; "
            r"known: \['arithmetic', 'code_basics', 'file', 'hf', 'humaneval', 'reasoning_gym', 'traces', "
            r"'verifiers'\]",
        ),
        # no kind at all
        ({"name": "x"}, r"'prompts\.sources\[0\]' must be a mapping with a 'kind'"),
        # not a mapping
        (["arithmetic"], r"must be a mapping with a 'kind'"),
        # null entry (`- ` with nothing after it)
        (None, r"must be a mapping with a 'kind'"),
    ],
)
def test_parse_source_bad_kind(raw, match):
    with pytest.raises(ValueError, match=match):
        parse_source(raw, WHERE)


@pytest.mark.parametrize(
    "raw, fragments",
    [
        # a typo'd key in an arithmetic source
        ({"name": "a", "kind": "arithmetic", "cuont": 5}, ["'prompts.sources[0]'", "cuont"]),
        # a key of another kind (file's path on arithmetic)
        ({"name": "a", "kind": "arithmetic", "path": "p.jsonl"}, ["'prompts.sources[0]'", "path"]),
        # hf's limit on a file source
        ({"name": "f", "kind": "file", "path": "p.jsonl", "limit": 3}, ["'prompts.sources[0]'", "limit"]),
        # a file source without its path
        ({"name": "f", "kind": "file"}, ["'prompts.sources[0]'", "path"]),
        # a source without a name
        ({"kind": "arithmetic"}, ["'prompts.sources[0]'", "name"]),
        # an hf source without a dataset
        ({"name": "h", "kind": "hf"}, ["'prompts.sources[0]'", "dataset"]),
        # a wrong type names the key
        ({"name": "a", "kind": "arithmetic", "count": "64"}, ["prompts.sources[0].count", "int"]),
        # a level that is not an int names the list index
        ({"name": "a", "kind": "arithmetic", "levels": [1, "2"]}, ["prompts.sources[0].levels[1]"]),
        # columns must be a mapping
        ({"name": "f", "kind": "file", "path": "p", "columns": ["q"]}, ["prompts.sources[0].columns", "mapping"]),
        # a mapping onto a field prompts do not have fails when params load, not when the first row is read
        (
            {"name": "f", "kind": "file", "path": "p", "columns": {"question": "q"}},
            ["'prompts.sources[0]'", "question"],
        ),
    ],
)
def test_parse_source_rejects(raw, fragments):
    with pytest.raises(ConfigError) as info:
        parse_source(raw, WHERE)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_arithmetic_records():
    source = parse_source({"name": "arith", "kind": "arithmetic", "count": 5, "seed": 2, "levels": [2, 4]}, WHERE)
    records = list(source.records())
    assert [row_id for row_id, _ in records] == [f"arith:{i}" for i in range(5)]
    assert [record for _, record in records] == generate(5, 2, (2, 4))


def test_file_records(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"q": "What is 1 + 1?", "a": "2"}) + "\nnot json\n")
    source = parse_source(
        {"name": "f", "kind": "file", "path": str(path), "columns": {"prompt": "q", "reference": "a"}}, WHERE
    )
    [(id1, rec1), (id2, rec2)] = list(source.records())
    assert (id1, rec1) == (f"{path}:1", {"prompt": "What is 1 + 1?", "reference": "2"})
    assert id2 == f"{path}:2" and rec2.reason == "bad_json"


@pytest.mark.parametrize(
    "raw, expected",
    [
        # arithmetic has no task option: its problems are math
        ({"name": "a", "kind": "arithmetic"}, "math"),
        # a file source's default
        ({"name": "f", "kind": "file", "path": "p"}, "math"),
        # a file source's own task
        ({"name": "f", "kind": "file", "path": "p", "task": "instruction"}, "instruction"),
        # an hf source's own task
        ({"name": "h", "kind": "hf", "dataset": "d", "task": "code"}, "code"),
        # humaneval and code_basics declare theirs: every record is a code task
        ({"name": "e", "kind": "humaneval"}, "code"),
        ({"name": "c", "kind": "code_basics"}, "code"),
    ],
)
def test_default_task(raw, expected):
    assert default_task(parse_source(raw, WHERE)) == expected


@pytest.mark.parametrize(
    "raw",
    [
        # each kind is shipped to Beam workers by beam.Create and must pickle
        {"name": "a", "kind": "arithmetic", "levels": [1]},
        {"name": "f", "kind": "file", "path": "p", "columns": {"prompt": "q"}},
        {"name": "h", "kind": "hf", "dataset": "d", "limit": 2},
    ],
)
def test_sources_pickle(raw):
    source = parse_source(raw, WHERE)
    assert pickle.loads(pickle.dumps(source)) == source


def test_parse_source_does_not_mutate_raw():
    raw = {"name": "a", "kind": "arithmetic", "levels": [1, 2]}
    parse_source(raw, WHERE)
    assert raw == {"name": "a", "kind": "arithmetic", "levels": [1, 2]}


def test_check_finds_a_missing_file_before_any_record_is_read(tmp_path):
    """The prompts stage and the check stage call check() before Beam runs; built-in kinds have nothing to check."""
    source = parse_source({"name": "f", "kind": "file", "path": str(tmp_path / "nope.jsonl")}, "prompts.sources[0]")
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        source.check()
    parse_source({"name": "a", "kind": "arithmetic"}, "prompts.sources[0]").check()
