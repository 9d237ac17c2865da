"""schemas/step.py: step labels and TRL stepwise rows round-trip through Parquet with their types and nullability."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rewardmill.schemas import PRM_V1, SCHEMAS, STEP_LABEL_V1
from rewardmill.schemas.common import schema_id
from rewardmill.schemas.step import BASE_METHODS, METHODS, PSEUDO_REFERENCE, TURNS_METHOD


def step_label_row(**overrides) -> dict:
    row = {
        "rollout_id": "r1",
        "prompt_id": "p1",
        "labeler": "mc_steps",
        "labeler_version": "1",
        "step_index": 0,
        "n_steps": 2,
        "step_text": "2 + 2 = 4.",
        "char_start": 0,
        "char_end": 10,
        "score": 0.75,
        "hard_label": True,
        "method": "mc",
        "n_continuations": 8,
        "first_error_step": -1,
        "raw": '{"verdicts": [1, 1, 1, 0, 1, 1, 1, 0]}',
    }
    return {**row, **overrides}


def prm_row(**overrides) -> dict:
    row = {
        "prompt_id": "p1",
        "rollout_id": "r1",
        "prompt": "What is 2 + 2?",
        "completions": ["2 + 2 = 5.", "So the answer is 5."],
        "labels": [False, False],
        "soft_labels": [0.0, None],
        "first_error_step": 0,
        "method": "mc",
        "labeler": "mc_steps",
        "min_score": 0.0,
        "last_score": 0.0,
        "task": "math",
        "split": "train",
    }
    return {**row, **overrides}


def round_trip(rows: list[dict], schema: pa.Schema, tmp_path) -> pa.Table:
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return pq.read_table(path)


@pytest.mark.parametrize(
    "name, schema",
    [
        # per-step labels of rollouts
        ("step_label", STEP_LABEL_V1),
        # TRL stepwise rows
        ("prm", PRM_V1),
    ],
)
def test_registered_and_versioned(name, schema):
    assert SCHEMAS[name] is schema
    assert schema_id(schema) == f"{name}_v1"


@pytest.mark.parametrize(
    "schema, rows",
    [
        # a fully labelled step
        (STEP_LABEL_V1, [step_label_row()]),
        # every nullable column null: soft label not estimated, hard label not decided, no detail
        (STEP_LABEL_V1, [step_label_row(score=None, hard_label=None, raw=None, method="binary_search")]),
        # a PRM row with a soft label missing for one step
        (PRM_V1, [prm_row()]),
        # a PRM row without aggregate scores or task
        (PRM_V1, [prm_row(min_score=None, last_score=None, task=None, labels=[True, True], soft_labels=[None, None])]),
        # no rows at all still carries the schema
        (PRM_V1, []),
    ],
)
def test_parquet_round_trip(schema, rows, tmp_path):
    table = round_trip(rows, schema, tmp_path)
    assert table.schema.equals(schema, check_metadata=True)
    assert table.to_pylist() == rows


@pytest.mark.parametrize(
    "schema, column, nullable",
    [
        # identity and lineage are always known
        (STEP_LABEL_V1, "rollout_id", False),
        (STEP_LABEL_V1, "labeler", False),
        (STEP_LABEL_V1, "step_index", False),
        (STEP_LABEL_V1, "char_start", False),
        (STEP_LABEL_V1, "first_error_step", False),
        (STEP_LABEL_V1, "method", False),
        # null = the soft label was not estimated (never a silent 0)
        (STEP_LABEL_V1, "score", True),
        # null = the step was not decided
        (STEP_LABEL_V1, "hard_label", True),
        # the JSON detail is optional
        (STEP_LABEL_V1, "raw", True),
        # TRL's three columns are always present
        (PRM_V1, "prompt", False),
        (PRM_V1, "completions", False),
        (PRM_V1, "labels", False),
        (PRM_V1, "soft_labels", False),
        # aggregates may be unknown
        (PRM_V1, "min_score", True),
        (PRM_V1, "last_score", True),
        (PRM_V1, "task", True),
        (PRM_V1, "split", False),
    ],
)
def test_nullability(schema, column, nullable):
    assert schema.field(column).nullable is nullable


@pytest.mark.parametrize(
    "column, item_type, items_nullable",
    [
        # the steps: strings, never null
        ("completions", pa.string(), False),
        # TRL's labels: bools, never null (TRL casts each with int())
        ("labels", pa.bool_(), False),
        # soft labels: floats, null where a step was not estimated
        ("soft_labels", pa.float64(), True),
    ],
)
def test_prm_list_columns(column, item_type, items_nullable):
    field = PRM_V1.field(column)
    assert pa.types.is_list(field.type)
    assert field.type.value_type == item_type
    assert field.type.value_field.nullable is items_nullable


def test_prm_prompt_is_a_plain_string():
    # TRL's stepwise format takes the question as a str, not a conversation
    assert PRM_V1.field("prompt").type == pa.string()


@pytest.mark.parametrize(
    "schema, row",
    [
        # a step label without a rollout id
        (STEP_LABEL_V1, step_label_row(rollout_id=None)),
        # a step label without a method
        (STEP_LABEL_V1, step_label_row(method=None)),
        # a PRM row without a split
        (PRM_V1, prm_row(split=None)),
        # a null label inside the list
        (PRM_V1, prm_row(labels=[True, None])),
        # a null step inside the list
        (PRM_V1, prm_row(completions=["a", None])),
    ],
)
def test_parquet_refuses_nulls_in_required_columns(schema, row, tmp_path):
    with pytest.raises(pa.ArrowInvalid, match="non-nullable"):
        round_trip([row], schema, tmp_path)


@pytest.mark.parametrize(
    "schema, row",
    [
        # a step index that is not a number
        (STEP_LABEL_V1, step_label_row(step_index="first")),
        # a soft label that is not a number
        (STEP_LABEL_V1, step_label_row(score="high")),
        # a conversation where TRL expects a plain prompt string
        (PRM_V1, prm_row(prompt=[{"role": "user", "content": "2+2?"}])),
        # soft scores where TRL expects bool labels (soft labels have their own column)
        (PRM_V1, prm_row(labels=[1.0, 0.5])),
        # 0/1 integers are not bools either
        (PRM_V1, prm_row(labels=[1, 0])),
    ],
)
def test_wrong_types_are_refused(schema, row):
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError)):
        pa.Table.from_pylist([row], schema=schema)


def test_methods():
    """Each method, each flagged as checked against a pseudo-reference (the majority answer) instead, and a
    trajectory's turns (assemble's turn-level rows: no steps stage makes them)."""
    assert BASE_METHODS == ("mc", "binary_search", "judge", "consensus")
    assert METHODS == BASE_METHODS + tuple(f"{m}+pseudo_reference" for m in BASE_METHODS) + (TURNS_METHOD,)
    assert TURNS_METHOD == "turns"
    assert PSEUDO_REFERENCE == "+pseudo_reference"


@pytest.mark.parametrize(
    "value, written",
    [
        # pyarrow writes a null non-nullable list as [] instead of refusing it
        (None, []),
        # and takes a str for a list of its characters
        ("ab", ["a", "b"]),
    ],
)
def test_pyarrow_does_not_guard_list_columns(value, written, tmp_path):
    # Why builders must construct these lists themselves: the schema alone lets these through silently.
    assert round_trip([prm_row(completions=value)], PRM_V1, tmp_path).column("completions").to_pylist() == [written]
