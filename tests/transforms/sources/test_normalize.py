"""transforms/sources/normalize.py: source records -> PROMPT_V1 rows, or a RecordError with a countable reason."""

import copy
import hashlib
import json

import pytest

from rewardmill.schemas import PROMPT_V1
from rewardmill.transforms.io.parquet import rows_to_table
from rewardmill.transforms.sources.normalize import RecordError, canonical_messages, normalize, prompt_id, split_for

USER = {"role": "user", "content": "What is 2 + 2?"}
TURNS = [USER, {"role": "assistant", "content": "5"}, {"role": "user", "content": "Sure?"}]


def run(record: dict, default_task: str = "math") -> dict:
    return normalize(record, "unit", default_task, 0.1)


# --- malformed records ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "record, reason",
    [
        # neither prompt nor messages
        ({"reference": "4"}, "missing_prompt"),
        # both present but null
        ({"prompt": None, "messages": None, "reference": "4"}, "missing_prompt"),
        # an entirely empty record
        ({}, "missing_prompt"),
        # a prompt that is not a string
        ({"prompt": 42, "reference": "4"}, "bad_prompt"),
        # a prompt that is a list of strings
        ({"prompt": ["What", "is"], "reference": "4"}, "bad_prompt"),
        # messages given as a string that is not JSON
        ({"messages": "What is 2 + 2?", "reference": "4"}, "bad_messages"),
        # messages as a JSON string of an object, not a list
        ({"messages": json.dumps(USER), "reference": "4"}, "bad_messages"),
        # messages as a JSON string of an empty list
        ({"messages": "[]", "reference": "4"}, "bad_messages"),
        # an empty string (json.loads fails)
        ({"messages": "", "reference": "4"}, "bad_messages"),
        # an empty list
        ({"messages": [], "reference": "4"}, "bad_messages"),
        # a single message dict instead of a list
        ({"messages": USER, "reference": "4"}, "bad_messages"),
        # a list item that is not a dict
        ({"messages": ["What is 2 + 2?"], "reference": "4"}, "bad_messages"),
        # a message without content
        ({"messages": [{"role": "user"}], "reference": "4"}, "bad_messages"),
        # a message with non-string content
        ({"messages": [{"role": "user", "content": 4}], "reference": "4"}, "bad_messages"),
        # a message with null content
        ({"messages": [{"role": "user", "content": None}], "reference": "4"}, "bad_messages"),
        # a message without role
        ({"messages": [{"content": "hi"}], "reference": "4"}, "bad_messages"),
        # an unknown role
        ({"messages": [{"role": "bot", "content": "hi"}], "reference": "4"}, "bad_messages"),
        # a tool turn is not a supported role
        ({"messages": [{"role": "tool", "content": "hi"}], "reference": "4"}, "bad_messages"),
        # the last turn is the assistant's: nothing for the policy to answer
        ({"messages": [USER, {"role": "assistant", "content": "4"}], "reference": "4"}, "bad_messages"),
        # only a system turn
        ({"messages": [{"role": "system", "content": "be brief"}], "reference": "4"}, "bad_messages"),
        # an empty prompt
        ({"prompt": "", "reference": "4"}, "empty_prompt"),
        # a whitespace-only prompt
        ({"prompt": "  \n\t ", "reference": "4"}, "empty_prompt"),
        # a system turn with text but an empty user turn
        ({"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": " "}]}, "empty_prompt"),
        # an unknown task named by the record
        ({"prompt": "hi", "task": "poetry"}, "unknown_task"),
        # a task that is not a string
        ({"prompt": "hi", "task": 3}, "unknown_task"),
        # math without a reference
        ({"prompt": "What is 2 + 2?"}, "missing_reference"),
        # math with a null reference
        ({"prompt": "What is 2 + 2?", "reference": None}, "missing_reference"),
        # math with an empty reference
        ({"prompt": "What is 2 + 2?", "reference": ""}, "missing_reference"),
        # math with a whitespace reference (stripped to empty)
        ({"prompt": "What is 2 + 2?", "reference": "   "}, "missing_reference"),
        # a rubric that is a string
        ({"prompt": "Write a poem", "task": "open", "rubric": "be nice"}, "bad_rubric"),
        # a rubric that is a single dict
        ({"prompt": "Write a poem", "task": "open", "rubric": {"criterion": "rhymes"}}, "bad_rubric"),
        # a rubric item without a criterion
        ({"prompt": "Write a poem", "task": "open", "rubric": [{"weight": 1.0}]}, "bad_rubric"),
        # a rubric item that is a bare string
        ({"prompt": "Write a poem", "task": "open", "rubric": ["rhymes"]}, "bad_rubric"),
        # one good rubric item and one bad
        ({"prompt": "Write a poem", "task": "open", "rubric": [{"criterion": "rhymes"}, None]}, "bad_rubric"),
    ],
)
def test_malformed_records(record, reason):
    with pytest.raises(RecordError) as info:
        run(record)
    assert info.value.reason == reason
    assert str(info.value).startswith(f"{reason}: ")
    assert info.value.detail


@pytest.mark.parametrize(
    "record, default_task",
    [
        # the default task itself is unknown and the record names none
        ({"prompt": "hi"}, "poetry"),
        # an empty task falls back to the default, which is unknown
        ({"prompt": "hi", "task": ""}, "poetry"),
    ],
)
def test_unknown_default_task(record, default_task):
    with pytest.raises(RecordError) as info:
        run(record, default_task)
    assert info.value.reason == "unknown_task"


@pytest.mark.parametrize(
    "weight",
    [
        # a word where a number is expected
        "heavy",
        # an explicit null weight
        None,
        # a list
        [1],
    ],
)
def test_bad_rubric_weight_is_a_record_error(weight):
    record = {"prompt": "Write a poem", "task": "open", "rubric": [{"criterion": "rhymes", "weight": weight}]}
    with pytest.raises(RecordError) as info:
        run(record)
    assert info.value.reason == "bad_rubric"


def test_record_error_is_a_value_error():
    err = RecordError("bad_json", "line 3")
    assert isinstance(err, ValueError) and err.reason == "bad_json" and err.detail == "line 3"


# --- good records ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "record, expected",
    [
        # a prompt string becomes one stripped user message
        ({"prompt": "  What is 2 + 2?\n", "reference": "4"}, {"messages": [USER], "reference": "4"}),
        # a messages list is kept, contents stripped
        (
            {"messages": [{"role": "system", "content": " be brief "}, USER], "reference": "4"},
            {"messages": [{"role": "system", "content": "be brief"}, USER]},
        ),
        # extra message keys are dropped
        ({"messages": [{**USER, "name": "x"}], "reference": "4"}, {"messages": [USER]}),
        # messages as a JSON string
        ({"messages": json.dumps([USER]), "reference": "4"}, {"messages": [USER]}),
        # messages win over prompt when both are present
        ({"messages": [USER], "prompt": "ignored", "reference": "4"}, {"messages": [USER]}),
        # a multi-turn conversation ending in a user turn
        ({"messages": TURNS, "reference": "4"}, {"messages": TURNS}),
        # an int reference becomes its string
        ({"prompt": "What is 2 + 2?", "reference": 4}, {"reference": "4"}),
        # a zero reference is a real answer, not a missing one
        ({"prompt": "What is 2 - 2?", "reference": 0}, {"reference": "0"}),
        # a float reference becomes its string
        ({"prompt": "Half of 5?", "reference": 2.5}, {"reference": "2.5"}),
        # a string reference is stripped
        ({"prompt": "What is 2 + 2?", "reference": " 4 \n"}, {"reference": "4"}),
        # metadata becomes canonical JSON (sorted keys)
        ({"prompt": "q", "reference": "1", "metadata": {"b": 1, "a": "é"}}, {"metadata": '{"a": "é", "b": 1}'}),
        # no metadata stays null
        ({"prompt": "q", "reference": "1"}, {"metadata": None, "tests": None, "constraints": None, "rubric": None}),
        # structured tests and constraints become JSON strings
        (
            {"prompt": "f", "task": "code", "tests": ["assert f() == 1"], "constraints": {"ids": ["x"]}},
            {"tests": '["assert f() == 1"]', "constraints": '{"ids": ["x"]}', "reference": None},
        ),
        # code, instruction and open tasks need no reference
        ({"prompt": "Write a poem", "task": "open"}, {"task": "open", "reference": None}),
        # a rubric gets default weights and string criteria
        (
            {"prompt": "Poem", "task": "open", "rubric": [{"criterion": "rhymes"}, {"criterion": 2, "weight": 3}]},
            {"rubric": [{"criterion": "rhymes", "weight": 1.0}, {"criterion": "2", "weight": 3.0}]},
        ),
        # an empty rubric list is allowed
        ({"prompt": "Write a poem", "task": "open", "rubric": []}, {"rubric": []}),
        # unknown record keys are ignored
        ({"prompt": "q", "reference": "1", "id": 7}, {"source": "unit"}),
    ],
)
def test_good_records(record, expected):
    row = run(record)
    for key, value in expected.items():
        assert row[key] == value, key


def test_row_matches_prompt_schema():
    row = run({"prompt": "q", "reference": 1, "rubric": [{"criterion": "c"}], "metadata": {"k": [1]}})
    assert list(row) == PROMPT_V1.names
    assert rows_to_table([row], PROMPT_V1).to_pylist() == [row]


def test_row_fields():
    row = normalize({"prompt": "What is 2 + 2?", "reference": "4"}, "arith", "math", 0.1)
    assert row["source"] == "arith"
    assert row["task"] == "math"
    assert row["prompt_id"] == prompt_id([USER])
    assert row["split"] == split_for(row["prompt_id"], 0.1)


def test_normalize_does_not_mutate_the_record():
    record = {"messages": [{"role": "user", "content": "  hi  "}], "task": "open", "rubric": [{"criterion": "c"}]}
    before = copy.deepcopy(record)
    run(record)
    assert record == before


def test_canonical_messages_is_pure():
    messages = [{"role": "user", "content": " hi "}]
    assert canonical_messages({"messages": messages}) == [{"role": "user", "content": "hi"}]
    assert messages == [{"role": "user", "content": " hi "}]


# --- prompt_id -----------------------------------------------------------------------------------------------------


def test_prompt_id_is_sha256_of_canonical_messages():
    # pinned: changing the id formula silently re-keys every dataset downstream
    expected = hashlib.sha256(b'[{"content": "What is 2 + 2?", "role": "user"}]').hexdigest()
    assert prompt_id([USER]) == expected


@pytest.mark.parametrize(
    "left, right",
    [
        # equal messages, different dict key order
        ([{"role": "user", "content": "x"}], [{"content": "x", "role": "user"}]),
        # equal copies
        ([USER], [dict(USER)]),
    ],
)
def test_prompt_id_equal_for_equal_messages(left, right):
    assert prompt_id(left) == prompt_id(right)


@pytest.mark.parametrize(
    "left, right",
    [
        # different content
        ([{"role": "user", "content": "x"}], [{"role": "user", "content": "y"}]),
        # different case
        ([{"role": "user", "content": "x"}], [{"role": "user", "content": "X"}]),
        # an added system turn
        ([USER], [{"role": "system", "content": "be brief"}, USER]),
        # same turns in another order
        (
            [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
            [{"role": "user", "content": "b"}, {"role": "user", "content": "a"}],
        ),
        # same text, different role
        ([{"role": "system", "content": "x"}, USER], [{"role": "user", "content": "x"}, USER]),
    ],
)
def test_prompt_id_differs_for_different_messages(left, right):
    assert prompt_id(left) != prompt_id(right)


@pytest.mark.parametrize(
    "left, right",
    [
        # a prompt string and the equivalent messages list
        ({"prompt": "What is 2 + 2?", "reference": "4"}, {"messages": [USER], "reference": "4"}),
        # surrounding whitespace is canonicalized away
        ({"prompt": " What is 2 + 2? ", "reference": "4"}, {"prompt": "What is 2 + 2?", "reference": "5"}),
        # messages as a JSON string and as a list
        ({"messages": json.dumps([USER]), "reference": "4"}, {"messages": [USER], "reference": "4"}),
    ],
)
def test_same_prompt_same_id_across_forms(left, right):
    # the id depends only on the conversation (so dedup works across sources), not on reference or source
    assert normalize(left, "a", "math", 0.1)["prompt_id"] == normalize(right, "b", "math", 0.1)["prompt_id"]


# --- split_for -----------------------------------------------------------------------------------------------------

IDS = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(2000)]


@pytest.mark.parametrize(
    "pid, test_fraction, expected",
    [
        # the lowest hash is test for any positive fraction
        ("0" * 64, 0.1, "test"),
        # the highest hash is train
        ("f" * 64, 0.1, "train"),
        # a zero fraction puts everything in train
        ("0" * 64, 0.0, "train"),
        # exactly at the boundary: not below it, so train
        ("8" + "0" * 63, 0.5, "train"),
        # just below the boundary
        ("7" + "f" * 63, 0.5, "test"),
    ],
)
def test_split_for_boundaries(pid, test_fraction, expected):
    assert split_for(pid, test_fraction) == expected


def test_split_for_deterministic():
    assert [split_for(p, 0.1) for p in IDS] == [split_for(p, 0.1) for p in IDS]


@pytest.mark.parametrize("test_fraction", [0.0, 0.05, 0.1, 0.3, 0.5])
def test_split_for_respects_fraction(test_fraction):
    share = sum(split_for(p, test_fraction) == "test" for p in IDS) / len(IDS)
    assert abs(share - test_fraction) < 0.03  # ~3 standard deviations at 0.5 over 2000 ids


def test_split_for_monotone_in_fraction():
    # raising test_fraction only moves prompts from train to test, never back
    small = {p for p in IDS if split_for(p, 0.1) == "test"}
    large = {p for p in IDS if split_for(p, 0.2) == "test"}
    assert small < large


CODE = {"prompt": "Write triple(x).", "task": "code"}


@pytest.mark.parametrize(
    "tests, detail",
    [
        ("assert triple(2) == 6", "not JSON"),  # a bare assert string, not a JSON list
        (["assert triple(2) == 6", "assert triple(0) == 0)"], "test 2 does not compile"),  # stray parenthesis
        ({"style": "asserts", "asserts": []}, "non-empty list"),  # nothing to run
        ({"style": "pytest", "asserts": ["assert 1"]}, "style"),  # not a style the labeler reads
        ({"style": "humaneval", "test": "def check(candidate)\n    assert candidate(1)", "entry_point": "f"}, "setup"),
        ({"style": "asserts", "asserts": ["assert f(1)"], "setup": "import os\nif True print(1)"}, "setup"),
        ({"style": "stdio", "cases": [{"input": "1"}]}, "stdio case 0"),  # no expected output
    ],
)
def test_tests_that_would_not_run_reject_the_prompt(tests, detail):
    """A prompt whose tests cannot run is rejected at the prompts stage, named; at labeling it would fail every
    rollout of the prompt as if each completion were wrong."""
    with pytest.raises(RecordError) as err:
        normalize({**CODE, "tests": tests}, "mine", "code", 0.1)
    assert err.value.reason == "bad_tests" and detail in err.value.detail


@pytest.mark.parametrize(
    "tests",
    [
        ["assert triple(2) == 6", "assert triple(0) == 0"],  # MBPP's test_list
        {"style": "asserts", "asserts": ["assert triple(1) == 3"], "setup": "import math"},
        {
            "style": "humaneval",
            "test": "def check(candidate):\n    assert candidate(1) == 3\n",
            "entry_point": "triple",
        },
        {"style": "stdio", "cases": [{"input": "1\n", "output": "3\n"}]},
    ],
)
def test_tests_in_every_style_are_kept_as_json(tests):
    row = normalize({**CODE, "tests": tests}, "mine", "code", 0.1)
    assert json.loads(row["tests"]) == tests
