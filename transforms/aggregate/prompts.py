"""A prompt's own columns, which every rollout of the prompt repeats: the row builders (rl, sft, pairs) work on the
narrow scored rollouts and join these once per prompt, at the end."""

import polars as pl

PROMPT_COLUMNS = ("prompt_id", "messages", "reference", "tests", "constraints")


def prompt_columns(scored: pl.DataFrame, prompts: pl.DataFrame | None) -> pl.DataFrame:
    """PROMPT_COLUMNS once per prompt: from `prompts`, or (None) from the first row of each prompt in `scored`.
    A prompt's columns are equal on all its rows (its id is a hash of its messages), so any copy will do."""
    source = prompts if prompts is not None else scored
    return source.select(PROMPT_COLUMNS).filter(pl.col("prompt_id").is_first_distinct())
