"""Prompt-level filters of `assemble`: exact and near-duplicate prompts and benchmark contamination.

In: (prompt_id, text of its user turns) of every prompt. Out: prompt_id -> (reason, detail) for each prompt no
output may use.
These need every prompt at once (a duplicate has to see its twin), so they run once over the prompt texts, before
the per-bucket work; the result is small (flagged prompts only) and reaches every bucket as a side input.
A prompt both contaminated and a duplicate is reported as contaminated (the stronger reason).
"""

from collections.abc import Iterable
from dataclasses import dataclass, field

import polars as pl

from rewardmill.transforms.aggregate.status import RolloutFilterConfig
from rewardmill.transforms.filters.contamination import DecontaminateConfig, find_contaminated, load_benchmarks
from rewardmill.transforms.filters.duplicates import DedupConfig, find_duplicates


@dataclass(frozen=True)
class FiltersConfig:
    """params `assemble.filters`."""

    min_confidence: float = 0.0  # rollouts whose aggregated confidence is lower (low_confidence)
    drop_truncated: bool = False  # rollouts cut at max_new_tokens (finish_reason = length)
    dedup: DedupConfig = field(default_factory=DedupConfig)
    decontaminate: DecontaminateConfig = field(default_factory=DecontaminateConfig)

    def __post_init__(self):
        self.rollouts()  # checks the rollout-level keys when params load, not when the pipeline runs

    def rollouts(self) -> RolloutFilterConfig:
        return RolloutFilterConfig(min_confidence=self.min_confidence, drop_truncated=self.drop_truncated)


def user_text(messages: pl.Expr) -> pl.Expr:
    """A conversation's user turns joined by newlines ("" for none): what duplicates and benchmarks compare."""
    user = pl.element().struct.field("role") == "user"
    turns = messages.list.eval(pl.element().filter(user).struct.field("content"))
    return turns.list.join("\n").fill_null("")


def prompt_flags(texts: Iterable[tuple[str, str]], cfg: FiltersConfig) -> dict[str, tuple[str, str]]:
    """(prompt_id, user_text) of every prompt -> prompt_id -> (reason, detail) for each prompt to drop."""
    texts = sorted(dict(texts).items())
    flags: dict[str, tuple[str, str]] = {}
    for prompt_id, flag in sorted(find_duplicates(texts, cfg.dedup).items()):
        flags[prompt_id] = (flag.reason, flag.detail)
    if cfg.decontaminate.files:
        benchmarks = load_benchmarks(cfg.decontaminate.files)
        for prompt_id, flag in sorted(find_contaminated(texts, benchmarks, cfg.decontaminate).items()):
            flags[prompt_id] = (flag.reason, flag.detail)
    return dict(sorted(flags.items()))
