"""`balance_length` over a whole pairs output, once (a bucket sees only its own prompts' pairs, so balancing there
made the result depend on `assemble.buckets`).

In: the written pairs folder (PAIR_V2 shards) and its `_rejects` folder. Out: both rewritten in place (same shard
layout, sorted), the dropped pairs moved to the rejects with reason `length_balance`; returns how many moved. The
choice is `rows.balance`: pairs whose chosen side is longer, lowest hash of pair_id first, until chosen is the
longer side in at most half of the pairs.
"""

import json

import polars as pl
import pyarrow as pa

from rewardmill.schemas import REJECT_V1
from rewardmill.transforms.io.parquet import list_shards, read_table
from rewardmill.transforms.io.tables import TableSink, rewrite_sink
from rewardmill.transforms.pairing.rows import balance

COLUMNS = ["pair_id", "prompt_id", "pair_type", "chosen_rollout_id", "rejected_rollout_id"]


def balance_pairs_output(pairs: TableSink, rejects: TableSink, stage: str) -> int:
    table = _read(pairs)
    if table.num_rows == 0:
        return 0
    frame = pl.from_arrow(table.select([*COLUMNS, "chosen_n_tokens", "rejected_n_tokens"]))
    assert isinstance(frame, pl.DataFrame)
    marked = balance(
        frame.rename({"chosen_n_tokens": "n_tokens_c", "rejected_n_tokens": "n_tokens_r"}).with_columns(
            _reason=pl.lit(None, dtype=pl.String), _detail=pl.lit(None, dtype=pl.String)
        )
    )
    victims = marked.filter(pl.col("_reason").is_not_null())
    if victims.height == 0:
        return 0
    dropped = set(victims["pair_id"].to_list())
    keep = pa.array([pid not in dropped for pid in table.column("pair_id").to_pylist()])
    rewrite_sink(pairs, table.filter(keep))
    new_rejects = pa.Table.from_pylist(
        [
            {
                "stage": stage,
                "row_id": row["pair_id"],
                "reason": row["_reason"],
                "detail": f"{row['pair_type']}: {row['_detail']}",
                "payload": json.dumps(
                    {
                        "prompt_id": row["prompt_id"],
                        "pair_type": row["pair_type"],
                        "chosen": row["chosen_rollout_id"],
                        "rejected": row["rejected_rollout_id"],
                    }
                ),
            }
            for row in victims.iter_rows(named=True)
        ],
        schema=REJECT_V1,
    )
    rewrite_sink(rejects, pa.concat_tables([_read(rejects), new_rejects]))
    return victims.height


def _read(sink: TableSink) -> pa.Table:
    tables = [read_table(path, sink.schema) for path in list_shards(sink.directory)]
    return pa.concat_tables(tables) if tables else sink.schema.empty_table()
