"""Labels for gold pack rows (transforms/evaluation/packs), as the audit gives them: each row through the labeler it
was written for, with the row's own config; rows sharing a labeler and config are labeled together (label_many where
the labeler has one, so sandboxes and helper processes start once)."""

import json

from rewardmill.transforms.evaluation.gold_packs import GoldRow
from rewardmill.transforms.labelers.base import Label, label_values, resolve_labeler


def pack_labels(rows: list[GoldRow]) -> dict[str, Label]:
    """row id -> its label."""
    groups: dict[tuple[str, str], list[GoldRow]] = {}
    for row in rows:
        groups.setdefault((row.labeler, json.dumps(row.config, sort_keys=True)), []).append(row)
    out = {}
    for (key, config), group in groups.items():
        cls, cfg = resolve_labeler(key, json.loads(config), f"gold pack rows for {key}")
        labeler = cls(cfg)
        try:
            found = label_values(labeler, [tuple(r.row.get(c) for c in cls.reads) for r in group])
        finally:
            if callable(getattr(labeler, "teardown", None)):
                labeler.teardown()
        out.update({r.id: label for r, label in zip(group, found, strict=True)})
    return out
