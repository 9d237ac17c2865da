"""`rewardmill audit` on fixture packs: a table on stdout, JSON with --output, judges unless --skip-judges."""

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from rewardmill.pipelines.audit import audit, main, precision_check
from rewardmill.pipelines.cli import main as cli_main
from rewardmill.transforms.labelers import LABELERS
from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.judge_base import JudgeLabeler


def gold(id_: str, kind: str, completion: str, reference: str = "4", labeler: str = "math_answer") -> dict:
    return {
        "id": id_,
        "labeler": labeler,
        "config": {},
        "class": {"honest": "honest", "wrong": "near_miss", "hack": "empty_symbol"}[kind],
        "kind": kind,
        "gold": "correct" if kind == "honest" else "incorrect",
        "row": {"completion": completion, "reference": reference},
    }


MATH = [
    gold("math/honest/1", "honest", "so \\boxed{4}"),
    gold("math/equivalent/1", "honest", "\\boxed{\\frac{1}{2}}", "0.5"),
    gold("math/near_miss/1", "wrong", "\\boxed{5}"),
    gold("math/empty_symbol/1", "hack", "\\boxed{}"),
]


def write_packs(folder: Path, rows: list[dict] = MATH) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "math.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


@dataclass(frozen=True)
class YesConfig:
    backend: str = "none"


class YesJudge(JudgeLabeler):
    """A judge that says yes to everything, without a model: the judge path in a test."""

    name = "yes_judge"
    version = "1"
    Config = YesConfig
    reads = ("completion", "reference")

    def __init__(self, config: YesConfig | None = None):
        super().__init__()
        self.config = config or YesConfig()

    def label(self, completion: str, reference: str) -> Label:
        return Label(1.0, 0.9, "correct", "yes")


PARAMS = {
    "labelers": {
        "math_answer": {"labeler": "math_answer", "tasks": ["math"], "config": {"timeout_seconds": 5}},
        "appeal": {"labeler": "yes_judge", "tasks": ["math"]},  # not named in the packs: the math rows measure it
    }
}


@pytest.fixture
def yes_judge(monkeypatch):
    monkeypatch.setitem(LABELERS, "yes_judge", YesJudge)


def test_cli_prints_a_table_and_writes_json(tmp_path, params_file, yes_judge, capsys):
    params_file(PARAMS)
    out = tmp_path / "audit.json"
    assert cli_main(["audit", "--packs", str(write_packs(tmp_path / "packs")), "--output", str(out)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:2] == ["labeler", "rows"] and len(table) == 3
    report = json.loads(out.read_text())
    math = report["labelers"]["math_answer"]
    assert (math["rows"], math["rows_from"], math["packs"]) == (4, "labeler", ["math"])
    assert {m: (math[m]["k"], math[m]["n"]) for m in ("precision", "recall", "hack_pass_rate")} == {
        "precision": (2, 2),
        "recall": (2, 2),
        "hack_pass_rate": (0, 1),
    }
    judge = report["labelers"]["appeal"]  # yes to everything: half its credit is wrong, the hack passes
    assert (judge["rows_from"], judge["precision"]["value"], judge["hack_pass_rate"]["value"]) == ("task", 0.5, 1.0)
    assert [d["id"] for d in judge["disagreements"]] == ["math/near_miss/1", "math/empty_symbol/1"]
    assert table[2].endswith("math_answer rows in math") and table[1].endswith("math task rows in math")


def test_skip_judges_and_one_labeler(tmp_path, params_file, yes_judge, capsys):
    params_file(PARAMS)
    packs = write_packs(tmp_path / "packs")
    report = audit(PARAMS["labelers"], packs, judges=False)
    assert report["labelers"]["appeal"]["skipped"].startswith("model-based: not run")
    assert "math_answer" in report["labelers"] and report["pack_rows"] == 4
    assert main(["--packs", str(packs), "--labeler", "appeal", "--skip-judges"]) == 0
    assert "not measured: model-based" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--labeler", "nope"], "no labeler ['nope'] in params `labelers`; configured: ['appeal', 'math_answer']"),
        (["--packs", "BAD"], "math.jsonl:1: `kind` must be one of"),  # a bad pack row names its file and line
    ],
)
def test_mistakes_are_one_line_and_exit_2(tmp_path, params_file, yes_judge, capsys, args, message):
    params_file(PARAMS)
    bad = write_packs(tmp_path / "bad", [{**MATH[0], "kind": "honestly"}])
    args = [str(bad) if a == "BAD" else a for a in args]
    assert main(["--packs", str(write_packs(tmp_path / "packs")), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("rewardmill audit: error:")


def test_precision_check_names_the_labeler_and_its_precision(tmp_path, yes_judge):
    report = audit(PARAMS["labelers"], write_packs(tmp_path / "packs"))
    check = precision_check(report, 0.9, frozenset({"appeal"}))  # the judge overrides the gates: it must be precise
    assert not check["success"] and len(check["failures"]) == 1
    assert check["failures"][0].startswith("labeler 'appeal' (yes_judge) has precision 0.50 (")
    assert "below validate.min_labeler_precision 0.9" in check["failures"][0]
    assert "math/near_miss/1" in check["failures"][0]
    assert precision_check(report, None) is None and precision_check(report, 0.5, frozenset({"appeal"}))["success"]


def test_a_judge_that_only_ranks_is_measured_but_not_held_to_the_minimum(tmp_path, yes_judge):
    report = audit(PARAMS["labelers"], write_packs(tmp_path / "packs"))
    assert report["labelers"]["appeal"]["model_based"] and report["labelers"]["appeal"]["precision"]["value"] == 0.5
    check = precision_check(report, 0.9)  # no gate or override names it
    assert check["success"] and check["ranks_only"] == ["appeal"]


def test_model_based_labelers_are_judges_reward_models_and_tiers_holding_one():
    from rewardmill.pipelines.audit import needs_model
    from rewardmill.transforms.config import from_dict
    from rewardmill.transforms.labelers.tiered import TieredConfig, TieredVerifier

    def tiered(*keys):
        return from_dict(TieredConfig, {"tiers": [{"labeler": k} for k in keys]}, "t")

    assert needs_model(LABELERS["reference_judge"], None) and needs_model(LABELERS["reward_model"], None)
    assert not needs_model(LABELERS["math_answer"], None)
    assert not needs_model(TieredVerifier, tiered("format", "math_answer"))
    assert needs_model(TieredVerifier, tiered("math_answer", "pointwise_judge"))


@pytest.mark.slow
def test_a_judge_is_measured_on_a_fixed_sample_of_at_most_judge_rows(tmp_path, yes_judge):
    packs = write_packs(tmp_path / "packs")
    full = audit(PARAMS["labelers"], packs)["labelers"]
    sampled = audit(PARAMS["labelers"], packs, judge_rows=1)["labelers"]
    assert sampled["appeal"]["rows"] == 1 < full["appeal"]["rows"]
    assert sampled["appeal"]["left_out"]["judge_rows"] == full["appeal"]["rows"] - 1
    assert sampled["math_answer"]["rows"] == full["math_answer"]["rows"]  # rule verifiers: every row
    again = audit(PARAMS["labelers"], packs, judge_rows=1)["labelers"]
    assert again["appeal"]["disagreements"] == sampled["appeal"]["disagreements"]  # the same sample each run
