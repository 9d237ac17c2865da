"""transforms/filters/contamination.py: benchmark files in four formats, n-gram overlap with prompts."""

import json
import pickle
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from rewardmill.transforms.config import from_dict
from rewardmill.transforms.filters.contamination import (
    BenchmarkText,
    DecontaminateConfig,
    find_contaminated,
    load_benchmarks,
)
from rewardmill.transforms.filters.flag import Flag
from rewardmill.transforms.sources import arithmetic

REPO = Path(__file__).resolve().parents[3]
BENCH = "Natalia sold clips to 48 of her friends in April and then half as many in May. How many clips in total?"
ON = DecontaminateConfig(files=("bench.jsonl",))  # find_contaminated reads benchmarks, not files


def bench(*texts: str) -> list[BenchmarkText]:
    return [BenchmarkText(text, f"bench.jsonl:{i}") for i, text in enumerate(texts, start=1)]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        # n-grams need at least one word
        ({"ngram": 0}, "ngram"),
        # an overlap share of 0 would flag every prompt
        ({"min_overlap": 0.0}, "min_overlap"),
        # a share never exceeds 1
        ({"min_overlap": 1.5}, "min_overlap"),
    ],
)
def test_config_rejects_bad_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DecontaminateConfig(**kwargs)


def test_params_section_loads_and_pickles():
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    raw = params["assemble"]["filters"]["decontaminate"]
    cfg = from_dict(DecontaminateConfig, raw, "assemble.filters.decontaminate")
    assert isinstance(cfg.files, tuple)
    assert pickle.loads(pickle.dumps(cfg)) == cfg


def write_jsonl(path: Path, rows: list) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


@pytest.mark.parametrize(
    "name, write, expected",
    [
        # jsonl: blank lines skipped but counted; each text field in precedence order
        (
            "b.jsonl",
            lambda p: p.write_text(
                '{"prompt": "p1"}\n\n{"question": "q3", "answer": "7"}\n{"problem": "r4"}\n{"instruction": "i5"}\n'
                '{"input": "n6"}\n{"text": "t7"}\n'
            ),
            [("p1", 1), ("q3", 3), ("r4", 4), ("i5", 5), ("n6", 6), ("t7", 7)],
        ),
        # jsonl: prompt wins over question; an empty prompt falls through to the next field
        (
            "b.jsonl",
            lambda p: write_jsonl(p, [{"question": "q", "prompt": "p"}, {"prompt": " ", "text": "t"}]),
            [("p", 1), ("t", 2)],
        ),
        # jsonl: messages -> the user turns joined by newlines
        (
            "b.jsonl",
            lambda p: write_jsonl(
                p,
                [
                    {
                        "messages": [
                            {"role": "system", "content": "be brief"},
                            {"role": "user", "content": "first"},
                            {"role": "assistant", "content": "ok"},
                            {"role": "user", "content": "second"},
                        ]
                    }
                ],
            ),
            [("first\nsecond", 1)],
        ),
        # json: one list of objects, numbered by item
        ("b.json", lambda p: p.write_text(json.dumps([{"question": "a"}, {"problem": "b"}])), [("a", 1), ("b", 2)]),
        # parquet: numbered by row; a null field falls through
        (
            "b.parquet",
            lambda p: pq.write_table(pa.table({"prompt": [None, "x"], "question": ["y", "z"]}), p),
            [("y", 1), ("x", 2)],
        ),
        # txt: one prompt per non-empty line, stripped
        ("b.txt", lambda p: p.write_text("first line\n\n  third line  \n"), [("first line", 1), ("third line", 3)]),
    ],
)
def test_load_formats(tmp_path, name, write, expected):
    path = tmp_path / name
    write(path)
    assert load_benchmarks([str(path)]) == [BenchmarkText(text, f"{path}:{n}") for text, n in expected]


def test_load_keeps_file_order_and_empty_list_is_off(tmp_path):
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "b.txt").write_text("two\n")
    paths = [str(tmp_path / "b.txt"), str(tmp_path / "a.txt")]
    assert [b.text for b in load_benchmarks(paths)] == ["two", "one"]
    assert load_benchmarks([]) == []


@pytest.mark.parametrize(
    "name, content, error, message",
    [
        # a file that is not there
        ("missing.jsonl", None, FileNotFoundError, r"missing.jsonl: benchmark file not found"),
        # an extension no reader handles
        ("b.csv", "prompt\nx\n", ValueError, r"b.csv: unknown benchmark file type '.csv'"),
        # a broken JSON line, named by its line number
        ("b.jsonl", '{"prompt": "ok"}\n{"prompt": \n', ValueError, r"b.jsonl:2: invalid JSON"),
        # a row with no text field: the message lists the fields and the keys found
        ("b.jsonl", '{"prompt": "ok"}\n\n{"answer": "4"}\n', ValueError, r"b.jsonl:3: no prompt text.*\['answer'\]"),
        # a JSON line that is not an object
        ("b.jsonl", '["a list"]\n', ValueError, r"b.jsonl:1: expected a JSON object"),
        # messages without a user turn
        ("b.jsonl", '{"messages": [{"role": "system", "content": "x"}]}\n', ValueError, r"b.jsonl:1: no prompt text"),
        # a .json file that is not a list
        ("b.json", '{"prompt": "x"}', ValueError, r"b.json: a .json benchmark file must hold a list"),
        # a .json file that is not JSON
        ("b.json", "[{", ValueError, r"b.json: invalid JSON"),
        # a text field that is not a string
        ("b.json", '[{"question": 12}]', ValueError, r"b.json:1: no prompt text"),
        # a user turn without content
        ("b.jsonl", '{"messages": [{"role": "user"}]}\n', ValueError, r"b.jsonl:1: no prompt text"),
        # a .parquet file that is not Parquet
        ("b.parquet", "not parquet", ValueError, r"b.parquet: not a readable Parquet file"),
        # a text file that is not UTF-8
        ("b.txt", b"caf\xe9\n", ValueError, r"b.txt: not UTF-8 text"),
    ],
)
def test_load_errors_name_file_and_line(tmp_path, name, content, error, message):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(error, match=message):
        load_benchmarks([str(path)])


@pytest.mark.parametrize(
    "prompt, share",
    [
        # a verbatim copy
        (BENCH, 1.0),
        # case, spacing and punctuation do not hide a copy
        (BENCH.upper().replace(" ", "  ").replace("?", "!!"), 1.0),
        # the benchmark (22 words) inside a 26-word prompt: 15 of its 19 8-grams lie inside the benchmark
        ("Solve this: " + BENCH + " Show work.", 15 / 19),
        # a paraphrase with no run of 8 words in common
        ("In April Natalia sold 48 clips to friends, and in May she sold half that amount. Total?", None),
        # an unrelated prompt
        ("Write a Python function that reverses a string and returns it to the caller, please.", None),
    ],
)
def test_overlap_with_a_benchmark(prompt, share):
    flags = find_contaminated([("p", prompt)], bench("An unrelated benchmark question about trains", BENCH), ON)
    if share is None:
        assert flags == {}
    else:
        assert flags == {
            "p": Flag(
                "contaminated", f"{round(share, 3)} of its 8-word grams found in benchmarks, most in bench.jsonl:2"
            )
        }


@pytest.mark.parametrize(
    "min_overlap, flagged",
    [
        # the prompt's share is exactly 3/6 = 0.5: at the threshold counts
        (0.5, True),
        # just above the share
        (0.51, False),
        # well below
        (0.2, True),
    ],
)
def test_min_overlap_boundary(min_overlap, flagged):
    # 8 words, ngram 3 -> 6 grams; the first 5 words form 3 grams that a benchmark contains
    prompt = "alpha beta gamma delta epsilon zeta eta theta"
    benchmarks = bench("one two alpha beta gamma delta epsilon three")
    cfg = DecontaminateConfig(files=("bench.jsonl",), ngram=3, min_overlap=min_overlap)
    assert ("p" in find_contaminated([("p", prompt)], benchmarks, cfg)) is flagged


@pytest.mark.parametrize(
    "prompt, flagged",
    [
        # shorter than ngram and equal to a whole benchmark text
        ("What is 2 + 2?", True),
        # shorter than ngram, a contiguous run of words inside a longer benchmark
        ("half as many in May", True),
        # the same words, not contiguous in the benchmark
        ("April half May", False),
        # one word found in the benchmark is still a run of all of the prompt's words
        ("Natalia!", True),
        # no words at all: never contaminated
        ("?!", False),
        # shorter than ngram, words not in any benchmark
        ("reverse a string", False),
    ],
)
def test_short_prompts_compare_as_a_whole(prompt, flagged):
    assert ("p" in find_contaminated([("p", prompt)], bench("what is 2 + 2", BENCH), ON)) is flagged


def test_detail_names_the_benchmark_holding_most_grams():
    # the shared 7-word suffix (4 of the 4-grams) is in line 1 first; the other 5 grams are only in line 2
    suffix = "Put the final answer in a box."
    benchmarks = bench("Count the apples. " + suffix, "Add 5 and 9 now. " + suffix)
    cfg = DecontaminateConfig(files=("bench.jsonl",), ngram=4, min_overlap=0.5)
    flags = find_contaminated([("p", "Add 5 and 9 now. " + suffix)], benchmarks, cfg)
    assert flags["p"].detail.endswith("most in bench.jsonl:2")


@pytest.mark.parametrize(
    "prompts, benchmarks, expected",
    [
        # no benchmarks (files empty): off
        ([("p", BENCH)], [], set()),
        # no prompts
        ([], bench(BENCH), set()),
        # the same prompt_id twice is one prompt
        ([("p", BENCH), ("p", BENCH), ("q", "something else entirely, nothing like it")], bench(BENCH), {"p"}),
    ],
)
def test_edge_inputs(prompts, benchmarks, expected):
    assert set(find_contaminated(prompts, benchmarks, ON)) == expected


def test_demo_benchmark_flags_exactly_its_two_copied_demo_prompts():
    # the demo's own arithmetic prompts (params.yaml) against data/benchmarks/demo.jsonl: the two rows copied
    # from the generator are found, the other generated prompts and the 14 written problems do not collide
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    source = next(s for s in params["prompts"]["sources"] if s["kind"] == "arithmetic")
    records = arithmetic.generate(source["count"], source["seed"], tuple(source["levels"]))
    prompts = [(f"{source['name']}:{i}", record["prompt"]) for i, record in enumerate(records)]
    cfg = from_dict(DecontaminateConfig, params["assemble"]["filters"]["decontaminate"], "decontaminate")
    demo = str(REPO / "data/benchmarks/demo.jsonl")
    assert cfg.files == ("data/benchmarks/demo.jsonl",)
    benchmarks = load_benchmarks([demo])
    copied = {b.text for b in benchmarks} & {text for _, text in prompts}
    flags = find_contaminated(prompts, benchmarks, cfg)
    assert len(copied) == 2
    assert {text for pid, text in prompts if pid in flags} == copied
    assert all(record["metadata"]["level"] == 1 for record in records if record["prompt"] in copied)
