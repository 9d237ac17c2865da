"""The result every prompt filter returns for a prompt it drops: a countable reason and a readable detail."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Flag:
    """Why one prompt is dropped.

    `reason` is a short code that rejects are counted by (duplicate_prompt | near_duplicate_prompt |
    contaminated); `detail` says what it collided with (the kept prompt, the benchmark file:line) and how much.
    """

    reason: str
    detail: str
