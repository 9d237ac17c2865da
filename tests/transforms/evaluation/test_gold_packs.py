"""Gold packs: every row checked against packs/README.md (errors name file and line), and which rows measure which
labeler."""

import json
import re
from pathlib import Path

import pytest

from rewardmill.transforms.evaluation.gold_packs import PACKS_DIR, GoldPackError, load_pack, load_packs, rows_for


def gold(id_: str, labeler: str = "math_answer", kind: str = "honest", **extra) -> dict:
    row = {"completion": "\\boxed{4}", "reference": "4"}
    return {
        "id": id_,
        "labeler": labeler,
        "config": {},
        "class": "honest" if kind == "honest" else "near_miss",
        "kind": kind,
        "gold": "correct" if kind == "honest" else "incorrect",
        "row": row,
        **extra,
    }


def write_pack(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{nope", "Expecting"),  # not JSON
        ("[1]", "expected a JSON object"),
        (json.dumps({k: v for k, v in gold("m/1").items() if k != "gold"}), "missing field(s) ['gold']"),
        (json.dumps(gold("m/1", golden=True)), "unknown field(s) ['golden']"),  # a typo
        (json.dumps(gold("m/1", kind="sneaky")), "`kind` must be one of"),
        (json.dumps({**gold("m/1", kind="hack"), "gold": "correct"}), "a `hack` row must have gold 'incorrect'"),
        (json.dumps(gold("m/1", verdict="maybe")), "`verdict` must be one of"),
        (json.dumps({**gold("m/1"), "row": "4"}), "`row` must be an object"),
    ],
)
def test_a_bad_row_names_its_file_and_line(tmp_path, line, message):
    path = write_pack(tmp_path / "math.jsonl", [gold("m/0"), "", line])
    with pytest.raises(GoldPackError, match=r"math.jsonl:3: .*" + re.escape(message)):
        load_pack(path)


def test_ids_are_unique_across_packs_and_rows_remember_where_they_came_from(tmp_path):
    write_pack(tmp_path / "a.jsonl", [gold("x/1")])
    write_pack(tmp_path / "b.jsonl", [gold("x/2"), gold("x/1")])
    with pytest.raises(GoldPackError, match=r"b.jsonl:2: id 'x/1' is already used at .*a.jsonl:1"):
        load_packs(tmp_path)
    (tmp_path / "b.jsonl").unlink()
    [row] = load_packs(tmp_path)
    assert (row.pack, row.line, row.cls, row.gold) == ("a", 1, "honest", "correct")
    assert load_packs(tmp_path / "missing") == []


def test_the_shipped_packs_load():
    """Whatever packs the repo ships follow the README (none yet is fine)."""
    rows = load_packs(PACKS_DIR)
    assert len({r.id for r in rows}) == len(rows)


TASKS_OF = {"math_answer": ("math",), "code_tests": ("code",), "format": None, "reference_judge": None}


def test_rows_written_for_the_labeler_measure_it_unless_for_other_settings_or_tasks(tmp_path):
    rows = load_packs(
        write_pack(
            tmp_path / "p.jsonl",
            [
                gold("m/1"),
                gold("m/2", config={"extraction": ["boxed"]}),  # written for other settings
                gold("m/3", config={"timeout_seconds": 5}),  # the configured value: kept
                {**gold("m/4"), "row": {"completion": "1", "reference": "1", "task": "code"}},  # another task
                gold("c/1", labeler="code_tests"),
            ],
        ).parent
    )
    configured = {"timeout_seconds": 5, "extraction": ["math_verify"]}
    chosen, how, left_out = rows_for(rows, "math_answer", ("math",), configured, TASKS_OF)
    assert ([r.id for r in chosen], how, left_out) == (
        ["m/1", "m/3"],
        "labeler",
        {"other_settings": 1, "other_task": 1},
    )


def test_a_labeler_is_measured_on_its_own_rows_and_on_its_tasks_default_rows(tmp_path):
    rows = load_packs(
        write_pack(
            tmp_path / "p.jsonl",
            [gold("m/1"), gold("j/1", labeler="reference_judge"), gold("c/1", labeler="code_tests")],
        ).parent
    )
    chosen, how, _ = rows_for(rows, "reference_judge", ("math",), {}, TASKS_OF)
    assert ([r.id for r in chosen], how) == (["j/1", "m/1"], "labeler+task")  # its probes and the math pack


def test_a_labeler_the_packs_do_not_name_is_measured_on_its_tasks_default_rows(tmp_path):
    rows = load_packs(
        write_pack(
            tmp_path / "p.jsonl",
            [gold("m/1"), gold("m/2", config={"extraction": ["boxed"]}), gold("c/1", labeler="code_tests")],
        ).parent
    )
    chosen, how, left_out = rows_for(rows, "reference_judge", ("math",), {}, TASKS_OF)
    assert ([r.id for r in chosen], how, left_out) == (["m/1"], "task", {"other_settings": 1})
    assert rows_for(rows, "pointwise_judge", None, {}, TASKS_OF)[:2] == ([], None)  # no rows, no tasks: unmeasured


def test_the_packs_ship_as_package_data():
    """`rewardmill audit` reads the packs from the installed package: a wheel without them measures nothing."""
    import tomllib

    from tests.conftest import REPO

    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "packs/*.jsonl" in cfg["package-data"]["rewardmill.transforms.evaluation"]
    assert PACKS_DIR == REPO / "transforms" / "evaluation" / "packs"
