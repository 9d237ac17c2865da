"""Stage `rubrics@NAME` on the real default model, run as users run it (`rewardmill run rubrics`): it writes a rubric
or a reject with its reason for every chosen prompt, a rerun is served from the call cache with the same bytes, a
kill -9 mid-stage resumes to the same bytes, and a `rubric_judge` with `rubrics: NAME` grades against the rubrics."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from rewardmill.transforms.io.parquet import read_rows
from tests.conftest import tiny_params

BIN = Path(sys.executable).parent
REASONS = {"no_reference", "no_contrast", "writer_call_failed", "too_few_criteria"}

pytestmark = pytest.mark.model


def rewardmill(root: Path, *args: str, check: bool = True, **popen) -> subprocess.CompletedProcess | subprocess.Popen:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "REWARDMILL_PARAMS": str(root / "params.yaml")}
    cmd = [str(BIN / "rewardmill"), "run", *args]
    if popen.pop("popen", False):
        return subprocess.Popen(cmd, cwd=root, env=env, **popen)
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert not check or proc.returncode == 0, proc.stderr[-3000:]
    return proc


def stage_args(name: str, out: str = "") -> list[str]:
    out = out or f"data/rubrics/{name}"
    return ["rubrics", name, "--out", out, "--cache", "cache/labels", "--metrics", f"metrics/{Path(out).name}.json"]


def shards(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.parquet"))}


@pytest.fixture(scope="module")
def project(policy_dir, tmp_path_factory) -> Path:
    """Prompts (6 arithmetic, 2 code) and their rollouts from the real default model; rubric sets in params."""
    root = tmp_path_factory.mktemp("rubrics_project")
    params = tiny_params()
    params["rubrics"] = {
        "ref": {"mode": "reference", "n_criteria": 4, "min_criteria": 1},  # every task: code prompts have no reference
        "contrast": {
            "mode": "contrastive",
            "tasks": ["math"],
            "rank_by": {"labeler": "math_answer"},
            "min_criteria": 1,
        },
        "slow": {"mode": "reference", "tasks": ["math"], "max_prompts": 3, "min_criteria": 1, "max_tokens": 96}
        # ROUGE-L against the reference ranks finely, so a prompt's best rollout has a runner-up to refine against
        | {
            "chunk_size": 1,
            "refine": {"rounds": 1},
            "rank_by": {"labeler": "reference_similarity", "config": {"metric": "rougeL"}},
        },
    }
    params["rubrics"]["rules"] = {  # ROUGE-L ranks finely: most math prompts have a pair to learn from
        "mode": "autorule",
        "tasks": ["math"],
        "rank_by": {"labeler": "reference_similarity", "config": {"metric": "rougeL"}},
        "n_criteria": 3,
        "max_tokens": 96,
        "autorule": {"max_candidates": 4, "min_agreement": 0.0, "rationale_tokens": 64},
    }
    params["labelers"]["rules"] = {
        "labeler": "rule_checker",
        "tasks": ["math"],
        "config": {"rubrics": "rules"},
        "probe_prompts": 0,
    }
    params["labelers"]["rubric"] = {
        "labeler": "rubric_judge",
        "tasks": ["math"],
        "config": {"rubrics": "ref", "mode": "principles", "max_tokens": 4},
        "probe_prompts": 0,
    }
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    (root / "models").mkdir()
    (root / "models/policy").symlink_to(policy_dir)
    rewardmill(root, "prompts", "--out", "data/prompts")
    rewardmill(root, "rollouts", "--out", "data/rollouts", "--cache", "cache/rollouts")
    return root


def test_every_prompt_gets_a_rubric_or_a_reason_and_a_rerun_is_cached(project):
    rewardmill(project, *stage_args("ref"))
    out = project / "data/rubrics/ref"
    rubrics, rejects = read_rows(str(out)), read_rows(str(out / "_rejects"))
    prompts = {r["prompt_id"]: r for r in read_rows(str(project / "data/prompts"))}
    assert sorted([r["prompt_id"] for r in rubrics] + [r["row_id"] for r in rejects]) == sorted(prompts)
    assert rubrics, "the default model writes a readable point for some arithmetic prompt"
    for row in rubrics:
        assert row["criteria"] and all(c["criterion"].strip() and c["weight"] > 0 for c in row["criteria"])
        assert row["rubric_set"] == "ref" and row["mode"] == "reference" and len(row["rubric_id"]) == 64
        assert row["judge"] and json.loads(row["evidence"]) == {"from": "reference"}
    assert {r["reason"] for r in rejects} <= REASONS
    no_reference = {r["row_id"] for r in rejects if r["reason"] == "no_reference"}
    assert no_reference == {pid for pid, p in prompts.items() if not p["reference"]}  # the code prompts
    metrics = json.loads((project / "metrics/ref.json").read_text())
    assert metrics["rubrics"] == len(rubrics) and sum(metrics["rejects"].values()) == len(rejects)
    assert metrics["this_run"]["cache_misses"] > 0
    # the manifest's spend is every writer call the run sent, at the tokens the model reported
    sent = metrics["this_run"]
    spend = json.loads((out / "_manifest.json").read_text())["spend"]
    assert (spend["requests"], spend["tokens_in"], spend["tokens_out"]) == (
        sent["requests"], sent["prompt_tokens"], sent["completion_tokens"]
    ), (spend, sent)  # fmt: skip
    assert spend["uncached_requests"] == spend["estimated_requests"] == 0 and metrics["spend"] == spend
    again = rewardmill(project, *stage_args("ref", "data/rubrics/ref-again"))
    assert shards(project / "data/rubrics/ref-again") == shards(out)
    rerun = json.loads((project / "metrics/ref-again.json").read_text())
    assert rerun["this_run"].get("cache_misses", 0) == 0
    assert rerun["spend"] == spend  # what the rubrics rest on, not what this run sent
    assert "rubrics@ref: done" in again.stderr


def test_contrastive_rubrics_come_from_rollouts_the_rank_labeler_scores_apart(project):
    """The tiny run's rollouts of a prompt are mostly all right or all wrong, so most prompts have no contrast; a stage
    that writes no rubric at all fails and its message counts the reasons (its rejects go with the temp folder)."""
    proc = rewardmill(project, *stage_args("contrast"), check=False)
    out = project / "data/rubrics/contrast"
    if proc.returncode != 0:
        assert not out.exists()  # nothing renamed into place
        counts = dict(pair.rsplit(" ", 1) for pair in proc.stderr.split("Reject reasons: ")[1].strip().split(", "))
        assert set(counts) <= REASONS - {"no_reference"} and "no_contrast" in counts
        assert sum(map(int, counts.values())) == 6  # every math prompt, with its reason
        return
    rubrics, rejects = read_rows(str(out)), read_rows(str(out / "_rejects"))
    assert len(rubrics) + len(rejects) == 6 and {r["reason"] for r in rejects} <= REASONS - {"no_reference"}
    for row in rubrics:
        evidence = json.loads(row["evidence"])
        assert evidence["preferred"]["score"] > evidence["rejected"]["score"]


def test_killed_mid_stage_resumes_to_the_same_bytes(project):
    """chunk_size 1: the call cache is flushed after every prompt, so a kill after the first chunks keeps them."""
    whole = project / "data/rubrics/slow-whole"
    rewardmill(project, *stage_args("slow", str(whole)), "--cache", "cache-whole/labels")
    calls = project / "cache-killed/calls"
    killed = rewardmill(
        project,
        *stage_args("slow", "data/rubrics/slow"),
        "--cache",
        "cache-killed/labels",
        popen=True,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not any(calls.rglob("*.jsonl*")) and killed.poll() is None:
        time.sleep(0.2)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    assert not (project / "data/rubrics/slow").exists()  # nothing half written
    rewardmill(project, *stage_args("slow", "data/rubrics/slow"), "--cache", "cache-killed/labels")
    assert shards(project / "data/rubrics/slow") == shards(whole)
    refined = [json.loads(r["evidence"]).get("refine") for r in read_rows(str(whole))]
    assert any(refined), "the refine round checked each criterion on the best rollout and its runner-up"
    for record in filter(None, refined):
        assert record["best"]["score"] > record["runner_up"]["score"] and len(record["votes"]) == 2


def test_rubric_judge_grades_each_rollout_against_its_prompts_rubric(project):
    if not (project / "data/rubrics/ref").exists():
        rewardmill(project, *stage_args("ref"))
    (project / "data/rubrics/_sets.json").write_text('{"rubric_sets": {"ref": "reference"}}')
    rewardmill(
        project,
        "label",
        "rubric",
        "--out",
        "data/labels/rubric",
        "--cache",
        "cache/labels",
        "--prompts",
        "data/prompts",
        "--rubrics",
        "data/rubrics",
    )
    rubrics = {r["prompt_id"]: r for r in read_rows(str(project / "data/rubrics/ref"))}
    rows = read_rows(str(project / "data/labels/rubric"))
    labels = [label for label in rows if label["aspect"] == "rubric"]
    assert len(labels) == 6 * 3  # every math rollout
    for label in labels:
        raw = json.loads(label["raw"])
        parts = sorted((r for r in rows if r["rollout_id"] == label["rollout_id"] and r is not label),
                       key=lambda r: json.loads(r["raw"])["index"])  # fmt: skip
        if label["prompt_id"] in rubrics:
            rubric = rubrics[label["prompt_id"]]
            assert raw["source"] == "generated" and raw["rubric_id"] == rubric["rubric_id"]
            assert raw.get("coverage") == 0.0 or len(raw["criterion_scores"]) == len(rubric["criteria"])
            if label["score"] is not None:  # each criterion's own label, in the rubric's order: the score vector
                assert [r["aspect"] for r in parts] == [f"rubric:c{i}" for i in range(1, len(rubric["criteria"]) + 1)]
                assert [json.loads(r["raw"])["criterion"] for r in parts] == [
                    c["criterion"] for c in rubric["criteria"]
                ]
                assert [r["score"] for r in parts] == raw["criterion_scores"]
        else:
            assert raw["source"] == "none" and label["verdict"] == "abstain" and label["score"] is None and not parts
    manifest = json.loads((project / "data/labels/rubric/_manifest.json").read_text())
    rubric_manifest = json.loads((project / "data/rubrics/ref/_manifest.json").read_text())
    assert manifest["rubric_set"] == "ref" and manifest["rubric_set_spend"] == rubric_manifest["spend"]  # for assemble
    missing = rewardmill(project, "label", "rubric", "--out", "data/labels/rubric2", check=False)
    assert missing.returncode == 2 and "--rubrics data/rubrics" in missing.stderr


def test_autorule_learns_one_rule_set_and_rule_checker_scores_against_it(project):
    rewardmill(project, *stage_args("rules"))
    out = project / "data/rubrics/rules"
    rows, rejects = read_rows(str(out)), read_rows(str(out / "_rejects"))
    (row,) = rows
    assert row["prompt_id"] == "*" and row["mode"] == "autorule"
    evidence = json.loads(row["evidence"])
    assert len(evidence["prompts"]) + len(rejects) == 6 and {r["reason"] for r in rejects} <= {"no_contrast"}
    assert evidence["extraction_pairs"] + evidence["heldout_pairs"] == len(evidence["prompts"])
    kept = [c for c in evidence["candidates"] if c["kept"]]
    assert [c["criterion"] for c in row["criteria"]] == [c["rule"] for c in kept]
    for candidate in evidence["candidates"]:  # what was measured on the held-out pairs is reported for every rule
        assert candidate["agree"] + candidate["disagree"] + candidate["undecided"] == evidence["heldout_pairs"]
    (project / "data/rubrics/_sets.json").write_text('{"rubric_sets": {"rules": "autorule"}}')
    rewardmill(project, "label", "rules", "--out", "data/labels/rules", "--cache", "cache/labels", "--rubrics",
               "data/rubrics")  # fmt: skip
    rows = read_rows(str(project / "data/labels/rules"))
    labels = [label for label in rows if label["aspect"] == "rules"]
    assert len(labels) == 6 * 3 and {label["aspect"].split(":")[0] for label in rows} == {"rules"}
    manifest = json.loads((project / "data/labels/rules/_manifest.json").read_text())
    assert manifest["rubric_set"] == "rules" and len(manifest["rules"]) == len(kept)
    if kept:  # every rollout is checked against the same rules, whatever its prompt
        graded = [json.loads(label["raw"]) for label in labels if label["score"] is not None]
        assert graded and all(len(raw["results"]) == len(kept) for raw in graded)
    else:
        assert all(label["score"] is None for label in labels)
