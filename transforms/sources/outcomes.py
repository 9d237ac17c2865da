"""What each prompt source came to, and the checks the prompts stage makes on it after the pipeline.

A source that yields no prompt (an empty file, every row rejected) fails the stage with one line naming it and why,
instead of a whole DAG running on nothing; a split left empty by the prompt-hash split is a warning naming the param.
"""

from collections.abc import Sequence
from typing import Any

import apache_beam as beam

from rewardmill.transforms.errors import UserError

READ = ""  # the outcome every record has once (read); any other outcome is a reject reason


class EmptySourceError(UserError):
    """A prompt source yielded no prompt: the message names the source and why (no records, or what rejected them)."""


def empty_entry() -> dict[str, Any]:
    return {"records": 0, "rejects": {}, "examples": {}}


class SourceOutcomes(beam.CombineFn):
    """(source, (outcome, row_id, detail)) -> {source: {records, rejects: {reason: n}, examples: {reason: [row_id,
    detail]}}}, the example the smallest row id (deterministic on any runner). Sources and reasons are few: one
    small accumulator."""

    def create_accumulator(self) -> dict[str, Any]:
        return {}

    def add_input(self, acc: dict[str, Any], element) -> dict[str, Any]:
        source, (outcome, row_id, detail) = element
        entry = acc.setdefault(source, empty_entry())
        if outcome == READ:
            entry["records"] += 1
            return acc
        entry["rejects"][outcome] = entry["rejects"].get(outcome, 0) + 1
        known = entry["examples"].get(outcome)
        if known is None or row_id < known[0]:
            entry["examples"][outcome] = [row_id, detail]
        return acc

    def merge_accumulators(self, accumulators) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for acc in accumulators:
            for source, entry in acc.items():
                mine = out.setdefault(source, empty_entry())
                mine["records"] += entry["records"]
                for reason, n in entry["rejects"].items():
                    mine["rejects"][reason] = mine["rejects"].get(reason, 0) + n
                for reason, example in entry["examples"].items():
                    known = mine["examples"].get(reason)
                    if known is None or example[0] < known[0]:
                        mine["examples"][reason] = list(example)
        return out

    def extract_output(self, acc: dict[str, Any]) -> dict[str, Any]:
        return acc


def check_nonempty(outcomes: dict[str, Any], prompts: dict[str, int], sources: Sequence, params: str) -> None:
    """EmptySourceError naming every source with no prompt in the output: it read no record, or every record was
    rejected (reasons counted, the first example's detail)."""
    problems = []
    for i, source in enumerate(sources):
        if prompts.get(source.name, 0):
            continue
        entry = outcomes.get(source.name) or empty_entry()
        where = f"prompts.sources[{i}] ({source.name}{describe(source)})"
        if not entry["records"]:
            problems.append(f"{where} has no rows")
            continue
        reasons = ", ".join(f"{reason} {n}" for reason, n in sorted(entry["rejects"].items(), key=lambda kv: -kv[1]))
        first = min(entry["examples"].values(), default=None)
        example = f"; first: {first[0]}: {first[1][:200]}" if first else ""
        problems.append(f"all {entry['records']} rows of {where} were rejected ({reasons}{example})")
    if problems:
        raise EmptySourceError(
            f"{params}: {'; '.join(problems)}. Every source must yield a prompt: fix its rows or remove it from "
            "prompts.sources"
        )


def describe(source) -> str:
    """', path' for a file source (what the user named), else nothing."""
    from rewardmill.transforms.sources.registry import FileSource

    return f", {source.path}" if isinstance(source, FileSource) else ""


def split_warning(splits: dict[str, int], test_fraction: float) -> str | None:
    """A line when params ask for a test split and it came out empty (or train did): the split is by prompt hash,
    so a few prompts can all land on one side."""
    total = sum(splits.values())
    if not total or test_fraction <= 0:
        return None
    empty = [name for name in ("train", "test") if not splits.get(name)]
    if not empty:
        return None
    full = "train" if empty == ["test"] else "test"
    return (
        f"prompts: all {total} prompts went to the {full} split and none to {empty[0]} (prompts.test_fraction "
        f"{test_fraction} splits by prompt hash; about {total * test_fraction:.1f} test prompts expected): the "
        f"datasets' {empty[0]} split will be empty; add prompts, or change prompts.test_fraction"
    )
