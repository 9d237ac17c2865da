"""The viewer page's data: plain rows of a dataset or export folder in, one JSON-able dict out. Pure.

In: a `Source` (folders.py reads it): every config's schema id, row count and first rows, each folder's rejects
summary, the label rows of the shown rollouts, and notes on what could not be read.
Out: {title, kind, folder, max_rows, labels, notes, configs: [{name, schema, kind, total, shown, left_out, filters,
rows}], rejects}. Rows keep only what the page shows, per kind:
- pair: prompt, chosen and rejected side by side with each side's score, correctness, tokens, named scores and the
  labels of its rollout (verdict, score, confidence, rationale, raw; `used` = its labeler@version is one of the
  pair's `label_sources`), plus margin, confidence, agreement and pair_type;
- prm: the steps, each with its hard label (good/bad/unknown) and soft label;
- rl: the prompt with pass rate, samples, verified and correct counts, mean reward and difficulty;
- sft: prompt and completion with reward, rank, correctness and labels;
- any other schema: its columns as text.
Long texts are cut (the page says how many characters were left out); NaN and infinities become null (JSON has
neither). Same source, same dict: nothing depends on time or on set order.
"""

import json
import math
from dataclasses import dataclass, field
from typing import Any

from rewardmill.schemas.rl import DIFFICULTIES

DEFAULT_MAX_ROWS = 2000  # rows per config embedded in the page; the rest are counted, not shown
TEXT_CHARS = 6000  # of each message, step, rationale or reject detail
RAW_CHARS = 2000  # of a label's raw judge text and a reject's payload
KINDS = ("pair", "prm", "rl", "sft")  # schema families the page lays out; others show their columns as text
FILTERS = ("pair_type", "difficulty", "split")  # row fields the page filters on, when a config has them
ORDERS = {"difficulty": DIFFICULTIES}  # options in this order (any others after, sorted); the rest sorted


@dataclass(frozen=True)
class ConfigRows:
    """One config folder: its schema id, how many rows it holds and the rows the page embeds (first in id order)."""

    name: str
    schema: str  # e.g. pair_v2; "unversioned" when the folder does not say
    total: int
    rows: list[dict[str, Any]]


@dataclass(frozen=True)
class RejectSummary:
    """One folder's `_rejects/`: rows in all, and per reason its count and a few examples (rejects.py)."""

    dataset: str
    total: int
    reasons: list[dict[str, Any]]  # {reason, count, examples: [{row_id, stage, detail, payload}]}


@dataclass(frozen=True)
class Source:
    """What folders.py read. `rejects` None: the folder holds none (an export); `labels_read`: label folders were
    looked up, so a rollout without labels really has none there."""

    kind: str  # "datasets" | "export"
    title: str
    folder: str | None  # shown on the page (datasets: as given); None for an export, whose page names no path
    configs: list[ConfigRows]
    rejects: list[RejectSummary] | None = None
    labels: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # rollout_id -> LABEL_V1 rows
    labels_read: bool = False
    notes: list[str] = field(default_factory=list)


def kind_of(schema: str) -> str:
    """pair_v2 -> pair; a schema the page has no layout for -> other."""
    family = schema.rsplit("_v", 1)[0]
    return family if family in KINDS else "other"


def text(value: Any, limit: int = TEXT_CHARS) -> str | None:
    """A value as text, cut after `limit` characters with a note saying how many were left out; None stays None."""
    if value is None:
        return None
    s = value if isinstance(value, str) else str(value)
    return s if len(s) <= limit else f"{s[:limit]}\n… [{len(s) - limit} more characters not shown]"


def number(value: Any) -> int | float | None:
    """A number JSON can hold: NaN, infinities and non-numbers become None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if isinstance(value, float) and not math.isfinite(value) else value


def flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def messages(value: Any) -> list[dict[str, Any]]:
    """TRL conversational messages -> [{role, content}], plus what a multi-turn message carries: `reasoning` (shown
    collapsed), `tool_calls` as [{name, arguments}] text, and a tool result's `name` and `tool_call_id`. A bare
    string is one message without a role, anything else that is not a message is dropped."""
    if isinstance(value, str):
        return [{"role": "", "content": text(value) or ""}]
    if not isinstance(value, list | tuple):
        return []
    return [_message(m) for m in value if isinstance(m, dict)]


def _message(m: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": str(m.get("role") or ""), "content": text(m.get("content")) or ""}
    if m.get("reasoning"):
        out["reasoning"] = text(m["reasoning"])
    calls = [c for c in m.get("tool_calls") or () if isinstance(c, dict)]
    if calls:
        out["tool_calls"] = [_call(c) for c in calls]
    for key in ("name", "tool_call_id"):
        if m.get(key):
            out[key] = text(m[key], 200)
    return out


def _call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)
    return {"id": text(call.get("id"), 200), "name": text(function.get("name"), 200), "arguments": text(arguments)}


def with_turn_labels(shown: list[dict[str, Any]], labels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`shown` messages with each assistant turn's label from the `turns` labeler (its `turns` aspect's raw JSON:
    one entry per assistant turn, transforms/labelers/turns.py) as `turn`: {ok, verdict, tool_errors,
    tool_failures}. Without such a label (or with a raw that does not parse), the messages as they were."""
    signals = None
    for label in labels:
        if label.get("aspect") == "turns" and isinstance(label.get("raw"), str):
            try:
                signals = json.loads(label["raw"]).get("turns")
            except (ValueError, AttributeError):
                signals = None
            break
    if not isinstance(signals, list):
        return shown
    out, k = [], 0
    for m in shown:
        if m["role"] == "assistant" and k < len(signals) and isinstance(signals[k], dict):
            s = signals[k]
            turn = {key: s.get(key) for key in ("ok", "verdict", "tool_errors", "tool_failures")}
            m, k = {**m, "turn": turn}, k + 1
        out.append(m)
    return out


def scores(value: Any) -> list[dict[str, Any]]:
    """A named score vector [{name, score}] (null score = that labeler could not score)."""
    if not isinstance(value, list | tuple):
        return []
    return [{"name": str(s.get("name")), "score": number(s.get("score"))} for s in value if isinstance(s, dict)]


def side_labels(rows: list[dict[str, Any]], sources: list[str]) -> list[dict[str, Any]]:
    """One rollout's label rows as the page shows them, by labeler, aspect and version."""
    out = [
        {
            "source": f"{r.get('labeler')}@{r.get('labeler_version')}",
            "aspect": r.get("aspect"),
            "verdict": r.get("verdict"),
            "score": number(r.get("score")),
            "confidence": number(r.get("confidence")),
            "rationale": text(r.get("rationale")),
            "raw": text(r.get("raw"), RAW_CHARS),
        }
        for r in rows
    ]
    out = [{**label, "used": label["source"] in sources} for label in out]
    return sorted(out, key=lambda label: (label["source"], str(label["aspect"])))


def pair_row(row: dict[str, Any], labels: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    sources = [str(s) for s in row.get("label_sources") or []]
    own = lambda rollout: labels.get(rollout, []) if isinstance(rollout, str) else []  # noqa: E731

    def side(name: str) -> dict[str, Any]:
        rollout = row.get(f"{name}_rollout_id")
        return {
            "rollout_id": rollout,
            "messages": with_turn_labels(messages(row.get(name)), own(rollout)),
            "score": number(row.get(f"score_{name}")),
            "correct": flag(row.get(f"{name}_correct")),
            "n_tokens": number(row.get(f"{name}_n_tokens")),
            "scores": scores(row.get(f"scores_{name}")),
            "labels": side_labels(own(rollout), sources),
        }

    return {
        "id": row.get("pair_id"),
        "prompt_id": row.get("prompt_id"),
        "split": row.get("split"),
        "task": row.get("task"),
        "pair_type": row.get("pair_type"),
        "prompt": messages(row.get("prompt")),
        "chosen": side("chosen"),
        "rejected": side("rejected"),
        "margin": number(row.get("margin")),
        "confidence": number(row.get("confidence")),
        "agreement": number(row.get("agreement")),
        "label_sources": sources,
    }


def prm_row(row: dict[str, Any]) -> dict[str, Any]:
    """Steps with their labels; a label list shorter than the steps (malformed) leaves the rest unknown."""
    steps = row.get("completions") or []
    hard, soft = row.get("labels") or [], row.get("soft_labels") or []
    return {
        "id": f"{row.get('labeler')}/{row.get('rollout_id')}",
        "rollout_id": row.get("rollout_id"),
        "split": row.get("split"),
        "task": row.get("task"),
        "prompt": messages([{"role": "user", "content": row.get("prompt")}]),
        "steps": [
            {
                "text": text(step) or "",
                "label": flag(hard[i]) if i < len(hard) else None,
                "soft": number(soft[i]) if i < len(soft) else None,
            }
            for i, step in enumerate(steps)
        ],
        "first_error_step": number(row.get("first_error_step")),
        "method": row.get("method"),
        "labeler": row.get("labeler"),
        "min_score": number(row.get("min_score")),
        "last_score": number(row.get("last_score")),
    }


def rl_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row.get("prompt_id"),
        "split": row.get("split"),
        "task": row.get("task"),
        "difficulty": row.get("difficulty"),
        "prompt": messages(row.get("prompt")),
        "reference": text(row.get("reference")),
        **{k: number(row.get(k)) for k in ("pass_rate", "n_samples", "n_verified", "n_correct", "mean_reward")},
        "zero_pass": flag(row.get("zero_pass")),
        "all_pass": flag(row.get("all_pass")),
    }


def sft_row(row: dict[str, Any], labels: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    rollout = row.get("rollout_id")
    own = labels.get(rollout, []) if isinstance(rollout, str) else []
    return {
        "id": rollout,
        "split": row.get("split"),
        "task": row.get("task"),
        "prompt": messages(row.get("prompt")),
        "completion": with_turn_labels(messages(row.get("completion")), own),
        **{k: number(row.get(k)) for k in ("reward", "confidence", "rank", "n_tokens")},
        "correct": flag(row.get("correct")),
        "scores": scores(row.get("scores")),
        "labels": side_labels(own, [str(s) for s in row.get("label_sources") or []]),
    }


def other_row(row: dict[str, Any], index: int) -> dict[str, Any]:
    """A row of a schema without a layout: every column as text, in column order."""

    def show(value: Any) -> str | None:
        return text(value if isinstance(value, str) or value is None else json.dumps(value, default=str))

    split = row.get("split")
    return {
        "id": str(index),
        "split": split if isinstance(split, str) else None,
        "fields": [[str(k), show(v)] for k, v in row.items()],
    }


def display_row(kind: str, row: dict[str, Any], index: int, labels: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    if kind == "pair":
        return pair_row(row, labels)
    if kind == "prm":
        return prm_row(row)
    if kind == "rl":
        return rl_row(row)
    if kind == "sft":
        return sft_row(row, labels)
    return other_row(row, index)


def options(rows: list[dict[str, Any]], key: str) -> list[str]:
    """The values of `key` among the rows, for a filter: a known order first (difficulty), then sorted."""
    present = {r[key] for r in rows if isinstance(r.get(key), str)}
    known = [v for v in ORDERS.get(key, ()) if v in present]
    return known + sorted(present - set(known))


def config_model(config: ConfigRows, labels: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    kind = kind_of(config.schema)
    rows = [display_row(kind, row, i, labels) for i, row in enumerate(config.rows)]
    filters = {key: options(rows, key) for key in FILTERS}
    return {
        "name": config.name,
        "schema": config.schema,
        "kind": kind,
        "total": config.total,
        "shown": len(rows),
        "left_out": max(config.total - len(rows), 0),
        "filters": {key: values for key, values in filters.items() if values},
        "rows": rows,
    }


def reject_model(summary: RejectSummary) -> dict[str, Any]:
    return {
        "dataset": summary.dataset,
        "total": summary.total,
        "reasons": [
            {
                "reason": r["reason"],
                "count": r["count"],
                "examples": [
                    {
                        "row_id": e.get("row_id"),
                        "stage": e.get("stage"),
                        "detail": text(e.get("detail")),
                        "payload": text(e.get("payload"), RAW_CHARS),
                    }
                    for e in r["examples"]
                ],
            }
            for r in summary.reasons
        ],
    }


def page_model(source: Source, max_rows: int) -> dict[str, Any]:
    """The page's data (render.py embeds it as JSON)."""
    return {
        "title": source.title,
        "kind": source.kind,
        "folder": source.folder,
        "max_rows": max_rows,
        "labels": "read" if source.labels_read else "none",
        "notes": list(source.notes),
        "configs": [config_model(c, source.labels) for c in sorted(source.configs, key=lambda c: c.name)],
        "rejects": None
        if source.rejects is None
        else [reject_model(r) for r in sorted(source.rejects, key=lambda r: r.dataset)],
    }
