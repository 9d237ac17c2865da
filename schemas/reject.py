"""reject: a row a stage could not process, kept with its reason (OUT/_rejects/)."""

import pyarrow as pa

from rewardmill.schemas.common import versioned

REJECT_V1 = versioned(
    "reject",
    1,
    [
        pa.field("stage", pa.string(), nullable=False),
        pa.field("row_id", pa.string()),  # prompt_id / rollout_id / file:line, whatever names the row
        pa.field("reason", pa.string(), nullable=False),  # short machine-countable code
        pa.field("detail", pa.string()),  # human-readable explanation
        pa.field("payload", pa.string()),  # the offending row as JSON
    ],
)
