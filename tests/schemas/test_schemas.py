"""schemas/: every dataset schema is an explicit, versioned pyarrow constant; pairs load into TRL as they are."""

import io
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rewardmill.schemas as schemas
from rewardmill.schemas import CURRENT_VERSIONS, PAIR_V2, SCHEMAS
from rewardmill.schemas.common import MESSAGES, schema_id, versioned


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schema_is_versioned(name):
    schema = SCHEMAS[name]
    assert re.fullmatch(rf"{name}_v[1-9]\d*", schema.metadata[b"rewardmill.schema"].decode())
    assert schema_id(schema) == schema.metadata[b"rewardmill.schema"].decode()


@pytest.mark.parametrize("constant", [c for c in schemas.__all__ if re.fullmatch(r"[A-Z]+_V\d+", c)])
def test_constant_name_matches_metadata(constant):
    # PAIR_V2 carries pair_v2: the Python name and the on-disk id cannot drift apart
    assert schema_id(getattr(schemas, constant)) == constant.lower()


def test_registry_lists_every_exported_schema():
    constants = [c for c in schemas.__all__ if c not in ("SCHEMAS", "CURRENT_VERSIONS", "current_ids")]
    exported = {getattr(schemas, c).metadata[b"rewardmill.schema"] for c in constants}
    versions = [*SCHEMAS.values(), *(s for both in CURRENT_VERSIONS.values() for s in both)]
    assert exported == {s.metadata[b"rewardmill.schema"] for s in versions}
    assert all(SCHEMAS[name] in both for name, both in CURRENT_VERSIONS.items())
    assert len({schema_id(s) for s in SCHEMAS.values()}) == len(SCHEMAS)
    assert schemas.current_ids("pair") == {"pair_v2", "pair_v3"} and schemas.current_ids("prm") == {"prm_v1"}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_field_names_unique(name):
    names = SCHEMAS[name].names
    assert len(names) == len(set(names))


@pytest.mark.parametrize(
    "schema, expected",
    [
        # a versioned schema
        (versioned("thing", 3, [pa.field("a", pa.int32())]), "thing_v3"),
        # a plain pyarrow schema has no id
        (pa.schema([pa.field("a", pa.int32())]), "unversioned"),
        # other metadata is not an id
        (pa.schema([pa.field("a", pa.int32())], metadata={b"other": b"x"}), "unversioned"),
    ],
)
def test_schema_id(schema, expected):
    assert schema_id(schema) == expected


@pytest.mark.parametrize(
    "schema", [*SCHEMAS.values(), *(s for v in CURRENT_VERSIONS.values() for s in v)], ids=schema_id
)
def test_metadata_survives_parquet(schema):
    buffer = io.BytesIO()
    pq.write_table(schema.empty_table(), buffer)
    read = pq.read_schema(io.BytesIO(buffer.getvalue()))
    assert schema_id(read) == schema_id(schema)
    assert read.equals(schema)


@pytest.mark.parametrize(
    "column, nullable",
    [
        # TRL's conversational prompt
        ("prompt", False),
        # TRL's preferred completion
        ("chosen", False),
        # TRL's dispreferred completion
        ("rejected", False),
    ],
)
def test_pair_has_trl_conversational_columns(column, nullable):
    field = PAIR_V2.field(column)
    assert field.type == MESSAGES  # list of struct{role: string, content: string}
    assert pa.types.is_list(field.type) and pa.types.is_struct(field.type.value_type)
    assert [f.name for f in field.type.value_type] == ["role", "content"]
    assert all(pa.types.is_string(f.type) for f in field.type.value_type)
    assert field.nullable is nullable


def test_pair_has_trl_margin():
    # RewardTrainer's optional margin column: a float per row
    field = PAIR_V2.field("margin")
    assert pa.types.is_floating(field.type) and not field.nullable


def test_pair_row_round_trips_as_conversation():
    row = {name: None for name in PAIR_V2.names}
    row.update(
        pair_id="x",
        prompt_id="p",
        prompt=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "2+2?"}],
        chosen=[{"role": "assistant", "content": "4"}],
        rejected=[{"role": "assistant", "content": "5"}],
        score_chosen=1.0,
        score_rejected=0.0,
        margin=1.0,
        confidence=1.0,
        agreement=1.0,
        pair_type="best_vs_worst",
        chosen_rollout_id="a",
        rejected_rollout_id="b",
        chosen_n_tokens=1,
        rejected_n_tokens=1,
        chosen_correct=True,
        rejected_correct=None,
        scores_chosen=[{"name": "math/correctness", "score": 1.0}],
        scores_rejected=[{"name": "math/correctness", "score": None}],
        label_sources=["math@1"],
        task="math",
        split="train",
    )
    assert pa.Table.from_pylist([row], schema=PAIR_V2).to_pylist() == [row]


@pytest.mark.parametrize(
    "column, value",
    [
        # a plain-string prompt is TRL's standard format, not the conversational one this schema promises
        ("prompt", "2+2?"),
        # a bare message instead of a list of them
        ("chosen", {"role": "assistant", "content": "4"}),
        # a list of strings instead of messages
        ("rejected", ["5"]),
        # a margin that is not a number
        ("margin", "big"),
    ],
)
def test_pair_schema_rejects_wrong_types(column, value):
    row = {name: None for name in PAIR_V2.names}
    row[column] = value
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError)):
        pa.Table.from_pylist([row], schema=PAIR_V2)


@pytest.mark.parametrize(
    "name, column",
    [
        # the prompt's conversation is what becomes the pair's prompt column
        ("prompt", "messages"),
        # rollouts carry it along unchanged
        ("rollout", "messages"),
    ],
)
def test_messages_columns_share_the_pair_type(name, column):
    assert SCHEMAS[name].field(column).type == PAIR_V2.field("prompt").type


@pytest.mark.parametrize(
    "name, columns",
    [
        # TRL's SFTTrainer: conversational prompt-completion
        ("sft", ("prompt", "completion")),
        # TRL's GRPOTrainer reads `prompt`; the rest reach reward functions as keyword arguments
        ("rl", ("prompt",)),
    ],
)
def test_rl_and_sft_use_trl_conversational_columns(name, columns):
    for column in columns:
        assert SCHEMAS[name].field(column).type == MESSAGES and not SCHEMAS[name].field(column).nullable


def test_score_vectors_are_shared():
    # the same named score vector type everywhere it appears
    vector = SCHEMAS["pair"].field("scores_chosen").type
    assert SCHEMAS["sft"].field("scores").type == vector == SCHEMAS["reward"].field("scores").type
