"""Markdown pieces the dataset card is built from."""

from typing import Any


def cell(value: Any) -> str:
    """One table cell: `|` escaped and newlines flattened, so a value can never break the table."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
