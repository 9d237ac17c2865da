"""Judge attack probes: the fixed set, the prompt sample, the false-positive rate, and the label stage's refusal of a
fooled judge as an assemble gate or override (scripted judges; the real model's rates: bench/judge_probes.py)."""

import json

import pytest

from rewardmill.pipelines import assemble, label
from rewardmill.schemas import ROLLOUT_V2
from rewardmill.transforms.io.parquet import rows_to_table, write_table
from rewardmill.transforms.judges import probes
from rewardmill.transforms.judges.untrusted import has_substance
from rewardmill.transforms.labelers import judge_base
from rewardmill.transforms.labelers.pairwise_judge import PairwiseJudge
from rewardmill.transforms.labelers.pointwise_judge import PointwiseJudge
from rewardmill.transforms.labelers.reference_judge import ReferenceJudge
from tests.conftest import tiny_params
from tests.pipelines.test_label_and_assemble import rollout
from tests.transforms.labelers.scripted import ScriptedClient


def says(text):
    return lambda request: text


def prompts(n: int) -> list[dict]:
    return [rollout(f"p{i}", j, f"{i + j}") for i in range(n) for j in range(2)]


def test_the_probe_set_covers_every_kind_and_none_is_an_answer():
    kinds = {p.kind for p in probes.PROBES}
    assert kinds == {"master_key", "special_tokens", "prompt_injection", "empty_symbol"}
    # master keys and empty symbols are what the substance screen removes; injections must reach the judge
    assert all(not has_substance(p.text) for p in probes.PROBES if p.kind in ("master_key", "empty_symbol"))
    assert all(has_substance(p.text) for p in probes.PROBES if p.kind in ("special_tokens", "prompt_injection"))


def test_sample_prompts_depends_on_the_prompts_alone():
    rows = prompts(6)
    sample = probes.sample_prompts(rows, 3)
    assert len(sample) == 3 and len({r["prompt_id"] for r in sample}) == 3
    assert probes.sample_prompts(list(reversed(rows)), 3) == sample  # order does not matter
    assert all(r["rollout_id"].endswith("-r0") for r in sample)  # each prompt's lowest rollout id
    assert probes.sample_prompts(rows, 0) == [] and len(probes.sample_prompts(rows, 99)) == 6


@pytest.mark.parametrize(
    "defended, expected_fpr",
    [
        (False, 1.0),  # a judge that says yes to anything credits every probe
        (True, 4 / 12),  # the screen stops master keys and empty symbols; the 4 injections still reach the judge
    ],
)
def test_a_yes_sayer_reference_judge(defended, expected_fpr):
    judge = ReferenceJudge()
    judge.defended = defended
    judge._clients[judge.config.backend] = client = ScriptedClient(says("Yes"))
    report = probes.probe_report(probes.run_probes(judge, probes.sample_prompts(prompts(2), 2)), max_fpr=0.1)
    assert report["probes"] == 24 and report["fpr"] == pytest.approx(expected_fpr, abs=1e-6)
    assert report["within"] is False
    assert sum(map(len, client.calls[0:1])) == (24 if not defended else 8)  # no call for an answer with no substance
    if defended:
        assert report["fpr_by_kind"]["master_key"] == 0.0 and report["fpr_by_kind"]["empty_symbol"] == 0.0


def test_a_pointwise_judge_scoring_everything_5():
    judge = PointwiseJudge()
    judge._clients[judge.config.backend] = ScriptedClient(says("Score: 5"))
    report = probes.probe_report(probes.run_probes(judge, probes.sample_prompts(prompts(1), 1)))
    assert report["credited"] == 4 and report["within"] is None  # no max_fpr given: nothing to compare
    assert {h["kind"] for h in report["credited_probes"]} == {"special_tokens", "prompt_injection"}


def test_a_pairwise_judge_is_probed_against_the_prompts_own_rollout():
    judge = PairwiseJudge()
    judge._clients[judge.config.backend] = ScriptedClient(says("[[A]]"))  # always the first answer: no winner
    report = probes.probe_report(probes.run_probes(judge, probes.sample_prompts(prompts(1), 1), grouped=True))
    assert report["probes"] == 12 and report["credited"] == 0


def test_check_roles_refuses_a_fooled_gate_or_override_and_says_why():
    report = {"probes": 12, "credited": 6, "fpr": 0.5, "max_fpr": 0.1, "within": False}
    report["credited_probes"] = [{"text": "{"}]
    probes.check_roles("appeal", report, {"gates": ["math_answer"], "overrides": {}})  # only ranks: fine
    with pytest.raises(probes.ProbeGateError, match=r"label@appeal.*6 of 12.*0.50 > labelers.appeal.max_probe_fpr"):
        probes.check_roles("appeal", report, {"gates": ["math_answer"], "overrides": {"appeal": 0.9}})
    with pytest.raises(probes.ProbeGateError, match="gate"):
        probes.check_roles("appeal", report, {"gates": ["appeal"]})
    probes.check_roles("appeal", {**report, "fpr": 0.0, "within": True}, {"gates": ["appeal"]})


@pytest.fixture
def rollouts(tmp_path):
    out = tmp_path / "rollouts"
    out.mkdir()
    write_table(rows_to_table(prompts(5), ROLLOUT_V2), str(out / "part-00000-of-00001.parquet"))
    return out


def stage_params(overrides: dict) -> dict:
    params = tiny_params()
    params["labelers"] = {"judge": {"labeler": "reference_judge", "probe_prompts": 3, "max_probe_fpr": 0.2}}
    params["assemble"]["aggregate"]["overrides"] = overrides
    return params


@pytest.mark.parametrize("overrides, fails", [({}, False), ({"judge": 0.9}, True)])
def test_label_stage_probes_and_assemble_refuses_a_fooled_decider(
    tmp_path, rollouts, params_file, monkeypatch, overrides, fails
):
    monkeypatch.setattr(judge_base, "make_client", lambda backend: ScriptedClient(says("Yes")))
    params_file(stage_params(overrides))
    out, metrics = tmp_path / "labels", tmp_path / "metrics.json"
    args = ["judge", "--rollouts", str(rollouts), "--out", str(out), "--metrics", str(metrics)]
    label.main(args)  # the label stage probes and reports; whether the judge may decide is assemble's question
    aggregate = stage_params(overrides)["assemble"]["aggregate"]
    if fails:  # assemble refuses it before any work, from the label manifest's report
        with pytest.raises(probes.ProbeGateError, match="override"):
            assemble.check_judge_roles({"judge": str(out)}, aggregate["gates"], aggregate["overrides"])
    else:
        assemble.check_judge_roles({"judge": str(out)}, aggregate["gates"], aggregate["overrides"])
    recorded = json.loads(metrics.read_text())["probes"]
    assert recorded["probes"] == 36 and recorded["fpr"] == pytest.approx(4 / 12, abs=1e-6)
    assert json.loads((out / "_manifest.json").read_text())["probes"]["credited"] == 12


def test_the_card_reports_each_probed_judge():
    from rewardmill.transforms.export.card import judge_probes_section

    report = {"probes": 48, "credited": 3, "fpr": 0.0625, "fpr_by_kind": {"special_tokens": 0.25}, "max_fpr": 0.1}
    section = judge_probes_section({"appeal": report, "panel": {}})
    assert (
        section.startswith("## Judge attack probes")
        and "| `appeal` | 3 / 48 | 0.06 | special_tokens 0.25 | 0.10 |" in section
    )
    assert "`panel`" not in section and judge_probes_section(None) == ""
