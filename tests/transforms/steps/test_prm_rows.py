"""transforms/steps/prm_rows.py: TRL stepwise rows from step labels, and a reason for every rollout without one."""

import copy
import pickle

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rewardmill.schemas import PRM_V1, STEP_LABEL_V1
from rewardmill.transforms.io.parquet import rows_to_table
from rewardmill.transforms.steps.prm_rows import REJECT_REASONS, Rejected, build_prm_row
from rewardmill.transforms.steps.segment import segment

COMPLETION = "2 + 2 = 5.\n\nSo x = 5 + 1 = 6.\n\nCheck: 6 - 1 = 5.\n\nThe answer is \\boxed{6}."
STEPS = segment(COMPLETION)

PROMPT = {
    "prompt_id": "p1",
    "task": "math",
    "split": "train",
    "messages": [
        {"role": "system", "content": "Think step by step."},
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": "Let me think."},
        {"role": "user", "content": "What is 2 + 2, plus one?"},
    ],
}
ROLLOUT = {"rollout_id": "r1", "prompt_id": "p1", "completion": COMPLETION}


def labels(hard: list[bool | None], soft: list[float | None] | None = None, first_error: int | None = None, **kw):
    """STEP_LABEL_V1 rows for ROLLOUT's 4 steps; first_error defaults to the first False hard label (or -1)."""
    soft = soft if soft is not None else [None] * len(hard)
    if first_error is None:
        first_error = next((i for i, h in enumerate(hard) if h is False), -1)
    return [
        {
            "rollout_id": "r1",
            "prompt_id": "p1",
            "labeler": "mc_steps",
            "labeler_version": "1",
            "step_index": step.index,
            "n_steps": len(STEPS),
            "step_text": step.text,
            "char_start": step.start,
            "char_end": step.end,
            "score": s,
            "hard_label": h,
            "method": "mc",
            "n_continuations": 8,
            "first_error_step": first_error,
            "raw": None,
            **kw,
        }
        for step, h, s in zip(STEPS, hard, soft, strict=True)
    ]


def build(rows, truncate=True, prompt=PROMPT, rollout=ROLLOUT):
    row, rejected = build_prm_row(prompt, rollout, rows, truncate_after_error=truncate)
    assert (row is None) != (rejected is None)
    return row, rejected


T, F, U = True, False, None  # decided right, decided wrong, undecided


@pytest.mark.parametrize(
    "hard, soft, truncate, expected",
    [
        # all steps right: everything kept
        ([T, T, T, T], [1.0, 0.75, 0.5, 1.0], True, ([T, T, T, T], [1.0, 0.75, 0.5, 1.0], -1, 0.5, 1.0)),
        # first error at step 1, truncated: steps 0 and 1 kept (Qwen convention)
        ([T, F, F, F], [0.5, 0.0, 0.0, 0.0], True, ([T, F], [0.5, 0.0], 1, 0.0, 0.0)),
        # first error at step 1, not truncated: steps after it are False whatever MC said (a wrong prefix stays wrong)
        ([T, F, T, F], [0.5, 0.0, 0.125, 0.0], False, ([T, F, F, F], [0.5, 0.0, 0.125, 0.0], 1, 0.0, 0.0)),
        # first step wrong, truncated: a single False step
        ([F, U, U, U], [0.0, None, None, None], True, ([F], [0.0], 0, 0.0, 0.0)),
        # last step wrong: nothing to truncate
        ([T, T, T, F], [1.0, 1.0, 0.5, 0.0], True, ([T, T, T, F], [1.0, 1.0, 0.5, 0.0], 3, 0.0, 0.0)),
        # undecided steps after the first error are fine when they are dropped
        ([T, F, U, U], [0.25, 0.0, None, None], True, ([T, F], [0.25, 0.0], 1, 0.0, 0.0)),
        # no soft labels (a judge): min and last fall back to the hard labels as 1.0 / 0.0
        ([T, T, F, U], None, True, ([T, T, F], [None, None, None], 2, 0.0, 0.0)),
        # no soft labels, all right
        ([T, T, T, T], None, True, ([T, T, T, T], [None] * 4, -1, 1.0, 1.0)),
        # some soft labels missing (inferred by binary search): per step, hard stands in for a missing soft label
        ([T, T, T, T], [None, 0.25, None, 1.0], True, ([T, T, T, T], [None, 0.25, None, 1.0], -1, 0.25, 1.0)),
        # the last kept step has no soft label: last_score is its hard label
        ([T, T, T, T], [0.5, 0.5, 0.5, None], True, ([T, T, T, T], [0.5, 0.5, 0.5, None], -1, 0.5, 1.0)),
        # min-form: one weak step sets the score even when the last one is certain
        ([T, T, T, T], [1.0, 0.125, 0.875, 1.0], True, ([T, T, T, T], [1.0, 0.125, 0.875, 1.0], -1, 0.125, 1.0)),
    ],
)
def test_rows(hard, soft, truncate, expected):
    row, rejected = build(labels(hard, soft), truncate)
    assert rejected is None
    exp_labels, exp_soft, first_error, min_score, last_score = expected
    assert row["labels"] == exp_labels
    assert row["soft_labels"] == exp_soft
    assert row["completions"] == [s.text for s in STEPS[: len(exp_labels)]]
    assert len(row["labels"]) == len(row["completions"]) == len(row["soft_labels"])
    assert (row["first_error_step"], row["min_score"], row["last_score"]) == (first_error, min_score, last_score)


def test_row_columns_and_lineage():
    row, _ = build(labels([T, F, U, U], [0.5, 0.0, None, None]))
    assert row == {
        "prompt_id": "p1",
        "rollout_id": "r1",
        "prompt": "What is 2 + 2, plus one?",  # the last user message
        "completions": ["2 + 2 = 5.", "So x = 5 + 1 = 6."],
        "labels": [True, False],
        "soft_labels": [0.5, 0.0],
        "first_error_step": 1,
        "method": "mc",
        "labeler": "mc_steps",
        "min_score": 0.0,
        "last_score": 0.0,
        "task": "math",
        "split": "train",
    }
    rows_to_table([row], PRM_V1)  # exactly PRM_V1's columns


def test_step_labels_in_any_order():
    rows = labels([T, T, F, F], [1.0, 0.5, 0.0, 0.0])
    assert build(list(reversed(rows))) == build(rows)


def test_inputs_are_not_modified():
    rows = list(reversed(labels([T, F, F, F])))
    before = copy.deepcopy((PROMPT, ROLLOUT, rows))
    build(rows, prompt=PROMPT, rollout=ROLLOUT)
    assert (PROMPT, ROLLOUT, rows) == before


def drop(rows, index):
    return [r for r in rows if r["step_index"] != index]


def edit(rows, index, **changes):
    return [{**r, **changes} if r["step_index"] == index else r for r in rows]


GOOD = labels([T, T, F, F], [1.0, 0.5, 0.0, 0.0])


@pytest.mark.parametrize(
    "rows, truncate, prompt, rollout, reason, detail",
    [
        # no labels at all
        ([], True, PROMPT, ROLLOUT, "no_steps", "no step labels"),
        # the rollout is of another prompt
        (GOOD, True, {**PROMPT, "prompt_id": "p2"}, ROLLOUT, "prompt_mismatch", "not p2"),
        # a step label of another rollout slipped in
        (edit(GOOD, 2, rollout_id="r9"), True, PROMPT, ROLLOUT, "rollout_mismatch", "r9"),
        # two labelers' rows mixed
        (edit(GOOD, 0, labeler="judge_steps"), True, PROMPT, ROLLOUT, "mixed_labelers", "judge_steps@1"),
        # two versions of one labeler mixed (a stale cache)
        (edit(GOOD, 0, labeler_version="2"), True, PROMPT, ROLLOUT, "mixed_labelers", "mc_steps@2"),
        # rows disagree on the number of steps
        (edit(GOOD, 3, n_steps=5), True, PROMPT, ROLLOUT, "inconsistent_n_steps", "[4, 5]"),
        # a missing middle step
        (drop(GOOD, 1), True, PROMPT, ROLLOUT, "missing_steps", "missing [1]"),
        # a missing step after the first error: still incomplete, even though truncation would drop it
        (drop(GOOD, 3), True, PROMPT, ROLLOUT, "missing_steps", "missing [3]"),
        # a step index outside 0..n_steps-1
        (edit(GOOD, 3, step_index=7), True, PROMPT, ROLLOUT, "missing_steps", "outside 0..3: [7]"),
        # a step twice
        (edit(GOOD, 3, step_index=2), True, PROMPT, ROLLOUT, "duplicate_steps", "[2]"),
        # rows disagree on the method
        (edit(GOOD, 1, method="judge"), True, PROMPT, ROLLOUT, "inconsistent_method", "'judge', 'mc'"),
        # a method outside METHODS
        (labels([T, T, T, T], method="vibes"), True, PROMPT, ROLLOUT, "unknown_method", "'vibes'"),
        # rows disagree on the first error
        (edit(GOOD, 0, first_error_step=1), True, PROMPT, ROLLOUT, "inconsistent_first_error", "[1, 2]"),
        # a first error beyond the last step
        (labels([T, T, T, T], first_error=4), True, PROMPT, ROLLOUT, "first_error_out_of_range", "=4"),
        # a first error below -1
        (labels([T, T, T, T], first_error=-2), True, PROMPT, ROLLOUT, "first_error_out_of_range", "=-2"),
        # a step's text is not where its span says
        (edit(GOOD, 1, char_start=0), True, PROMPT, ROLLOUT, "span_mismatch", "step 1"),
        # labels of a different completion
        (GOOD, True, PROMPT, {**ROLLOUT, "completion": "something else"}, "span_mismatch", "step 0"),
        # a soft label above 1
        (edit(GOOD, 0, score=8.0), True, PROMPT, ROLLOUT, "score_out_of_range", "8.0"),
        # a NaN soft label
        (edit(GOOD, 0, score=float("nan")), True, PROMPT, ROLLOUT, "score_out_of_range", "nan"),
        # an undecided step before the first error
        (labels([T, U, F, F], first_error=2), True, PROMPT, ROLLOUT, "undecided_step", "step 1"),
        # the first error itself undecided
        (labels([T, U, U, U], first_error=1), True, PROMPT, ROLLOUT, "undecided_step", "step 1"),
        # an undecided step with no error at all
        (labels([T, T, T, U]), True, PROMPT, ROLLOUT, "undecided_step", "step 3"),
        # an undecided step after the first error is kept without truncation, so it must be decided
        (labels([T, F, U, U]), False, PROMPT, ROLLOUT, "undecided_step", "step 2"),
        # a wrong step before the recorded first error
        (labels([F, T, F, F], first_error=2), True, PROMPT, ROLLOUT, "labels_contradict_first_error", "step 0"),
        # the recorded first error labelled right
        (labels([T, T, T, F], first_error=2), True, PROMPT, ROLLOUT, "labels_contradict_first_error", "step 2"),
        # a wrong step but no first error recorded
        (labels([T, T, F, F], first_error=-1), True, PROMPT, ROLLOUT, "labels_contradict_first_error", "step 2"),
        # no user message to serve as TRL's prompt
        (GOOD, True, {**PROMPT, "messages": PROMPT["messages"][:1]}, ROLLOUT, "no_user_message", "p1"),
    ],
)
def test_rejects(rows, truncate, prompt, rollout, reason, detail):
    row, rejected = build(rows, truncate, prompt, rollout)
    assert rejected.reason == reason and reason in REJECT_REASONS
    assert detail in rejected.detail


def test_reject_reasons_are_unique():
    assert len(set(REJECT_REASONS)) == len(REJECT_REASONS)


def test_rejected_pickles():
    rejected = Rejected("no_steps", "rollout r1 has no step labels")
    assert pickle.loads(pickle.dumps(rejected)) == rejected


def test_step_labels_fit_their_schema():
    rows_to_table(GOOD, STEP_LABEL_V1)


CASES = [
    labels([T, T, T, T], [1.0, 0.75, 0.5, 1.0]),
    labels([T, F, F, F], [0.5, 0.0, 0.0, 0.0]),
    labels([F, U, U, U], [0.0, None, None, None]),
    labels([T, T, F, U], None),
]


@pytest.mark.parametrize("truncate", [True, False])
def test_rows_load_with_datasets_in_trl_stepwise_format(truncate, tmp_path):
    from datasets import load_dataset

    built = [build(rows, truncate) for rows in CASES]
    rows = [row for row, _ in built if row is not None]
    # without truncation the undecided steps after an error are kept, so those rollouts are rejected
    assert len(rows) == (4 if truncate else 2)
    path = tmp_path / "prm.parquet"
    pq.write_table(rows_to_table(rows, PRM_V1), path)
    assert pq.read_schema(path).equals(PRM_V1)

    dataset = load_dataset("parquet", data_files=str(path), split="train", cache_dir=str(tmp_path / "cache"))
    assert len(dataset) == len(rows)
    for example in dataset:
        assert isinstance(example["prompt"], str)
        assert isinstance(example["completions"], list) and all(isinstance(c, str) for c in example["completions"])
        assert isinstance(example["labels"], list) and all(isinstance(v, bool) for v in example["labels"])
        assert len(example["labels"]) == len(example["completions"]) == len(example["soft_labels"])
        # right steps, then wrong ones: once a prefix is wrong it stays wrong
        assert example["labels"] == sorted(example["labels"], reverse=True)
    assert dataset.to_list() == rows
    assert pa.types.is_boolean(dataset.data.schema.field("labels").type.value_type)
