"""python_tool's `system_prompt: null` (the default): the chat template's own tool format where it has one, the text
protocol where it has none. Decided by rendering the template (`renders_tools`), with SmolLM2's real tokenizer and
the same tokenizer under a Hermes-style tools template (data/tools_template.jinja)."""

import json
import shutil
from pathlib import Path

import pytest

from rewardmill.transforms.environments.python_tool import PythonToolConfig, PythonToolEnvironment
from rewardmill.transforms.environments.tool_calls import protocol_prompt
from rewardmill.transforms.sampling.transformers_generate import renders_tools, turn_texts

TEMPLATE = Path(__file__).parent / "data/tools_template.jinja"
CALL = '<tool_call>{"name": "python", "arguments": {"code": "print(6 * 7)"}}</tool_call>'


def with_tools_template(policy_dir: Path, dest: Path) -> Path:
    """A copy of the policy folder whose chat template has a tool format (the weights linked, not copied)."""
    dest.mkdir()
    for item in policy_dir.iterdir():
        if item.name == "model.safetensors":
            (dest / item.name).symlink_to(item)
        elif item.is_file():
            shutil.copy(item, dest / item.name)
    shutil.copy(TEMPLATE, dest / "chat_template.jinja")
    return dest


@pytest.fixture(scope="module")
def tokenizers(policy_dir, tmp_path_factory):
    from transformers import AutoTokenizer

    tools = with_tools_template(policy_dir, tmp_path_factory.mktemp("tools") / "policy")
    return AutoTokenizer.from_pretrained(policy_dir), AutoTokenizer.from_pretrained(tools)


def test_a_template_renders_tools_or_not(tokenizers):
    plain, tools = tokenizers
    assert renders_tools(plain) is False  # SmolLM2's template ignores tools
    assert renders_tools(tools) is True


@pytest.mark.parametrize("native", [False, True])
def test_the_tool_format_follows_the_template(tokenizers, native):
    """Native: no protocol system message, the template lists the tools and renders the call it parsed from the
    content; text protocol: the system message teaches the tags and the content keeps the call as written."""
    tokenizer = tokenizers[native]
    env = PythonToolEnvironment(PythonToolConfig())
    try:
        assert env.config.system_prompt is True  # until the stage says what the template does: the text protocol
        env.use_template(renders_tools(tokenizer))
        assert env.config.system_prompt is (not native)
        system = env.system_message()
        parsed = env.parse("Let me compute. " + CALL, 0)
        assert parsed["tool_calls"][0]["function"]["arguments"] == {"code": "print(6 * 7)"}
        assert parsed["content"] == ("Let me compute." if native else "Let me compute. " + CALL)
        prompt = [{"role": "user", "content": "What is 6*7?"}]
        conversation = [
            *([system] if system else []),
            *prompt,
            {"role": "assistant", "content": parsed["content"], "tool_calls": parsed["tool_calls"]},
            {"role": "tool", "tool_call_id": parsed["tool_calls"][0]["id"], "name": "python", "content": "42"},
        ]
        (text,) = turn_texts(tokenizer, [conversation], env.tools(), [len(conversation) - 2])
    finally:
        env.close()
    if native:
        assert system is None and protocol_prompt(env.tools()) not in text
        assert json.dumps(env.tools()[0]) in text and "<tool_response>\n42\n</tool_response>" in text
        assert '<tool_call>\n{"name": "python", "arguments": {"code": "print(6 * 7)"}}\n</tool_call>' in text
    else:
        assert system["content"] == protocol_prompt(env.tools()) and system["content"] in text
        assert CALL in text and "<tools>" not in text


def test_an_explicit_setting_is_kept():
    for setting in (True, False):
        env = PythonToolEnvironment(PythonToolConfig(system_prompt=setting))
        try:
            env.use_template(not setting)
            assert env.config.system_prompt is setting
        finally:
            env.close()
