"""Building blocks shared by the dataset schemas."""

import pyarrow as pa


def list_of(item: pa.DataType) -> pa.ListType:
    """A list type whose item field is named `element`, as Parquet stores it, so schemas round-trip exactly."""
    return pa.list_(pa.field("element", item))


# TRL conversational format: a list of {role, content} messages.
MESSAGE = pa.struct([pa.field("role", pa.string(), nullable=False), pa.field("content", pa.string(), nullable=False)])
MESSAGES = list_of(MESSAGE)


def versioned(name: str, version: int, fields: list[pa.Field]) -> pa.Schema:
    """Attach the schema name and version as metadata so readers can check what they were given."""
    return pa.schema(fields, metadata={b"rewardmill.schema": f"{name}_v{version}".encode()})


def schema_id(schema: pa.Schema) -> str:
    return (schema.metadata or {}).get(b"rewardmill.schema", b"unversioned").decode()
