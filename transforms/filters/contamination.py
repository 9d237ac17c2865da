"""Find prompts that overlap benchmark test prompts, so no dataset leaks a benchmark into training.

In: (prompt_id, text) pairs and benchmark texts (from `load_benchmarks`).  Out: {prompt_id: Flag} with reason
`contaminated` for every prompt whose share of word n-grams found in the benchmarks reaches min_overlap.
Texts are compared after the same normalization as duplicates (case, spacing, punctuation folded).
"""

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rewardmill.transforms.filters.flag import Flag
from rewardmill.transforms.filters.text import ngram_hashes, normalized_words

# Row fields that hold a benchmark prompt, tried in this order; `messages` (the user turns) comes last.
TEXT_FIELDS = ("prompt", "question", "problem", "instruction", "input", "text")
FORMATS = (".jsonl", ".json", ".parquet", ".txt")
FIX_HINT = "fix or remove it in params assemble.filters.decontaminate.files"


@dataclass(frozen=True)
class DecontaminateConfig:
    """params assemble.filters.decontaminate."""

    files: tuple[str, ...] = ()  # benchmark prompt files (.jsonl / .json / .parquet / .txt); empty = off
    ngram: int = 8  # word n-grams (prompts shorter than this compare as a whole)
    min_overlap: float = 0.5  # share of a prompt's n-grams found in the benchmarks at which it is contaminated

    def __post_init__(self):
        if self.ngram < 1:
            raise ValueError(f"ngram must be >= 1 word, got {self.ngram}")
        if not 0 < self.min_overlap <= 1:
            raise ValueError(f"min_overlap must be in (0, 1], got {self.min_overlap}")


@dataclass(frozen=True)
class BenchmarkText:
    text: str
    where: str  # "file:N": N is the 1-based line (.jsonl, .txt) or item/row (.json, .parquet)


def load_benchmarks(paths: Iterable[str]) -> list[BenchmarkText]:
    """Benchmark files -> their prompt texts, in file order; no paths = decontamination off (an empty list).

    Raises FileNotFoundError / ValueError naming the file (and line) for a missing file, an unknown extension,
    bad JSON or a row without a text field.
    """
    return [text for path in paths for text in _read(path)]


def find_contaminated(
    prompts: Iterable[tuple[str, str]], benchmarks: list[BenchmarkText], cfg: DecontaminateConfig
) -> dict[str, Flag]:
    """(prompt_id, text) pairs -> {prompt_id: Flag} for prompts whose n-gram overlap share is >= min_overlap.

    A prompt's grams are its word n-grams of size `ngram` (counted by position); a prompt with fewer words is one
    gram of all of them, found when a benchmark contains those words as a contiguous run (or equals them).
    Prompts without words are never contaminated. The detail names the share and the benchmark the prompt most
    likely comes from: the one first (in file order) to hold most of its matched grams.
    """
    words = {pid: w for pid, text in prompts if (w := normalized_words(text))}
    if not benchmarks or not words:
        return {}
    benchmark_words = [normalized_words(b.text) for b in benchmarks]
    by_size: dict[int, list[str]] = {}  # gram size -> prompts compared with grams of that size
    for pid in sorted(words):
        by_size.setdefault(min(len(words[pid]), cfg.ngram), []).append(pid)
    flags = {}
    for size, ids in sorted(by_size.items()):
        known, first_benchmark = _benchmark_grams(benchmark_words, size)
        if not len(known):  # no benchmark has a gram of this size
            continue
        hashes, offsets = ngram_hashes([words[pid] for pid in ids], size)
        slot = np.minimum(np.searchsorted(known, hashes), len(known) - 1)
        found = known[slot] == hashes
        share = np.add.reduceat(found.astype(np.int64), offsets[:-1]) / np.diff(offsets)
        for i in np.flatnonzero(share >= cfg.min_overlap).tolist():
            grams = slice(offsets[i], offsets[i + 1])
            # a gram counts for the first benchmark holding it; most grams wins, ties go to the earlier file line
            source = Counter(first_benchmark[slot[grams][found[grams]]].tolist())
            likely = min(source, key=lambda b: (-source[b], b))
            detail = f"{round(float(share[i]), 3)} of its {size}-word grams found in benchmarks"
            flags[ids[i]] = Flag("contaminated", f"{detail}, most in {benchmarks[likely].where}")
    return flags


def _benchmark_grams(benchmark_words: list[list[str]], size: int) -> tuple[np.ndarray, np.ndarray]:
    """-> (sorted distinct gram hashes of all benchmarks, index of the first benchmark holding each)."""
    hashes, offsets = ngram_hashes(benchmark_words, size)
    owner = np.repeat(np.arange(len(benchmark_words)), np.diff(offsets))
    known, first = np.unique(hashes, return_index=True)  # first occurrence = lowest benchmark index
    return known, owner[first]


def _read(path: str) -> Iterator[BenchmarkText]:
    file = Path(path)
    if file.suffix not in FORMATS:
        raise ValueError(f"{path}: unknown benchmark file type {file.suffix!r}; use one of {FORMATS} ({FIX_HINT})")
    if not file.is_file():
        raise FileNotFoundError(f"{path}: benchmark file not found ({FIX_HINT})")
    if file.suffix == ".txt":
        for line_no, line in enumerate(_text(file).splitlines(), start=1):
            if line.strip():
                yield BenchmarkText(line.strip(), f"{path}:{line_no}")
    elif file.suffix == ".jsonl":
        for line_no, line in enumerate(_text(file).splitlines(), start=1):
            if line.strip():
                yield _row_text(
                    _json(line, f"{path}:{line_no}", "each line must be one JSON object"), f"{path}:{line_no}"
                )
    elif file.suffix == ".json":
        rows = _json(_text(file), path, "the file must be one JSON list of objects")
        if not isinstance(rows, list):
            raise ValueError(f"{path}: a .json benchmark file must hold a list of objects, got {type(rows).__name__}")
        for item_no, row in enumerate(rows, start=1):
            yield _row_text(row, f"{path}:{item_no}")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            rows = pq.read_table(file).to_pylist()
        except pa.ArrowException as exc:
            raise ValueError(f"{path}: not a readable Parquet file ({exc}); {FIX_HINT}") from exc
        for row_no, row in enumerate(rows, start=1):
            yield _row_text(row, f"{path}:{row_no}")


def _text(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{file}: not UTF-8 text ({exc}); {FIX_HINT}") from exc


def _json(text: str, where: str, expected: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: invalid JSON ({exc}); {expected}") from exc


def _row_text(row: Any, where: str) -> BenchmarkText:
    """A benchmark row -> its prompt: the first non-empty text field, else the user turns of `messages`."""
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a JSON object with a prompt field, got {type(row).__name__}")
    for field in TEXT_FIELDS:
        if isinstance(row.get(field), str) and row[field].strip():
            return BenchmarkText(row[field], where)
    messages = row.get("messages")
    if isinstance(messages, list):
        user_turns = [m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        if user_turns and all(isinstance(c, str) for c in user_turns) and "".join(user_turns).strip():
            return BenchmarkText("\n".join(user_turns), where)
    raise ValueError(
        f"{where}: no prompt text; a row needs a non-empty string field among {list(TEXT_FIELDS)} or `messages` "
        f"with user turns (found keys {sorted(row)}); {FIX_HINT}"
    )
