"""The text prompt filters compare: the user turns of a conversation."""

import polars as pl
import pytest

from rewardmill.transforms.aggregate.prompt_flags import FiltersConfig, prompt_flags, user_text

MESSAGES = pl.List(pl.Struct({"role": pl.String, "content": pl.String}))


@pytest.mark.parametrize(
    "messages, text",
    [
        ([{"role": "user", "content": "Add 2 and 3."}], "Add 2 and 3."),  # one user turn
        (
            [
                {"role": "system", "content": "Be brief."},  # not a user turn
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": "x"},
                {"role": "user", "content": "b"},
            ],
            "a\nb",
        ),  # user turns joined by newlines
        ([{"role": "system", "content": "only system"}], ""),  # no user turn
        ([], ""),  # no messages
        (None, ""),  # null messages
    ],
)
def test_user_text(messages, text):
    frame = pl.DataFrame({"messages": [messages]}, schema={"messages": MESSAGES})
    assert frame.select(user_text(pl.col("messages"))).item() == text


def test_prompt_flags_flags_the_larger_id_of_a_duplicate():
    flags = prompt_flags([("b", "What is 2 + 2?"), ("a", "what is 2 + 2"), ("c", "What is 2 - 2?")], FiltersConfig())
    assert list(flags) == ["b"] and flags["b"][0] == "duplicate_prompt"
