"""What a round observes: prompts per source and task, rows per dataset config and task, read from the stage outputs
as written (Parquet shards beside `_rejects/` and a manifest)."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rewardmill.transforms.targets.yields import observe


def shard(folder, rows: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "part-00000-of-00001.parquet")
    (folder / "_rejects").mkdir(exist_ok=True)  # not data: must not be counted
    pq.write_table(pa.Table.from_pylist(rows), folder / "_rejects" / "part-00000-of-00001.parquet")


def test_rows_and_prompts_per_task(tmp_path):
    shard(tmp_path / "prompts", [{"source": "arith", "task": "math"}] * 4 + [{"source": "code", "task": "code"}] * 2)
    pairs = [{"task": "math", "split": "train"}] * 5 + [
        {"task": "math", "split": "test"},
        {"task": "code", "split": "train"},
    ]
    shard(tmp_path / "datasets" / "pairs", pairs)
    seen = observe(str(tmp_path / "prompts"), str(tmp_path / "datasets"), ["pairs"])
    assert seen.prompts == {("arith", "math"): 4, ("code", "code"): 2}
    assert seen.total("pairs") == 7 and seen.rate("pairs", "math") == 1.5 and seen.rate("pairs", "code") == 0.5
    train = observe(str(tmp_path / "prompts"), str(tmp_path / "datasets"), ["pairs"], split="train")
    assert train.total("pairs") == 6 and train.rate("pairs", "math") == 1.25
    assert seen.record()["rates"] == {"pairs": {"code": 0.5, "math": 1.5}}


def test_a_config_assemble_has_not_written_says_what_to_run(tmp_path):
    shard(tmp_path / "prompts", [{"source": "arith", "task": "math"}])
    with pytest.raises(FileNotFoundError, match=r"datasets/prm: not built .*dvc repro assemble"):
        observe(str(tmp_path / "prompts"), str(tmp_path / "datasets"), ["prm"])
