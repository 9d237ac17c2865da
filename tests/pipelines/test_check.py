"""pipelines/check.py, the first DVC stage: every params mistake in one line before any model runs, and an output whose
bytes never change, so valid params changes rerun nothing downstream because of it."""

import json

import pytest
import yaml

from rewardmill.pipelines import check
from tests.conftest import REPO, tiny_params

DVC = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
CHECK_OUT = DVC["check"]["outs"][0]


def test_every_stage_that_reads_params_depends_on_the_check():
    for name, stage in DVC.items():
        body = stage.get("do") or stage
        if name != "check" and body.get("params"):
            assert CHECK_OUT in body["deps"], f"{name} reads params but does not wait for the check"


def test_the_check_tracks_the_whole_params_file_and_the_code_it_loads():
    stage = DVC["check"]
    assert stage["params"] == [{"params.yaml": None}]  # every key: a new section or labeler reruns it
    assert {"pipelines", "transforms", "schemas"} <= set(stage["deps"])
    assert stage["cmd"].split()[:3] == ["rewardmill", "run", "check"] and CHECK_OUT in stage["cmd"]


def test_the_output_is_the_same_bytes_for_any_valid_params(tmp_path, params_file, monkeypatch):
    monkeypatch.chdir(REPO)  # decontaminate.files are relative to the project
    outs = []
    for temperature in (0.8, 1.0):
        params = tiny_params()
        params["rollouts"]["temperature"] = temperature
        params_file(params)
        out = tmp_path / f"check-{temperature}.json"
        check.main(["--out", str(out)])
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and json.loads(outs[0]) == {"ok": True}


@pytest.mark.parametrize(
    "edit, says",
    [
        # an unknown labeler: did-you-mean from the registry
        (
            lambda p: p["labelers"]["appeal"].update(labeler="refrence_judge"),
            ["labelers.appeal.labeler: unknown labeler 'refrence_judge'", "did you mean 'reference_judge'"],
        ),
        # a typo in any stage's section, with the stage named
        (lambda p: p["rollouts"].update(temprature=1.0), ["rollouts:", "temprature"]),
        # a prompt file that is not there
        (
            lambda p: p["prompts"]["sources"].append({"name": "mine", "kind": "file", "path": "/nope/p.jsonl"}),
            ["prompts.sources[2] (mine): /nope/p.jsonl: prompt source file not found"],
        ),
        # a local model path that is not there
        (lambda p: p["model"].update(source="/nope/model"), ["'model.source': /nope/model"]),
        # a judge's local model folder that is not there (models/policy, a DVC output, is made by its stage)
        (
            lambda p: p["labelers"]["panel"]["config"].update(
                backend={"kind": "transformers", "model": "/nope/judge"}
            ),
            ["label@panel.config.backend.model: /nope/judge: no such local model folder"],
        ),
        # evaluate's reward model
        (lambda p: p["evaluate"].update(reward_model="/nope/rm"), ["evaluate.reward_model: /nope/rm"]),
        # targets (no stage reads them, `rewardmill repro` does): a typo and a bad value fail before any round
        (lambda p: p["targets"].update(piars=100), ["targets:", "piars"]),
        (lambda p: p["targets"].update(pairs=0), ["targets:", "pairs must be an int >= 1"]),
    ],
)
def test_each_mistake_is_named_and_nothing_is_written(tmp_path, params_file, monkeypatch, edit, says):
    monkeypatch.chdir(REPO)
    params = tiny_params()
    edit(params)
    params_file(params)
    with pytest.raises(check.CheckError) as exc:
        check.main(["--out", str(tmp_path / "check.json")])
    message = str(exc.value)
    assert all(s in message for s in says) and "1 problem," in message, message
    assert not (tmp_path / "check.json").exists()


def test_every_problem_at_once(tmp_path, params_file, monkeypatch):
    monkeypatch.chdir(REPO)
    params = tiny_params()
    params["labelers"]["ai_disclamer"] = {"labeler": "ai_disclamer"}
    params["model"]["source"] = "/nope/model"
    params_file(params)
    with pytest.raises(check.CheckError, match="2 problems, nothing ran: .*ai_disclamer.*model.source"):
        check.main(["--out", str(tmp_path / "check.json")])
