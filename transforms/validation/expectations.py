"""Building blocks of the validation suites: the schema-derived part and helpers for row-level rules.

Every suite has a structural part built from the pyarrow schema (the column set matches exactly, non-nullable fields
have no nulls, each column has the pandas type its arrow type converts to) plus semantic checks on the values.
Rules that span several columns or nested values are computed as boolean helper columns (one bool per row, False
where an input the rule needs is null or missing), added to the frame before validation and expected to be all
True, so a report still names one expectation per rule and the failing rows by id.

Great Expectations takes seconds to import, so it is imported inside the builders, not at module import.
"""

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    import great_expectations as gx

SPLITS = ("train", "test")
FINISH_REASONS = ("stop", "length")
TOLERANCE = 1e-9  # derived floats (margin, pass_rate) are written from the same inputs; allow float noise only


def pandas_type(arrow_type: pa.DataType) -> str:
    """The type name ExpectColumnValuesToBeOfType sees after `Table.to_pandas()` (nested values as Python lists)."""
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "str"  # pandas >= 3 default string dtype
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return "list"
    if pa.types.is_struct(arrow_type):
        return "dict"
    if pa.types.is_boolean(arrow_type):
        return "bool"
    if pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type):
        return np.dtype(arrow_type.to_pandas_dtype()).name  # int32, int64, float64, ...
    raise TypeError(f"no pandas type mapping for arrow type {arrow_type}")


def schema_expectations(schema: pa.Schema, helper_columns: Iterable[str] = ()) -> list:
    """Column set (schema + helpers, exact), non-null for non-nullable fields, and one type check per column (a
    nullable boolean column with nulls converts to pandas `object`; the check then looks at each non-null value)."""
    import great_expectations as gx

    e = gx.expectations
    helper_columns = list(helper_columns)
    expectations: list = [
        e.ExpectTableColumnsToMatchSet(column_set=[*schema.names, *helper_columns], exact_match=True)
    ]
    for field in schema:
        if not field.nullable:
            expectations.append(e.ExpectColumnValuesToNotBeNull(column=field.name))
        if field.nullable and pa.types.is_integer(field.type):
            # a nullable integer column with nulls converts to pandas float64 (NaN for null): either type is it
            types = [pandas_type(field.type), "float64"]
            expectations.append(e.ExpectColumnValuesToBeInTypeList(column=field.name, type_list=types))
        else:
            expectations.append(e.ExpectColumnValuesToBeOfType(column=field.name, type_=pandas_type(field.type)))
    for column in helper_columns:
        # Helpers are never null (False when an input is missing), and must all be True.
        expectations.append(e.ExpectColumnValuesToBeInSet(column=column, value_set=[True]))
    return expectations


def unit_interval(columns: Iterable[str]) -> list:
    """Values in [0, 1]; nulls pass (a nullable column's null means "none", its not-null check is separate)."""
    import great_expectations as gx

    return [gx.expectations.ExpectColumnValuesToBeBetween(column=c, min_value=0.0, max_value=1.0) for c in columns]


def make_suite(name: str, expectations: list) -> "gx.ExpectationSuite":
    import great_expectations as gx

    # Passing expectations to the constructor needs no data context (add_expectation would try to save).
    return gx.ExpectationSuite(name=name, expectations=expectations)


def column(table: pa.Table, name: str) -> list[Any]:
    """A column's values, or all None when the column is missing (the column-set expectation reports that)."""
    return table.column(name).to_pylist() if name in table.column_names else [None] * table.num_rows


def scores_sorted(scores: list[dict[str, Any]] | None) -> bool:
    """A named score vector is present, and its names are non-null, unique and sorted."""
    if scores is None:
        return False
    names = [s.get("name") if isinstance(s, dict) else None for s in scores]
    return None not in names and all(a < b for a, b in zip(names, names[1:], strict=False))


def close(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and abs(a - b) <= TOLERANCE
