"""label: one labeler's judgment of one rollout on one aspect (data/labels/NAME/)."""

import pyarrow as pa

from rewardmill.schemas.common import versioned

VERDICTS = ("correct", "incorrect", "abstain", "error", "timeout")
# An aspect "A:P" is part P of aspect A (a generated rubric's criterion: "rubric:c2"). A part is kept in the score
# vector, so a trainer or assemble.pairs_by_aspect can use it, but it never counts as a score of its own: aspect A
# already sums it up, so gates, the model score, weights, rubric validation, stats and GRPO rewards read whole aspects.
PART_SEPARATOR = ":"


def part_aspect(aspect: str, part: str) -> str:
    """The aspect of part `part` of `aspect`."""
    return f"{aspect}{PART_SEPARATOR}{part}"


def is_part(aspect: str) -> bool:
    """True for a part of another aspect's score (see PART_SEPARATOR)."""
    return PART_SEPARATOR in aspect


LABEL_V1 = versioned(
    "label",
    1,
    [
        pa.field("rollout_id", pa.string(), nullable=False),
        pa.field("prompt_id", pa.string(), nullable=False),
        pa.field("labeler", pa.string(), nullable=False),  # the params key (stage label@NAME)
        pa.field("labeler_version", pa.string(), nullable=False),
        pa.field("aspect", pa.string(), nullable=False),
        pa.field("score", pa.float64()),  # null = could not label; never a silent 0
        pa.field("confidence", pa.float64(), nullable=False),  # [0, 1]
        pa.field("verdict", pa.string(), nullable=False),  # one of VERDICTS
        pa.field("rationale", pa.string()),
        pa.field("raw", pa.string()),  # raw judge text / extracted answer, kept beside the parsed verdict
    ],
)
