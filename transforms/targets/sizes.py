"""How a prompt source grows: the params keys that size it, and the source at a larger size.

Growing must only ever add prompts: every kind here yields the first N of a fixed sequence (the arithmetic generator
draws problem i from one seeded stream; a file, HumanEval, code_basics, a verifiers taskset and a reasoning-gym
dataset are read in order), so a source at size M > N yields the same N prompts and M - N new ones. That is what
makes the last round of `rewardmill repro` equal a single run at the final size. A source with no size (a whole
file, a recorded-traces file, a `limit: null`) is already at its end: it cannot grow.
"""

import math
from typing import Any

from rewardmill.transforms.sources.registry import (
    ArithmeticSource,
    CodeBasicsSource,
    HFDatasetSource,
    HumanEvalSource,
    ReasoningGymSource,
    VerifiersSource,
    parse_source,
)

# keys inside the source's params entry, e.g. ("count",) or ("tasks", "leg_counting", "count")
SizePath = tuple[str, ...]
LIMITED = (HFDatasetSource, HumanEvalSource, CodeBasicsSource, VerifiersSource)  # `limit`: the first N; null = all


def source_sizes(raw: dict[str, Any], where: str) -> dict[SizePath, int]:
    """The sizes a source's params entry sets (its kind's defaults filled in); {} = it cannot grow."""
    source = parse_source(raw, where)
    if isinstance(source, ArithmeticSource):
        return {("count",): source.count}
    if isinstance(source, LIMITED):
        return {} if source.limit is None else {("limit",): source.limit}
    if isinstance(source, ReasoningGymSource):
        return {("tasks", task, "count"): spec["count"] for task, spec in source.tasks.items()}
    return {}


def scaled(base: dict[SizePath, int], factor: float) -> dict[SizePath, int]:
    """Each base size times `factor`, rounded up (never below the base: growing only adds)."""
    return {path: max(size, math.ceil(size * factor - 1e-9)) for path, size in base.items()}


def with_sizes(raw: dict[str, Any], sizes: dict[SizePath, int]) -> dict[str, Any]:
    """A copy of the params entry `raw` with `sizes` set (what `rewardmill repro` writes to params.yaml)."""
    out = dict(raw)
    for path, size in sizes.items():
        set_size(out, path, size, copy=True)
    return out


def set_size(entry: dict, path: SizePath, size: int, copy: bool = False) -> None:
    """Set entry[path[0]]...[path[-1]] = size, creating empty mappings on the way (a task with no spec: `{}` or
    null); `copy`: copy each mapping on the way instead of changing the caller's (for plain dicts)."""
    node = entry
    for key in path[:-1]:
        child = node.get(key)
        child = {} if child is None else (dict(child) if copy else child)
        node[key] = child
        node = child
    node[path[-1]] = size
