"""transforms/environments/tool_calls.py: the text protocol's parser on what policies write, malformed included."""

import pytest

from rewardmill.transforms.environments.tool_calls import MAX_CALLS, parse_tool_calls, protocol_prompt

KNOWN = {"python"}


def test_a_call_and_the_text_around_it():
    parsed = parse_tool_calls(
        'Let me compute. <tool_call>{"name": "python", "arguments": {"code": "print(6*7)"}}</tool_call> Done?',
        0,
        KNOWN,
    )
    assert parsed.errors == []
    assert parsed.message == {
        "role": "assistant",
        "content": "Let me compute.  Done?",
        "tool_calls": [
            {"id": "call_0_0", "type": "function", "function": {"name": "python", "arguments": {"code": "print(6*7)"}}}
        ],
    }


def test_arguments_as_a_json_string_are_read():
    parsed = parse_tool_calls(
        '<tool_call>{"name": "python", "arguments": "{\\"code\\": \\"1\\"}"}</tool_call>', 2, KNOWN
    )
    assert parsed.message["tool_calls"][0]["function"]["arguments"] == {"code": "1"} and not parsed.errors


@pytest.mark.parametrize(
    "body, error",
    [
        ('<tool_call>{"name": "python", "arguments": {"code": </tool_call>', "not JSON"),
        ("<tool_call>[1, 2]</tool_call>", "JSON list, not an object"),
        ('<tool_call>{"arguments": {}}</tool_call>', "no string `name`"),
        ('<tool_call>{"name": "shell", "arguments": {}}</tool_call>', "unknown tool 'shell'"),
        ('<tool_call>{"name": "python", "arguments": [1]}</tool_call>', "`arguments` is not an object"),
        ('<tool_call>{"name": "python", "arguments": "nope"}</tool_call>', "string that is not JSON"),
        ('<tool_call>{"name": "python", "arguments": {}}', "without </tool_call>"),
    ],
)
def test_a_malformed_call_is_an_error_not_an_exception(body, error):
    parsed = parse_tool_calls(f"text {body}", 1, KNOWN)
    assert len(parsed.errors) == 1 and error in parsed.errors[0]["error"] and parsed.errors[0]["id"] == "call_1_0"
    assert "tool_calls" not in parsed.message and parsed.message["content"].startswith("text")


def test_too_many_calls_are_refused_past_the_limit():
    one = '<tool_call>{"name": "python", "arguments": {"code": "1"}}</tool_call>'
    parsed = parse_tool_calls(one * (MAX_CALLS + 3), 0, KNOWN)
    assert len(parsed.message["tool_calls"]) == MAX_CALLS and len(parsed.errors) == 3
    assert len({c["id"] for c in parsed.message["tool_calls"]} | {e["id"] for e in parsed.errors}) == MAX_CALLS + 3


def test_no_call_is_plain_content():
    assert parse_tool_calls("The answer is 42.", 0, KNOWN).message == {
        "role": "assistant",
        "content": "The answer is 42.",
    }


def test_the_protocol_prompt_names_the_tools():
    tools = [{"type": "function", "function": {"name": "python", "description": "run code", "parameters": {}}}]
    text = protocol_prompt(tools)
    assert "<tool_call>" in text and '"name": "python"' in text
