"""label: one labeler's judgment of one rollout on one aspect (data/labels/NAME/)."""

import pyarrow as pa

from rewardmill.schemas.common import versioned

VERDICTS = ("correct", "incorrect", "abstain", "error", "timeout")

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
