"""transforms/sources/outcomes.py: per-source outcome counts (any runner's merge order gives the same result), the
no-prompt check and the empty-split warning."""

import pickle

import pytest

from rewardmill.transforms.sources.outcomes import (
    READ,
    EmptySourceError,
    SourceOutcomes,
    check_nonempty,
    split_warning,
)
from rewardmill.transforms.sources.registry import parse_source

ELEMENTS = [
    ("a", (READ, "a:1", "")),
    ("a", (READ, "a:2", "")),
    ("a", ("bad_json", "a:2", "Expecting value")),
    ("b", (READ, "b:1", "")),
    ("b", ("not_utf8", "b:1", "b line 1: byte 0xe9")),
    ("b", (READ, "b:0", "")),
    ("b", ("not_utf8", "b:0", "b line 0: byte 0xff")),
]
EXPECTED = {
    "a": {"records": 2, "rejects": {"bad_json": 1}, "examples": {"bad_json": ["a:2", "Expecting value"]}},
    "b": {"records": 2, "rejects": {"not_utf8": 2}, "examples": {"not_utf8": ["b:0", "b line 0: byte 0xff"]}},
}


@pytest.mark.parametrize("split", [0, 3, 5, 7])  # one accumulator, or two merged at any cut
def test_outcomes_are_the_same_however_the_runner_splits_them(split):
    fn = pickle.loads(pickle.dumps(SourceOutcomes()))
    parts = []
    for chunk in (ELEMENTS[:split], ELEMENTS[split:]):
        acc = fn.create_accumulator()
        for element in chunk:
            acc = fn.add_input(acc, element)
        parts.append(acc)
    assert fn.extract_output(fn.merge_accumulators(parts)) == EXPECTED


SOURCES = [parse_source({"name": n, "kind": "file", "path": f"{n}.jsonl"}, "prompts.sources[0]") for n in "ab"]


@pytest.mark.parametrize(
    "outcomes, prompts, error",
    [
        # both yield prompts
        (EXPECTED, {"a": 1, "b": 1}, None),
        # b's every row rejected: reasons counted, the smallest row id's detail
        (
            EXPECTED,
            {"a": 1},
            r"all 2 rows of prompts.sources\[1\] \(b, b.jsonl\) were rejected \(not_utf8 2; first: b:0",
        ),
        # b read no record at all
        ({"a": EXPECTED["a"]}, {"a": 1}, r"prompts.sources\[1\] \(b, b.jsonl\) has no rows"),
        # both: one line naming both
        ({}, {}, r"sources\[0\] \(a, a.jsonl\) has no rows; prompts.sources\[1\] \(b, b.jsonl\) has no rows"),
    ],
)
def test_a_source_with_no_prompt_is_an_error_naming_it(outcomes, prompts, error):
    if error is None:
        check_nonempty(outcomes, prompts, SOURCES, "params.yaml")
    else:
        with pytest.raises(EmptySourceError, match=error):
            check_nonempty(outcomes, prompts, SOURCES, "params.yaml")


@pytest.mark.parametrize(
    "splits, test_fraction, says",
    [
        # the user's case: 11 prompts, none hashed to test
        ({"train": 11, "test": 0}, 0.1, "all 11 prompts went to the train split and none to test"),
        # both splits have prompts
        ({"train": 9, "test": 2}, 0.1, None),
        # no test split asked for
        ({"train": 11, "test": 0}, 0.0, None),
        # the other way round: a large fraction, few prompts
        ({"train": 0, "test": 2}, 0.9, "all 2 prompts went to the test split and none to train"),
        # nothing at all: the no-prompt error's business
        ({"train": 0, "test": 0}, 0.1, None),
    ],
)
def test_an_empty_split_is_a_warning_naming_the_param(splits, test_fraction, says):
    warning = split_warning(splits, test_fraction)
    assert (warning is None) if says is None else (says in warning and "prompts.test_fraction" in warning)
