"""pipelines/prompts.py on a user's own prompt files: a bad row is a reject and the rest go on; a missing file fails
before Beam runs; a source that yields no prompt fails naming it; an empty split is a warning and the manifest counts
the splits."""

import json
import logging

import pytest

from rewardmill.pipelines import prompts
from rewardmill.transforms.io.parquet import list_shards, read_table
from rewardmill.transforms.sources.outcomes import EmptySourceError
from rewardmill.transforms.sources.registry import SourceError
from rewardmill.transforms.stage.outputs import read_manifest
from tests.conftest import tiny_params


def file_params(*paths, test_fraction: float = 0.1) -> dict:
    params = tiny_params()
    params["prompts"]["sources"] = [{"name": f"mine{i}", "kind": "file", "path": str(p)} for i, p in enumerate(paths)]
    params["prompts"]["test_fraction"] = test_fraction
    return params


def math_lines(n: int, template: str = "What is {i} + {i}?") -> bytes:
    rows = ({"prompt": template.format(i=i), "reference": str(2 * i)} for i in range(n))
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def test_a_latin1_line_is_one_not_utf8_reject_and_the_other_rows_go_on(tmp_path, params_file):
    path = tmp_path / "mine.jsonl"
    path.write_bytes(math_lines(3) + '{"prompt": "Combien fait 1 + 1 ? été", "reference": "2"}\n'.encode("latin-1"))
    params_file(file_params(path))
    out = tmp_path / "prompts"
    prompts.main(["--out", str(out)])
    manifest = read_manifest(out)
    assert manifest["rows"] == 3 and manifest["rejects"] == {"not_utf8": 1}
    assert manifest["sources"] == {"mine0": {"prompts": 3, "records": 4, "rejects": {"not_utf8": 1}}}
    [reject] = read_table(list_shards(str(out / "_rejects"))[0]).to_pylist()
    assert reject["row_id"] == f"{path}:4" and f"{path} line 4" in reject["detail"]


def test_a_missing_prompt_file_fails_before_beam_runs(tmp_path, params_file, monkeypatch):
    params_file(file_params(tmp_path / "nope.jsonl"))
    monkeypatch.setattr(prompts, "run_stage", lambda *a, **kw: pytest.fail("Beam ran"))
    with pytest.raises(
        SourceError, match=r"prompts.sources\[0\] \(mine0\): .*nope.jsonl: prompt source file not found"
    ):
        prompts.main(["--out", str(tmp_path / "prompts")])


@pytest.mark.parametrize(
    "data, says",
    [
        # an empty file: nothing to run the DAG on
        (b"", r"prompts.sources\[1\] \(mine1, .*empty.jsonl\) has no rows"),
        # blank lines only
        (b"\n\n", r"has no rows"),
        # every row rejected: the reasons counted, and the first one's detail
        (
            b'{"prompt": "no reference"}\n{"prompt": "caf\xe9"}\n{"prompt": "no reference either"}\n',
            r"all 3 rows of prompts.sources\[1\] \(mine1, .*\) were rejected "
            r"\(missing_reference 2, not_utf8 1; first: .*empty.jsonl:1: math prompts need a reference",
        ),
    ],
)
def test_a_source_that_yields_no_prompt_fails_naming_it(tmp_path, params_file, data, says):
    """Before: `0 rows, 0 rejects` was a success and validate failed a minute later on `observed 0`."""
    good, empty = tmp_path / "good.jsonl", tmp_path / "empty.jsonl"
    good.write_bytes(math_lines(2))
    empty.write_bytes(data)
    params_file(file_params(good, empty))
    with pytest.raises(EmptySourceError, match=says):
        prompts.main(["--out", str(tmp_path / "prompts")])
    assert not (tmp_path / "prompts").exists()


def test_an_empty_test_split_is_a_warning_naming_the_param_and_the_manifest_counts_the_splits(
    tmp_path, params_file, stage_log
):
    """11 prompts at test_fraction 0.1 that all hash to train (a user's real case)."""
    path = tmp_path / "mine.jsonl"
    path.write_bytes(math_lines(11, "What is {i}+{i}?"))
    params_file(file_params(path))
    out = tmp_path / "prompts"
    with stage_log.at_level(logging.WARNING, logger="rewardmill"):
        prompts.main(["--out", str(out)])
    assert read_manifest(out)["splits"] == {"train": 11, "test": 0}
    [warning] = [r.getMessage() for r in stage_log.records if r.levelno == logging.WARNING]
    assert "all 11 prompts went to the train split and none to test" in warning and "prompts.test_fraction" in warning
    # no test split asked for: nothing to warn about
    params_file(file_params(path, test_fraction=0.0))
    stage_log.clear()
    prompts.main(["--out", str(out)])
    assert not [r for r in stage_log.records if r.levelno == logging.WARNING]
