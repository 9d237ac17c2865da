import pytest

from rewardmill.transforms.labelers.reasoning import answer_text, split_reasoning


@pytest.mark.parametrize(
    ("completion", "reasoning", "answer", "finished"),
    [
        ("plain answer", None, "plain answer", True),  # no block: all answer
        ("<think>hmm</think>42", "hmm", "42", True),  # a leading block
        ("  \n<think>a</think> b", "a", " b", True),  # leading whitespace is allowed
        ("<THINKING>a</THINKING>b", "a", "b", True),  # the long tag, any case
        ("<think>a</think>b</think>c", "a", "b</think>c", True),  # the first close ends the block
        ("bad words, here</think>fine", None, "bad words, here</think>fine", True),  # a stray close hides nothing
        ("answer first <think>x</think> y", None, "answer first <think>x</think> y", True),  # not leading
        ("<think>never closed 5", "never closed 5", "", False),  # unfinished: no answer
        ("<think>a</thinking>b", "a</thinking>b", "", False),  # the close must match the open tag
    ],
)
def test_split_reasoning(completion, reasoning, answer, finished):
    split = split_reasoning(completion)
    assert (split.reasoning, split.answer, split.finished) == (reasoning, answer, finished)
    assert answer_text(completion) == answer
