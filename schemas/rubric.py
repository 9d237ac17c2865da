"""rubric: one prompt's generated rubric, from the `rubrics@NAME` stage (data/rubrics/NAME/).

A rubric is a list of criteria, each with a weight and a kind: `hard` (a rule the response must satisfy; failing one
fails the rubric) or `principle` (graded). `rubric_id` is the sha256 of the canonical criteria, so a rubric's version
changes exactly when its criteria do; `judge` is the fingerprint of the model that wrote it.
"""

import hashlib
import json

import pyarrow as pa

from rewardmill.schemas.common import list_of, versioned

RUBRIC_KINDS = ("hard", "principle")
ALL_PROMPTS = "*"  # the prompt_id of a learned rule set's one row (mode autorule): it applies to every prompt

CRITERION = pa.struct(
    [
        pa.field("criterion", pa.string(), nullable=False),
        pa.field("weight", pa.float64(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),  # hard | principle
    ]
)

RUBRIC_V1 = versioned(
    "rubric",
    1,
    [
        pa.field("prompt_id", pa.string(), nullable=False),
        pa.field("rubric_set", pa.string(), nullable=False),  # the params key NAME of rubrics@NAME
        pa.field("mode", pa.string(), nullable=False),  # reference | contrastive (+ refined: see `refined`)
        pa.field("criteria", list_of(CRITERION), nullable=False),
        pa.field("rubric_id", pa.string(), nullable=False),  # sha256 of the canonical criteria
        pa.field("refined", pa.int32(), nullable=False),  # criteria rewritten by the refine round (0 = none)
        pa.field("judge", pa.string(), nullable=False),  # the writer model's id (a content fingerprint when local)
        pa.field("evidence", pa.string()),  # JSON: what the rubric was written from (rollout ids and their scores)
        pa.field("raw", pa.string()),  # the judge's texts, kept beside the parsed criteria
    ],
)


def rubric_id(criteria: list[dict]) -> str:
    """A rubric's version: the sha256 of its criteria rows ({criterion, weight, kind}, in order) as canonical JSON.
    The rubrics stage writes it; a judge grading against the rubric reads it off the same rows."""
    rows = [{"criterion": c["criterion"], "weight": float(c["weight"]), "kind": c["kind"]} for c in criteria]
    canonical = json.dumps(rows, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()
