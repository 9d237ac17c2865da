"""Gold packs: labeled completions that measure a labeler (row format: packs/README.md).

`load_packs(folder)` reads every `*.jsonl` pack into GoldRows, checking each row (a bad one raises GoldPackError
naming the file, the line and the reason). `rows_for(...)` picks the rows that measure one configured labeler:

1. the rows written for its registry key (`labeler` field), when the pack has any; else
2. the rows of its tasks written for other labelers with default settings (`config: {}`): a labeler the packs do
   not name (a judge that appeals math_answer's negatives, a panel) is measured on the math rows. A labeler with no
   tasks and no rows of its own is not measured.

Either way a row whose task (its `row.task`, else the one task of the labeler it was written for) is not among the
labeler's tasks is left out, as the label stage would count it not applicable; and a row written for other
settings of the same labeler (a `config` key whose value differs from the configured one) is left out, because its
gold verdict holds for those settings only. What was left out is counted by reason.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardmill.schemas.label import VERDICTS

PACKS_DIR = Path(__file__).resolve().parent / "packs"  # shipped as package data (pyproject.toml)
KIND_GOLD = {"honest": "correct", "hack": "incorrect", "wrong": "incorrect"}  # kind -> the only gold it allows
REQUIRED = ("id", "labeler", "class", "kind", "gold", "row")
OPTIONAL = ("config", "verdict", "note", "max_score")


class GoldPackError(ValueError):
    """A pack row does not follow packs/README.md: the message names the file, the line and the reason."""


@dataclass(frozen=True)
class GoldRow:
    """One pack row (README fields; `cls` is the row's `class`), with the pack's name and line it came from."""

    id: str
    labeler: str
    cls: str
    kind: str
    gold: str
    row: dict[str, Any]
    pack: str
    line: int
    config: dict[str, Any] = field(default_factory=dict)
    verdict: str | None = None
    note: str = ""
    max_score: float | None = None  # an incorrect row passes with a partial score up to this (IFEval 1/2)


def parse_row(value: Any, pack: str, line: int) -> GoldRow:
    """One decoded JSON line -> GoldRow; ValueError with the reason when it does not follow the README."""
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    missing = [k for k in REQUIRED if k not in value]
    if missing:
        raise ValueError(f"missing field(s) {missing}")
    unknown = sorted(set(value) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise ValueError(f"unknown field(s) {unknown}; fields: {[*REQUIRED, *OPTIONAL]}")
    for key in ("id", "labeler", "class"):
        if not isinstance(value[key], str) or not value[key]:
            raise ValueError(f"`{key}` must be a non-empty string, got {value[key]!r}")
    if value["kind"] not in KIND_GOLD:
        raise ValueError(f"`kind` must be one of {sorted(KIND_GOLD)}, got {value['kind']!r}")
    if value["gold"] != KIND_GOLD[value["kind"]]:
        raise ValueError(f"a `{value['kind']}` row must have gold {KIND_GOLD[value['kind']]!r}, got {value['gold']!r}")
    for key in ("row", "config"):
        if not isinstance(value.get(key, {}), dict):
            raise ValueError(f"`{key}` must be an object, got {type(value[key]).__name__}")
    if value.get("verdict") is not None and value["verdict"] not in VERDICTS:
        raise ValueError(f"`verdict` must be one of {VERDICTS}, got {value['verdict']!r}")
    max_score = value.get("max_score")
    if max_score is not None and (isinstance(max_score, bool) or not isinstance(max_score, int | float)):
        raise ValueError(f"`max_score` must be a number, got {max_score!r}")
    return GoldRow(
        id=value["id"],
        labeler=value["labeler"],
        cls=value["class"],
        kind=value["kind"],
        gold=value["gold"],
        row=value["row"],
        pack=pack,
        line=line,
        config=value.get("config") or {},
        verdict=value.get("verdict"),
        note=value.get("note") or "",
        max_score=None if max_score is None else float(max_score),
    )


def load_pack(path: Path) -> list[GoldRow]:
    rows = []
    with Path(path).open("rb") as fh:
        for line, data in enumerate(fh, start=1):
            if not data.strip():
                continue
            try:
                rows.append(parse_row(json.loads(data.decode("utf-8")), Path(path).stem, line))
            except UnicodeDecodeError as exc:
                raise GoldPackError(f"{path}:{line}: not UTF-8 ({exc.reason} at byte {exc.start})") from exc
            except ValueError as exc:  # JSONDecodeError included
                raise GoldPackError(f"{path}:{line}: {exc}") from exc
    return rows


def load_packs(folder: Path = PACKS_DIR) -> list[GoldRow]:
    """Every `*.jsonl` pack in `folder`, in file-name order; ids must be unique across them. A missing folder or
    one without packs gives no rows (the caller reports what that leaves unmeasured)."""
    rows: list[GoldRow] = []
    seen: dict[str, str] = {}
    for path in sorted(Path(folder).glob("*.jsonl")) if Path(folder).is_dir() else []:
        for row in load_pack(path):
            if row.id in seen:
                raise GoldPackError(f"{path}:{row.line}: id {row.id!r} is already used at {seen[row.id]}")
            seen[row.id] = f"{path}:{row.line}"
            rows.append(row)
    return rows


def row_task(row: GoldRow, tasks_of: dict[str, tuple[str, ...] | None]) -> str | None:
    """The row's own `task`, else the one task of the labeler it was written for (`tasks_of`: key -> tasks)."""
    if row.row.get("task") is not None:
        return row.row["task"]
    tasks = tasks_of.get(row.labeler)
    return tasks[0] if tasks and len(tasks) == 1 else None


def same_settings(row_config: dict[str, Any], configured: dict[str, Any]) -> bool:
    """Every setting the row was written for has the configured value (plain values; lists and tuples alike)."""
    return all(
        json.dumps(v, sort_keys=True) == json.dumps(configured.get(k), sort_keys=True) for k, v in row_config.items()
    )


def rows_for(
    rows: list[GoldRow],
    key: str,
    tasks: tuple[str, ...] | None,
    configured: dict[str, Any],
    tasks_of: dict[str, tuple[str, ...] | None],
) -> tuple[list[GoldRow], str | None, dict[str, int]]:
    """(rows, how, left out by reason) for the labeler with registry key `key`, `tasks` (None = every task) and
    `configured` settings (plain values, defaults filled in): the rows written for it with those settings, and the
    rows of its tasks written for other labelers with their defaults (an appeal judge is measured on its own probes
    and on the math pack alike). `how` is "labeler" (rows written for it only), "task" (rows of its tasks written for
    others only), "labeler+task" (both) or None (no rows)."""
    left_out: dict[str, int] = {}

    def keep(row: GoldRow, reason: str, ok: bool) -> bool:
        if not ok:
            left_out[reason] = left_out.get(reason, 0) + 1
        return ok

    def applies(row: GoldRow) -> bool:
        task = row_task(row, tasks_of)
        return tasks is None or task is None or task in tasks

    own = [r for r in rows if r.labeler == key and keep(r, "other_task", applies(r))]
    own = [r for r in own if keep(r, "other_settings", same_settings(r.config, configured))]
    others = [r for r in rows if r.labeler != key and tasks and row_task(r, tasks_of) in tasks]
    others = [r for r in others if keep(r, "other_settings", not r.config)]
    how = "+".join(name for name, chosen in (("labeler", own), ("task", others)) if chosen) or None
    return own + others, how, left_out
