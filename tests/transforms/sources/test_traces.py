"""Prompts source kind `traces`: recorded transcripts (OpenAI chat format with tool calls, and ShareGPT) grouped by
their opening into prompts with their trajectories; each malformed line is its own reject, naming the line."""

import json

import pytest

from rewardmill.transforms.sources import traces
from rewardmill.transforms.sources.normalize import RecordError

CALL = {"id": "c1", "type": "function", "function": {"name": "calc", "arguments": '{"expression": "6*7"}'}}
OPENING = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 6*7?"}]
GOOD = {
    "messages": [
        *OPENING,
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "name": "calc", "content": "42"},
        {"role": "assistant", "content": "42"},
    ],
    "tools": [{"type": "function", "function": {"name": "calc", "parameters": {"type": "object"}}}],
    "reference": "42",
    "task": "math",
}


def write(tmp_path, lines) -> str:
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return str(path)


def test_transcripts_with_the_same_opening_are_one_prompt_with_each_trace_kept(tmp_path):
    second = {**GOOD, "messages": [*OPENING, {"role": "assistant", "content": "41"}]}
    other = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    path = write(tmp_path, [GOOD, other, second])
    records = list(traces.generate("logs", path, "openai", "open"))
    assert [row_id for row_id, _ in records] == ["logs:0", "logs:1"]
    first = records[0][1]
    assert first["messages"] == OPENING and first["reference"] == "42" and first["task"] == "math"
    kept = first["metadata"]["traces"]
    assert [t["line"] for t in kept] == [1, 3]
    assert kept[0]["turns"][0]["tool_calls"][0]["function"] == {"name": "calc", "arguments": {"expression": "6*7"}}
    assert kept[0]["turns"][-1] == {"role": "assistant", "content": "42"} and kept[0]["tools"] == GOOD["tools"]
    recorded = first["metadata"]["recorded"]
    assert recorded["sha256"] == traces.file_digest(path) and recorded["file"] == "traces.jsonl"
    assert records[1][1]["task"] == "open" and records[1][1]["metadata"]["recorded"]["lines"] == "2"


def test_sharegpt_turns_become_messages_with_tool_calls(tmp_path):
    line = {
        "conversations": [
            {"from": "human", "value": "What is 6*7?"},
            {"from": "function_call", "value": '{"name": "calc", "arguments": {"expression": "6*7"}}'},
            {"from": "observation", "value": "42"},
            {"from": "gpt", "value": "42"},
        ]
    }
    ((_, record),) = traces.generate("s", write(tmp_path, [line]), "sharegpt", "open")
    turns = record["metadata"]["traces"][0]["turns"]
    assert [t["role"] for t in turns] == ["assistant", "tool", "assistant"]
    assert turns[1]["tool_call_id"] == turns[0]["tool_calls"][0]["id"]


def broken(messages):
    return {"messages": messages}


@pytest.mark.parametrize(
    "line, reason",
    [
        ("{not json", "bad_json"),
        ("[1, 2]", "bad_json"),  # not an object
        ({"text": "hi"}, "bad_transcript"),  # no messages
        (broken([{"role": "user", "content": "q"}, "a"]), "bad_transcript"),  # a message that is not an object
        (broken([{"role": "wizard", "content": "q"}]), "bad_transcript"),  # unknown role
        (broken([{"role": "user", "content": {"x": 1}}, {"role": "assistant", "content": "a"}]), "bad_transcript"),
        (broken([{"role": "assistant", "content": "a"}]), "bad_transcript"),  # opens with no user message
        (broken([{"role": "user", "content": "q"}]), "no_answer"),  # nothing after the prompt
        (
            broken([*OPENING, {"role": "assistant", "content": None, "tool_calls": [CALL]}]),
            "no_answer",
        ),  # ends on a call
        (broken(GOOD["messages"][:-1]), "no_answer"),  # ends on the tool result
        (
            broken([*OPENING, {"role": "assistant", "content": None, "tool_calls": [{"function": {}}]}]),
            "bad_tool_call",
        ),
        (
            broken([*OPENING, {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{x"}}]}]),
            "bad_tool_call",
        ),
        (
            broken(
                [
                    *OPENING,
                    {"role": "tool", "tool_call_id": "nope", "content": "x"},
                    {"role": "assistant", "content": "a"},
                ]
            ),
            "no_answer",  # a tool result straight after the prompt: no assistant turn starts the trajectory
        ),
        (
            broken(
                [
                    *OPENING,
                    {"role": "assistant", "content": "let me"},
                    {"role": "tool", "tool_call_id": "zz", "content": "x"},
                    {"role": "assistant", "content": "a"},
                ]
            ),
            "bad_tool_call",  # answers no call
        ),
        ({**GOOD, "reference": "41"}, "conflicting_prompt"),  # same opening, another reference than line 1's
    ],
)
def test_a_malformed_transcript_is_its_lines_reject_with_a_reason(tmp_path, line, reason):
    path = write(tmp_path, [GOOD, line])
    records = list(traces.generate("logs", path, "openai", "open"))
    rejects = [(row_id, r) for row_id, r in records if isinstance(r, RecordError)]
    assert [(row_id, r.reason) for row_id, r in rejects] == [(f"{path}:2", reason)]
    assert "line 2" in str(rejects[0][1])
    good = [r for _, r in records if not isinstance(r, RecordError)]
    assert len(good) == 1 and [t["line"] for t in good[0]["metadata"]["traces"]] == [1]  # the good line is kept
