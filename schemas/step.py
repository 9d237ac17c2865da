"""step_label and prm: step-level (process) labels of rollouts, and the TRL stepwise rows built from them.

step_label (data/step_labels/NAME/): one labeler's judgment of one step of one rollout. Every step of a labelled
rollout has a row, so a PRM row can be assembled from one rollout's rows alone.

prm (data/datasets/prm/): one labelled rollout in TRL's stepwise-supervision format. `prompt`, `completions` and
`labels` load into TRL's PRM trainer as they are (TRL casts labels with int(), so soft labels live in their own
column); the remaining columns keep lineage and let users re-filter.
"""

import pyarrow as pa

from rewardmill.schemas.common import list_of, versioned

# mc: Monte Carlo continuations from every step prefix (Math-Shepherd); binary_search: MC probes that search for
# the first error (OmegaPRM); judge: an LLM names the first wrong step; consensus: MC and judge agree (Qwen).
BASE_METHODS = ("mc", "binary_search", "judge", "consensus")
# Labels checked against a pseudo-reference (the majority answer of the prompt's rollouts, TTRL) rather than a given
# reference carry this suffix, so a trainer or a filter can tell them apart: "mc+pseudo_reference".
PSEUDO_REFERENCE = "+pseudo_reference"
# turns: a multi-turn trajectory's assistant turns, labeled from its environment's per-turn records
# (transforms/steps/turn_prm.py). Its labels are per turn: a later turn may recover from a wrong one.
TURNS_METHOD = "turns"
METHODS = BASE_METHODS + tuple(m + PSEUDO_REFERENCE for m in BASE_METHODS) + (TURNS_METHOD,)

STEP_LABEL_V1 = versioned(
    "step_label",
    1,
    [
        pa.field("rollout_id", pa.string(), nullable=False),
        pa.field("prompt_id", pa.string(), nullable=False),
        pa.field("labeler", pa.string(), nullable=False),  # the params key of the steps stage
        pa.field("labeler_version", pa.string(), nullable=False),
        pa.field("step_index", pa.int32(), nullable=False),  # 0-based
        pa.field("n_steps", pa.int32(), nullable=False),  # steps in the rollout's segmentation
        pa.field("step_text", pa.string(), nullable=False),
        pa.field("char_start", pa.int32(), nullable=False),  # completion[char_start:char_end] == step_text
        pa.field("char_end", pa.int32(), nullable=False),
        pa.field("score", pa.float64()),  # soft label: share of continuations reaching the answer; null = unknown
        pa.field("hard_label", pa.bool_()),  # null = not decided (e.g. after the first error under binary search)
        pa.field("method", pa.string(), nullable=False),  # one of METHODS
        pa.field("n_continuations", pa.int32(), nullable=False),  # continuations spent on this step
        pa.field("first_error_step", pa.int32(), nullable=False),  # the rollout's first wrong step; -1 = none
        pa.field("raw", pa.string()),  # JSON detail: continuation verdicts, judge text
    ],
)

PRM_V1 = versioned(
    "prm",
    1,
    [
        pa.field("prompt_id", pa.string(), nullable=False),
        pa.field("rollout_id", pa.string(), nullable=False),
        pa.field("prompt", pa.string(), nullable=False),  # the last user message: TRL's stepwise prompt is a str
        # The steps and their labels; items are never null (a null label would break TRL's int() cast).
        pa.field("completions", pa.list_(pa.field("element", pa.string(), nullable=False)), nullable=False),
        pa.field("labels", pa.list_(pa.field("element", pa.bool_(), nullable=False)), nullable=False),
        pa.field("soft_labels", list_of(pa.float64()), nullable=False),  # step scores; null item = not estimated
        pa.field("first_error_step", pa.int32(), nullable=False),  # -1 = no wrong step
        pa.field("method", pa.string(), nullable=False),  # one of METHODS
        pa.field("labeler", pa.string(), nullable=False),
        pa.field("min_score", pa.float64()),  # min over steps: the min-form aggregate PURE recommends
        pa.field("last_score", pa.float64()),  # the last kept step's score
        pa.field("task", pa.string()),
        pa.field("split", pa.string(), nullable=False),
    ],
)
