"""transforms/labelers/reasoning_gym.py against reasoning-gym itself: on every row (three tasks, one of which scores
with its entry's metadata), the label equals the task's `score_answer` called directly on the entry as reasoning-gym
made it, for completions that answer right, wrong, partly, without the tag, twice, or only inside a reasoning block.
The prompts go through the source and normalize (what the prompts stage writes), so the metadata the labeler reads
is the JSON the Parquet keeps."""

import json

import pytest

from rewardmill.transforms.labelers.reasoning_gym import ReasoningGymConfig, ReasoningGymVerifier
from rewardmill.transforms.sources.normalize import normalize
from rewardmill.transforms.sources.registry import parse_source

TASKS = {"leg_counting": {"count": 6, "seed": 3}, "basic_arithmetic": {"count": 6, "seed": 4},
         "countdown": {"count": 6, "seed": 5}}  # fmt: skip


def completions(answer: str) -> list[str]:
    return [
        f"<answer>{answer}</answer>",  # right
        "<answer>0</answer>",  # wrong
        answer,  # right, but not in the tag reasoning-gym's scorers expect
        f"The total is <answer>{answer} legs and more</answer>",  # the oracle inside a longer answer: partial credit
        f"<answer>1</answer> no wait <answer>{answer}</answer>",  # the last tag counts
        f"<think><answer>{answer}</answer></think>",  # only inside the reasoning: no answer
        f"<think>hm</think><answer>{answer}</answer>",  # after the reasoning
        "",
    ]


@pytest.fixture(scope="module")
def rows_and_entries():
    from reasoning_gym import create_dataset

    source = parse_source({"kind": "reasoning_gym", "name": "rg", "tasks": TASKS}, "prompts.sources[0]")
    rows = [normalize(record, "rg", source.task, 0.1) for _, record in source.records()]
    entries = [
        (name, create_dataset(name, seed=spec["seed"], size=spec["count"]), i)
        for name, spec in sorted(TASKS.items())
        for i in range(spec["count"])
    ]
    return rows, entries


def test_every_label_is_the_tasks_own_score(rows_and_entries):
    from reasoning_gym.utils import extract_answer

    from rewardmill.transforms.labelers.reasoning import answer_text

    rows, entries = rows_and_entries
    labeler = ReasoningGymVerifier()
    checked = scores = 0
    for row, (name, dataset, i) in zip(rows, entries, strict=True):
        entry = dataset[i]
        assert row["reference"] == str(entry["answer"]) and row["task"] == "reasoning"
        for completion in completions(str(entry["answer"])):
            label = labeler.label(completion, row["reference"], row["messages"], row["metadata"])
            direct = dataset.score_answer(extract_answer(answer_text(completion)), entry)
            assert label.score == direct, (name, i, completion, label)
            assert label.verdict == ("correct" if direct >= 1.0 else "incorrect"), label
            checked += 1
            scores += direct > 0
    assert checked == 18 * 8 and 0 < scores < checked  # both outcomes occur


def test_final_text_extraction_and_what_cannot_be_scored(rows_and_entries):
    rows, entries = rows_and_entries
    row, (_, dataset, i) = rows[0], entries[0]
    answer = str(dataset[i]["answer"])
    whole = ReasoningGymVerifier(ReasoningGymConfig(extraction="final_text"))
    assert whole.label(f"<think>x</think> {answer} ", row["reference"], row["messages"], row["metadata"]).score == 1.0
    plain = ReasoningGymVerifier()
    assert plain.label(answer, row["reference"], row["messages"], None).verdict == "abstain"  # no entry: no reward
    with pytest.raises(ValueError, match="extraction"):
        ReasoningGymConfig(extraction="regex")


# extraction `committed`: the final committed value, as math_answer reads it, handed to the task's scorer
COMMITTED = [
    ("The answer is {a}.", "{a}"),  # an answer statement
    ("So the total is {a}.", "{a}"),  # the last line that states a result
    ("<think>maybe 0</think>So it is {a}.", "{a}"),  # after the reasoning
    ("It is {a} or 0.", None),  # a hedge commits to no value: the scorer gets None, score 0
    ("The answer is not {a}.", None),  # a negation attached
    ("I said 0 before. The answer is {a}.", "{a}"),  # the last statement decides
    ("The answer is 0. No wait, the answer is {a}.", "{a}"),
    ("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18", None),  # a list of every value is no committed answer
    ("", None),
]


@pytest.mark.parametrize("template, expected", COMMITTED)
def test_committed_extraction_gives_the_scorer_the_final_committed_value(rows_and_entries, template, expected):
    rows, entries = rows_and_entries
    labeler = ReasoningGymVerifier(ReasoningGymConfig(extraction="committed"))
    for row, (name, dataset, i) in zip(rows, entries, strict=True):
        if name != "basic_arithmetic":
            continue
        entry = dataset[i]
        answer = str(entry["answer"])
        completion = template.format(a=answer)
        label = labeler.label(completion, row["reference"], row["messages"], row["metadata"])
        given = None if expected is None else expected.format(a=answer)
        assert label.score == dataset.score_answer(given, entry), (completion, label)  # the scorer's own number
        assert json.loads(label.raw)["answer"] == given
        assert label.verdict == ("correct" if given == answer else "incorrect")
