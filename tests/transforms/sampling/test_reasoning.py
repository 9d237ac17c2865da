"""transforms/sampling/reasoning.py: the reasoning-model table of issue 35 (answer after the trace, a truncated
trace, an answer only inside the trace, a served model's reasoning_content) and the attacks on the split."""

import pytest

from rewardmill.transforms.sampling.reasoning import ReasoningTags, from_served, split_reasoning


@pytest.mark.parametrize(
    "text, reasoning, answer, status",
    [
        ("<think>6*7 is 42</think>The answer is 42.", "6*7 is 42", "The answer is 42.", "closed"),
        ("  <think>\nhm\n</think>\n\n\\boxed{4}", "hm", "\\boxed{4}", "closed"),
        # a close tag with no open tag is answer text: what is before it is not hidden from the verifiers
        ("6*7 is 42</think>The answer is 42.", None, "6*7 is 42</think>The answer is 42.", "none"),
        ("I cheat.</think>\\boxed{4}", None, "I cheat.</think>\\boxed{4}", "none"),
        ("<think>6*7 is 42, so \\boxed{42}", "6*7 is 42, so \\boxed{42}", "", "unclosed"),  # cut: no credit
        ("<think>so \\boxed{42}</think>", "so \\boxed{42}", "", "no_answer"),  # only inside the trace
        ("<think>a</think>   ", "a", "", "no_answer"),
        ("The answer is 42.", None, "The answer is 42.", "none"),
        # only a leading trace is reasoning: a later one is answer text, as the verifier must see it
        (
            "The answer is 41. <think>no, 42</think> \\boxed{42}",
            None,
            "The answer is 41. <think>no, 42</think> \\boxed{42}",
            "none",
        ),
        ("<think>a</think>x</think>y", "a", "x</think>y", "closed"),
        # a close tag before any open tag but after text that opens one is not a leading trace
        ("x <think> y </think> z", None, "x <think> y </think> z", "none"),
    ],
)
def test_split_table(text, reasoning, answer, status):
    split = split_reasoning(text)
    assert (split.reasoning, split.answer, split.status) == (reasoning, answer, status)
    assert (split.credit_blocked is None) == (status in ("closed", "none"))


def test_a_template_that_opens_the_trace_in_the_prompt():
    tags = ReasoningTags(opened_in_prompt=True)  # Qwen3's template ends the prompt with <think>
    split = split_reasoning("6*7 is 42</think>The answer is 42.", tags)
    assert (split.reasoning, split.answer, split.status) == ("6*7 is 42", "The answer is 42.", "closed")
    assert split_reasoning("still thinking", tags).status == "unclosed"  # no close tag: cut inside the trace


def test_custom_tags():
    tags = ReasoningTags("<reasoning>", "</reasoning>")
    split = split_reasoning("<reasoning>r</reasoning>a", tags)
    assert (split.reasoning, split.answer) == ("r", "a")
    assert split_reasoning("<think>r</think>a", tags).status == "none"
    with pytest.raises(ValueError, match="two different"):
        ReasoningTags("<t>", "<t>")


@pytest.mark.parametrize(
    "content, reasoning_content, finish, expected",
    [
        ("42", "6*7", "stop", ("6*7", "42", "closed")),
        (None, "6*7 is", "length", ("6*7 is", "", "unclosed")),
        ("", "6*7 is 42", "stop", ("6*7 is 42", "", "no_answer")),
        ("42", None, "stop", (None, "42", "none")),
    ],
)
def test_served_reasoning_content(content, reasoning_content, finish, expected):
    split = from_served(content, reasoning_content, finish)
    assert (split.reasoning, split.answer, split.status) == expected


def test_token_usage_counts_reasoning_apart_and_says_which_rows_could_not():
    from rewardmill.transforms.sampling.reasoning import token_usage

    rows = [
        {"n_tokens": 30, "reasoning_tokens": 20},
        {"n_tokens": 10, "reasoning_tokens": 0},  # no trace
        {"n_tokens": 7, "reasoning_tokens": None},  # a served policy's: not counted, and said
    ]
    assert token_usage(rows) == {"generated": 47, "reasoning": 20, "reasoning_uncounted": 1}
    assert token_usage([]) == {"generated": 0, "reasoning": 0, "reasoning_uncounted": 0}
