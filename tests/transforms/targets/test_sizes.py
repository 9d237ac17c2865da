"""How prompt sources grow: which params keys size them, and that growing only ever adds prompts (the property that
makes `rewardmill repro`'s last round equal a single run at the final sizes)."""

import pytest

from rewardmill.transforms.sources.registry import parse_source
from rewardmill.transforms.targets.sizes import scaled, source_sizes, with_sizes


@pytest.mark.parametrize(
    "raw, sizes",
    [
        ({"name": "a", "kind": "arithmetic", "count": 40}, {("count",): 40}),
        ({"name": "a", "kind": "arithmetic"}, {("count",): 64}),  # the kind's default, filled in
        ({"name": "c", "kind": "code_basics", "limit": 5}, {("limit",): 5}),
        ({"name": "c", "kind": "code_basics"}, {}),  # limit null = every task: nothing more to take
        ({"name": "h", "kind": "humaneval", "limit": 10}, {("limit",): 10}),
        ({"name": "f", "kind": "file", "path": "prompts.jsonl"}, {}),  # a whole file cannot grow
        (
            {"name": "g", "kind": "reasoning_gym", "tasks": {"leg_counting": {"count": 4}, "basic_arithmetic": None}},
            {("tasks", "leg_counting", "count"): 4, ("tasks", "basic_arithmetic", "count"): 8},
        ),
    ],
)
def test_the_sizes_a_source_can_grow_by(raw, sizes):
    assert source_sizes(raw, "prompts.sources[0]") == sizes


def test_scaled_sizes_round_up_and_never_shrink():
    assert scaled({("count",): 40}, 2.31) == {("count",): 93}
    assert scaled({("count",): 40}, 2.0) == {("count",): 80}  # no float fuzz past an exact product
    assert scaled({("count",): 40}, 0.5) == {("count",): 40}


def test_with_sizes_sets_a_task_with_no_spec_and_leaves_the_entry_it_was_given():
    raw = {"name": "g", "kind": "reasoning_gym", "tasks": {"leg_counting": None}}
    grown = with_sizes(raw, {("tasks", "leg_counting", "count"): 12})
    assert grown["tasks"] == {"leg_counting": {"count": 12}}
    assert raw["tasks"] == {"leg_counting": None}


def prompts_of(raw: dict) -> list[str]:
    """Each record's text as the source yields it (a prompt, or a record's messages)."""
    return [repr(record.get("prompt", record.get("messages"))) for _, record in parse_source(raw, "s").records()]


@pytest.mark.parametrize(
    "raw, path",
    [
        ({"name": "a", "kind": "arithmetic", "count": 12, "levels": [1, 2, 3, 4]}, ("count",)),
        ({"name": "c", "kind": "code_basics", "limit": 4}, ("limit",)),
        ({"name": "h", "kind": "humaneval", "limit": 3}, ("limit",)),
        ({"name": "g", "kind": "reasoning_gym", "tasks": {"leg_counting": {"count": 3, "seed": 5}}},
         ("tasks", "leg_counting", "count")),
    ],
)  # fmt: skip
def test_a_grown_source_yields_the_smaller_sources_prompts_first(raw, path):
    """Each growable kind, read at twice its size, starts with exactly the prompts of its size: a round adds prompts
    and never changes one the earlier rounds sampled and labeled."""
    small = prompts_of(raw)
    size = source_sizes(raw, "s")[path]
    large = prompts_of(with_sizes(raw, {path: 2 * size}))
    assert len(large) == 2 * len(small) and large[: len(small)] == small
