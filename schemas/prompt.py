"""prompt: one task for the policy, after ingestion and normalization (data/prompts/)."""

import pyarrow as pa

from rewardmill.schemas.common import MESSAGES, list_of, versioned

RUBRIC_CRITERION = pa.struct([pa.field("criterion", pa.string()), pa.field("weight", pa.float64())])

PROMPT_V1 = versioned(
    "prompt",
    1,
    [
        pa.field("prompt_id", pa.string(), nullable=False),  # sha256 of the canonical messages JSON
        pa.field("source", pa.string(), nullable=False),  # which params source produced it
        pa.field("task", pa.string(), nullable=False),  # math | code | instruction | open | ...
        pa.field("messages", MESSAGES, nullable=False),  # the conversation up to the policy's turn
        pa.field("reference", pa.string()),  # gold answer when one exists
        pa.field("tests", pa.string()),  # code tests (JSON), when the task has them
        pa.field("rubric", list_of(RUBRIC_CRITERION)),  # criteria + weights for rubric graders
        pa.field("constraints", pa.string()),  # instruction ids + kwargs (JSON)
        pa.field("split", pa.string(), nullable=False),  # train | test, from the prompt hash
        pa.field("metadata", pa.string()),  # source-specific extras (JSON)
    ],
)

# `metadata` keys of a prompt from recorded transcripts (prompts source kind `traces`), which the rollouts stage's
# `recorded` backend reads: the transcripts of the prompt (each {line, turns, tools}) and where they were recorded
# ({file, sha256, format, lines}).
METADATA_TRACES = "traces"
METADATA_RECORDED = "recorded"
