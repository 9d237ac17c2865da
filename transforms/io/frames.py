"""polars frames -> Arrow tables of a schema, the one way every columnar core hands its results out."""

import polars as pl
import pyarrow as pa


def frame_to_table(frame: pl.DataFrame, schema: pa.Schema | None = None) -> pa.Table:
    """`frame` as an Arrow table cast to `schema` (when given).

    Exported at polars' oldest compat level (large_string, large_list): casting those to the schemas' string and
    list types moves offsets only, where the newer string views are copied value by value (3x slower on pairs).
    """
    table = frame.to_arrow(compat_level=pl.CompatLevel.oldest())
    return table.cast(schema) if schema is not None else table
