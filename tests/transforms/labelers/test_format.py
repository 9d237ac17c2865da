import json
import pickle
import time

import pytest

from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.labelers.format import FormatConfig, FormatVerifier

TAGS = FormatConfig(required_tags=("think", "answer"))
TAGS_ONLY = FormatConfig(required_tags=("think", "answer"), tags_only=True)
BOXED = FormatConfig(pattern=r"\\boxed\{[^}]+\}")
FULL = FormatConfig(pattern=r"(?s)Answer: \d+", mode="fullmatch")
SCHEMA = {"type": "object", "required": ["name", "age"], "properties": {"age": {"type": "integer"}}}
JSON = FormatConfig(json_schema=SCHEMA)
ADA = '{"name": "Ada", "age": 36}'  # valid under SCHEMA


@pytest.mark.parametrize(
    ("config", "completion", "verdict", "score"),
    [
        (TAGS, "<think>add them</think>\n<answer>12</answer>", "correct", 1.0),  # both tags, in order
        (TAGS, "Sure! <think>hm</think> so <answer>12</answer> done", "correct", 1.0),  # outside text allowed
        (TAGS_ONLY, "Sure! <think>hm</think><answer>12</answer>", "incorrect", 0.0),  # ...unless tags_only
        (TAGS_ONLY, " <think>hm</think>\n\n<answer>12</answer>\n", "correct", 1.0),  # whitespace is fine
        (TAGS, "<answer>12</answer><think>hm</think>", "incorrect", 0.0),  # wrong order
        (TAGS, "<think>hm</think><answer>  </answer>", "incorrect", 0.0),  # empty answer
        (TAGS, "<think>hm</think><answer>1</answer><answer>2</answer>", "incorrect", 0.0),  # answer twice
        (TAGS, "<think>hm<answer>12</answer></think>", "incorrect", 0.0),  # answer nested inside think
        (TAGS, "<think>hm</think> the answer is 12", "incorrect", 0.0),  # missing answer tag
        (TAGS, "<think>hm <answer>12</answer>", "incorrect", 0.0),  # think never closed
        (TAGS, "", "incorrect", 0.0),  # empty completion
        (BOXED, "so \\boxed{42}.", "correct", 1.0),  # search: anywhere
        (BOXED, "so 42.", "incorrect", 0.0),  # no match
        (FULL, "Answer: 42", "correct", 1.0),  # fullmatch
        (FULL, "Answer: 42 (I think)", "incorrect", 0.0),  # fullmatch fails on trailing text
        (JSON, '{"name": "Ada", "age": 36}', "correct", 1.0),  # bare JSON
        (JSON, f"Here:\n```json\n{ADA}\n```\nDone.", "correct", 1.0),  # fenced block
        (JSON, '```JSON\n{"name": "Ada"}\n```', "incorrect", 0.0),  # missing required key
        (JSON, '{"name": "Ada", "age": "old"}', "incorrect", 0.0),  # wrong type
        (JSON, '{"name": "Ada", "age": 36', "incorrect", 0.0),  # truncated JSON
        (JSON, 'Here: {"name": "Ada", "age": 36}', "correct", 1.0),  # unfenced JSON after a lead-in is the answer
        (JSON, 'Here: {"name": "Ada"}', "incorrect", 0.0),  # ... and is validated
        (JSON, f"{ADA}\nHope this helps!", "correct", 1.0),  # a sign-off after the JSON
        (JSON, f"```json\n{ADA}\n```\n```json5\n{{name: 'Ada'}}\n```", "incorrect", 0.0),  # the last block rules
        (JSON, f'```json\n{ADA}\n```\nOr: `{{"name": "Ada"}}`', "incorrect", 0.0),  # a later JSON code span
        (JSON, f"```json\n{ADA}\n```\nThe `age` is a number.", "correct", 1.0),  # a code span that is no JSON
        (JSON, f"```json\n{ADA}\n```\nwhere {{name}} is yours", "correct", 1.0),  # braces that are no JSON
        (JSON, f"```json\n{ADA}\n```\nSee [1] and - [ ] check.", "correct", 1.0),  # a citation, a task box
        (TAGS, "<think>hm</think><answer>\u200b&nbsp;<!-- x --></answer>", "incorrect", 0.0),  # nothing visible
        (TAGS, "> <think>hm</think>\n> <answer>12</answer>", "incorrect", 0.0),  # tags in a block quote
        (TAGS, "<think>\n> quoted problem\n</think><answer>12</answer>", "correct", 1.0),  # a quote inside thinking
        (JSON, "[1, 2]", "incorrect", 0.0),  # JSON but not an object
        (JSON, f'```json\n{ADA}\n```\nFinal:\n```json\n{{"name": "Ada"}}\n```', "incorrect", 0.0),  # decoy
        (JSON, f'```json\n{ADA}\n```\nFinal:\n```\n{{"age": "x"}}\n```', "incorrect", 0.0),  # decoy
        (JSON, f'```json\n{{"age": 1}}\n```\nFixed:\n```json\n{ADA}\n```', "correct", 1.0),  # last
        (JSON, f"```\n{ADA}\n```", "correct", 1.0),  # a fence with no language
        (JSON, f"```json\n{ADA}\n```\nLoad it:\n```python\njson.loads(s)\n```", "correct", 1.0),  # code after
        (JSON, f"```json\n{ADA}```", "correct", 1.0),  # the closing fence on the JSON's own line
        (JSON, f"~~~json\n{ADA}\n~~~", "correct", 1.0),  # a tilde fence
        (JSON, f'<think>```json\n{ADA}\n```</think>\n{{"name": "Ada"}}', "incorrect", 0.0),  # thought
        (JSON, f'<think>draft {{"age": 1}}</think>\n{ADA}', "correct", 1.0),  # answer after it
        (JSON, f"<think>```json\n{ADA}\n```", "incorrect", 0.0),  # unclosed: no answer
        (JSON, f'{ADA}</think>\n{{"name": "Ada"}}', "incorrect", 0.0),  # stray </think>: the last JSON counts
        (TAGS, "<think>hm</think>\n```\n<answer>12</answer>\n```", "incorrect", 0.0),  # answer tag in a fence
        (TAGS, "```xml\n<think>hm</think>\n<answer>12</answer>\n```", "incorrect", 0.0),  # both tags in a fence
        (TAGS, "<think>hm</think>\n```python\n# <answer>12</answer>\n```", "incorrect", 0.0),  # in a code comment
        (TAGS, "<think>hm</think> `<answer>12</answer>`", "incorrect", 0.0),  # in an inline code span
        (TAGS, "<think>hm</think> <!-- <answer>12</answer> -->", "incorrect", 0.0),  # in an HTML comment
        (TAGS, "```\n<think>hm</think><answer>12</answer>", "incorrect", 0.0),  # an unclosed fence runs to the end
        (TAGS, "<think>the `</think>` tag</think><answer>12</answer>", "correct", 1.0),  # a tag quoted in code
        (TAGS, "<think>hm</think><answer>\n```python\nprint(12)\n```\n</answer>", "correct", 1.0),  # code answer
        (TAGS_ONLY, "<think>hm</think><answer>12</answer>\n```\nx\n```", "incorrect", 0.0),  # code is text too
        (TAGS, None, "abstain", None),  # malformed row: no completion text
        (JSON, 42, "abstain", None),  # malformed row: not a string
    ],
)
def test_verdict_table(config, completion, verdict, score):
    label = FormatVerifier(config).label(completion)
    assert (label.verdict, label.score, label.aspect) == (verdict, score, "format")
    assert label.rationale


def test_all_checks_must_pass_and_each_is_reported():
    v = FormatVerifier(FormatConfig(pattern="Ada", required_tags=("answer",), json_schema=SCHEMA))
    label = v.label('<answer>x</answer> {"name": "Ada"}')
    assert label.score == 0.0 and json.loads(label.raw) == {"pattern": True, "tags": True, "json_schema": False}
    assert "json_schema: not JSON" in label.rationale


def test_pathological_pattern_times_out_instead_of_hanging():
    # Nested quantifiers backtrack exponentially on a near-miss; the regex timeout bounds it.
    v = FormatVerifier(FormatConfig(pattern=r"(?:(?:a|aa)+)+b", mode="fullmatch", timeout_seconds=0.2))
    start = time.monotonic()
    label = v.label("a" * 60 + "c")
    assert (label.verdict, label.score) == ("timeout", None) and time.monotonic() - start < 5


@pytest.mark.parametrize(
    "raw",
    [
        {"required_tags": []},  # no check left at all
        {"pattern": "("},  # pattern does not compile
        {"pattern": "a", "mode": "match"},  # unknown mode
        {"required_tags": ["think", "think"]},  # duplicate tag
        {"required_tags": ["<think>"]},  # brackets belong to the tag, not its name
        {"json_schema": {"type": "thing"}},  # not a valid JSON Schema
        {"pattern": "a", "timeout_seconds": 0},  # no time to match
        {"patern": "a"},  # typo
    ],
)
def test_bad_config_is_rejected(raw):
    with pytest.raises(ConfigError):
        from_dict(FormatConfig, raw, "labelers.format.config")


def test_default_is_the_think_answer_format_unless_another_check_is_set():
    assert from_dict(FormatConfig, {}, "x").required_tags == ("think", "answer")
    assert FormatVerifier().label("<think>a</think><answer>b</answer>").score == 1.0
    assert from_dict(FormatConfig, {"pattern": "x"}, "x").required_tags == ()
    assert from_dict(FormatConfig, {"json_schema": SCHEMA}, "x").required_tags == ()
    assert from_dict(FormatConfig, {"pattern": "x", "required_tags": ["answer"]}, "x").required_tags == ("answer",)


def test_config_from_params_and_pickle_round_trip():
    config = from_dict(FormatConfig, {"required_tags": ["answer"], "json_schema": SCHEMA}, "x")
    v = FormatVerifier(config)
    assert v.label('<answer>1</answer>\n```json\n{"name": "A", "age": 1}\n```').score == 0.0  # primes the cache
    copy = pickle.loads(pickle.dumps(v))
    # With an answer tag required, the JSON is the tag's content (a block outside it is not the answer).
    assert copy.config == config and copy.label('<answer>{"name": "A", "age": 1}</answer>').score == 1.0


@pytest.mark.parametrize(
    "answer",
    ["<wbr>", "<span></span>", "<br>", "\\(\\)", "$$", "**", "[](x)", "<i>~~</i>"],
)
def test_markup_with_nothing_inside_is_an_empty_answer(answer):
    assert FormatVerifier(TAGS).label(f"<think>hm</think><answer>{answer}</answer>").verdict == "incorrect"
    assert FormatVerifier(TAGS).label(f"<think>{answer}</think><answer>12</answer>").verdict == "incorrect"


@pytest.mark.parametrize("answer", ["<b>12</b>", "$x=12$", "[12](x)", "`<br>`", "&lt;br&gt;"])
def test_markup_around_content_is_visible(answer):
    assert FormatVerifier(TAGS).label(f"<think>hm</think><answer>{answer}</answer>").verdict == "correct"


def test_tags_in_any_letter_case():
    assert FormatVerifier(TAGS).label("<THINK>hm</THINK>\n<Answer>12</ANSWER>").verdict == "correct"
    assert FormatVerifier(TAGS).label("<think>hm</think><ANSWER>1</ANSWER><answer>2</answer>").verdict == "incorrect"
