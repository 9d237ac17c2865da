"""The served policy's replies as samples: `reasoning_content` sent apart from the answer (vLLM's and SGLang's
reasoning parsers), read from the openai SDK's own response objects. No server here has a reasoning parser for the
default model (none accepts its vocabulary), so the replies are the SDK's objects built from JSON, as a server sends
it; tests/pipelines/test_rollouts_openai.py runs the real servers."""

import pytest
from openai.types.chat import ChatCompletion

from rewardmill.transforms.judges.client import JudgeResponse
from rewardmill.transforms.judges.openai_client import _completion
from rewardmill.transforms.sampling.endpoint import EndpointPolicy
from rewardmill.transforms.sampling.openai_backend import OpenAIPolicyHandler, api_message
from rewardmill.transforms.sampling.params import SamplingParams
from rewardmill.transforms.sampling.reasoning import ReasoningTags, from_served, split_reasoning

TAGS = ReasoningTags()


def reply(content, finish="stop", **message) -> JudgeResponse:
    body = {
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": finish,
                     "message": {"role": "assistant", "content": content, **message}}],
    }  # fmt: skip
    return JudgeResponse((_completion(ChatCompletion.model_validate(body).choices[0]),), completion_tokens=5)


def handler(reasoning=TAGS) -> OpenAIPolicyHandler:
    return OpenAIPolicyHandler(EndpointPolicy(base_url="http://127.0.0.1:1/v1", model="m"), SamplingParams(), 1,
                               reasoning=reasoning)  # fmt: skip


@pytest.mark.parametrize(
    ("response", "status", "answer", "reasoning"),
    [
        (reply("42", reasoning_content="6*7"), "closed", "42", "6*7"),  # vLLM's key
        (reply("42", reasoning="6*7"), "closed", "42", "6*7"),  # newer vLLM's key
        (reply(None, "length", reasoning_content="6*7 is"), "unclosed", "", "6*7 is"),  # cut while reasoning
        (reply(None, reasoning_content="6*7"), "no_answer", "", "6*7"),  # the answer only inside the reasoning
        (reply("<think>x</think>42"), "closed", "42", "x"),  # no parser: the tags in the text, split as any
        (reply("42"), "none", "42", None),
    ],
)
def test_reasoning_content_is_reasoning_and_a_cut_trace_gets_no_credit(response, status, answer, reasoning):
    sample = handler()._sample_of(0, 7, response)
    split = split_reasoning(sample.completion, TAGS)  # the split the stage makes after the rollouts cache
    assert (split.status, split.answer, split.reasoning) == (status, answer, reasoning)
    completion = response.completions[0]
    if completion.reasoning is not None:  # the same reading as the served-message rule
        assert split == from_served(completion.text, completion.reasoning, sample.finish_reason)


def test_without_rollouts_reasoning_the_trace_is_left_out_and_said_once(caplog):
    h = handler(reasoning=None)
    samples = [h._sample_of(0, 7, reply("42", reasoning_content="6*7")) for _ in range(2)]
    assert [s.completion for s in samples] == ["42", "42"]
    assert sum("set rollouts.reasoning to keep it" in r.message for r in caplog.records) == 1


def test_a_turn_goes_to_the_api_with_tool_calls_as_json_and_untrusted_specials_broken():
    call = {"id": "c0", "type": "function", "function": {"name": "python", "arguments": {"code": "print(1)"}}}
    sent = api_message({"role": "assistant", "content": None, "tool_calls": [call], "step_info": {}}, ())
    assert sent == {"role": "assistant", "content": "",
                    "tool_calls": [{"id": "c0", "type": "function",
                                    "function": {"name": "python", "arguments": '{"code": "print(1)"}'}}]}  # fmt: skip
    tool = api_message({"role": "tool", "content": "1<|im_end|>", "tool_call_id": "c0", "name": "python"},
                       ("<|im_end|>",))  # fmt: skip
    assert "<|im_end|>" not in tool["content"] and (tool["tool_call_id"], tool["name"]) == ("c0", "python")
