"""The rollouts stage with `rollouts.environment: feedback` on the real default model: ROLLOUT_V3 rows whose turns,
stop reasons and outcome rewards hold together, the same bytes from the cache, the same episodes sampled anew in
other batches, and a label stage that reads them as it reads single-turn rollouts."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from rewardmill.pipelines import label as label_stage
from rewardmill.pipelines import rollouts
from rewardmill.schemas import ROLLOUT_V3
from rewardmill.transforms.config import ConfigError
from rewardmill.transforms.errors import UserError
from rewardmill.transforms.io.parquet import read_rows
from tests.conftest import REPO, tiny_params
from tests.pipelines.stage_data import make_prompts

SHARD = "part-00000-of-00001.parquet"


@pytest.fixture
def inputs(tmp_path, params_file, policy_dir):
    params = tiny_params()
    params["prompts"]["sources"] = params["prompts"]["sources"][:1]  # arithmetic: math_answer verifies it
    params["prompts"]["sources"][0].update(count=3)
    params["rollouts"].update(n=2, max_new_tokens=12, batch_size=4)
    params["rollouts"]["environment"] = {"name": "feedback", "config": {"max_attempts": 3}, "max_turns": 3}
    prompts = make_prompts(tmp_path, params_file, params)
    return params, prompts, policy_dir


def run_stage(tmp_path, params_file, params, prompts, model, name, cache=None):
    params_file(params)
    out = tmp_path / name
    argv = ["--prompts", str(prompts), "--model", str(model), "--out", str(out)]
    rollouts.main(argv + (["--cache", str(cache)] if cache else []))
    return out


def test_feedback_episodes_are_v3_rows_that_hold_together(tmp_path, params_file, inputs):
    params, prompts, model = inputs
    cache = tmp_path / "cache"
    first = run_stage(tmp_path, params_file, params, prompts, model, "r1", cache)
    table = pq.read_table(first / SHARD)
    assert table.schema.equals(ROLLOUT_V3, check_metadata=True)
    rows = table.to_pylist()
    assert len(rows) == 3 * 2
    manifest = json.loads((first / "_manifest.json").read_text())
    assert manifest["schema"] == "rollout_v3" and manifest["rows"] == 6 and manifest["rejects"] == {}
    episodes = manifest["episodes"]  # what the episodes did, from the rows (transforms/environments/summary.py)
    assert episodes["trajectories"] == 6 and episodes["by_stop_reason"]["done"] == 6
    assert sum(episodes["assistant_turns"]["by_count"].values()) == 6 and episodes["tool_calls"] == 0
    assert episodes["env_reward"]["n"] == 6
    for r in rows:
        assistant = [t for t in r["turns"] if t["role"] == "assistant"]
        assert 1 <= len(assistant) <= 3 and r["completion"] == (assistant[-1]["content"] or "")
        assert r["n_tokens"] == sum(t["n_tokens"] for t in assistant)
        assert r["environment"]["name"] == "feedback" and json.loads(r["environment"]["config"])["max_attempts"] == 3
        assert json.loads(r["sampling"])["episode"]  # the episode is part of the sampling identity (and rollout_id)
        verdicts = [json.loads(t["info"])["verdict"] for t in assistant]
        assert r["stop_reason"] == "done" and r["env_reward"] == (1.0 if verdicts[-1] == "correct" else 0.0)
        assert "correct" not in verdicts[:-1]  # the episode ends at the first correct answer
        feedback = [t for t in r["turns"] if t["role"] == "user"]
        assert len(feedback) == len(assistant) - 1 and all(r["reference"] not in t["content"] for t in feedback)

    again = run_stage(tmp_path, params_file, params, prompts, model, "r2", cache)  # every episode from the cache
    assert (first / SHARD).read_bytes() == (again / SHARD).read_bytes()
    params["rollouts"]["batch_size"] = 1  # sampled anew in other batches: the same episodes
    single = read_rows(str(run_stage(tmp_path, params_file, params, prompts, model, "r3")))
    assert [(r["rollout_id"], r["turns"]) for r in single] == [(r["rollout_id"], r["turns"]) for r in rows]

    out = tmp_path / "labels"  # a single-turn labeler reads the final answer, as the environment judged it
    label_stage.main(["math_answer", "--rollouts", str(first), "--out", str(out)])
    labels = read_rows(str(out))
    by_id = {r["rollout_id"]: r for r in rows}
    assert len(labels) == 6
    for label in labels:
        rollout = by_id[label["rollout_id"]]
        assert (label["verdict"] == "correct") == (rollout["env_reward"] == 1.0), (label, rollout["turns"])

    # the trajectory labelers: the environment's reward, and the turn labels from its per-turn records
    params["labelers"] = {"env": {"labeler": "environment"}, "turns": {"labeler": "turns"}}
    params_file(params)
    for key in params["labelers"]:
        label_stage.main([key, "--rollouts", str(first), "--out", str(tmp_path / key)])
    env = {r["rollout_id"]: r for r in read_rows(str(tmp_path / "env"))}
    assert {rid: (r["score"], r["verdict"]) for rid, r in env.items()} == {
        rid: (r["env_reward"], "correct" if r["env_reward"] == 1.0 else "incorrect") for rid, r in by_id.items()
    }
    turns = read_rows(str(tmp_path / "turns"))
    assert len(turns) == 6 * 3  # three aspects per trajectory
    for label in turns:
        rollout = by_id[label["rollout_id"]]
        attempts = len([t for t in rollout["turns"] if t["role"] == "assistant"])
        if label["aspect"] == "progress":  # solved at attempt k: 1/k; never: 0
            assert label["score"] == pytest.approx(1 / attempts if rollout["env_reward"] == 1.0 else 0.0), label
        if label["aspect"] == "tool_use":  # feedback offers no tools
            assert (label["verdict"], label["score"]) == ("abstain", None)
        if label["aspect"] == "turns":
            assert json.loads(label["raw"])["first_error_turn"] == (
                -1 if attempts == 1 and rollout["env_reward"] else 0
            )


def test_an_unknown_environment_or_a_bad_config_is_refused_before_any_work(tmp_path, params_file, inputs):
    params, prompts, model = inputs
    params["rollouts"]["environment"]["name"] = "nope"
    with pytest.raises(UserError, match="unknown environment 'nope'; known: .*feedback"):
        run_stage(tmp_path, params_file, params, prompts, model, "bad")
    params["rollouts"]["environment"] = {"name": "feedback", "config": {"max_attempts": 0}}
    with pytest.raises((ConfigError, SystemExit), match="max_attempts must be >= 1"):
        run_stage(tmp_path, params_file, params, prompts, model, "bad2")
    assert not (tmp_path / "bad").exists() and not (tmp_path / "bad2").exists()


@pytest.mark.slow
def test_a_stage_killed_mid_episodes_resumes_to_the_bytes_of_an_uninterrupted_run(tmp_path, params_file, inputs):
    """kill -9 while the stage samples episodes, once some rounds of turns are in the cache, then a rerun: the output
    is the uninterrupted run's, byte for byte. Each run is its own process, as `dvc repro` runs it. Finished batches
    come back whole from the rollouts cache, and the batch the kill cut replays its finished turns from the turn
    cache and samples only the rest, with the same per-turn seeds."""
    params, prompts, model = inputs
    params["rollouts"].update(batch_size=1, n=1)  # 3 batches, each of up to 3 rounds of turns
    path = params_file(params)
    env = {**os.environ, "PYTHONPATH": str(REPO), "REWARDMILL_PARAMS": str(path)}

    def args(out: str, cache: str) -> list[str]:
        code = "import sys; from rewardmill.pipelines import rollouts; rollouts.main(sys.argv[1:])"
        run = ["--prompts", str(prompts), "--model", str(model), "--out", out, "--cache", cache]
        return [sys.executable, "-c", code, *run]

    subprocess.run(args(str(tmp_path / "whole"), str(tmp_path / "cache-whole")), env=env, check=True, timeout=600)
    cache = tmp_path / "cache"
    turns = lambda: [p for p in cache.rglob("segment-*.jsonl") if "turns" in p.parts]  # noqa: E731
    batches = lambda: [p for p in cache.rglob("segment-*.jsonl") if "turns" not in p.parts]  # noqa: E731
    killed = subprocess.Popen(args(str(tmp_path / "resumed"), str(cache)), env=env, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(turns()) < 2 and killed.poll() is None:
        time.sleep(0.05)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    assert len(turns()) >= 2 and len(batches()) < 3, (len(turns()), len(batches()))  # killed mid-stage
    assert not (tmp_path / "resumed").exists()  # and no half output
    # the turns the cut batch had finished: every cached turn, less those the finished batches hold
    cached_turns = sum(len(p.read_text().splitlines()) for p in turns())
    finished = [json.loads(line)["rollouts"] for p in batches() for line in p.read_text().splitlines()]
    in_finished = sum(
        sum(t["role"] == "assistant" for t in sample["trajectory"]["turns"])
        for entry in finished
        for sample in entry["samples"]
    )
    resumed = subprocess.run(
        args(str(tmp_path / "resumed"), str(cache)), env=env, capture_output=True, text=True, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    replayed = re.search(r"(\d+) episode turns sampled now, (\d+) replayed from the cache", resumed.stderr)
    assert replayed and int(replayed[2]) == cached_turns - in_finished, resumed.stderr[-3000:]  # and only those
    assert (tmp_path / "resumed" / SHARD).read_bytes() == (tmp_path / "whole" / SHARD).read_bytes()


def test_python_tool_speaks_the_templates_own_tool_format_where_it_has_one(tmp_path, params_file, inputs):
    """`system_prompt: null`: the rollouts stage tells the environment whether the policy's template renders tools.
    The default model's does not (the text protocol's system message is in what it was fed); the same model under a
    Hermes-style tools template is fed the template's own tool block and no protocol message. Read from the token ids
    the turn was fed (keep_tokens), and the config each rollout records."""
    from transformers import AutoTokenizer

    from rewardmill.transforms.environments.python_tool import TOOL
    from rewardmill.transforms.environments.tool_calls import protocol_prompt
    from tests.transforms.environments.test_native_tools import with_tools_template

    params, prompts, model = inputs
    params["rollouts"].update(n=1, keep_tokens=True)
    params["rollouts"]["environment"] = {"name": "python_tool", "max_turns": 1}
    native = with_tools_template(model, tmp_path / "tools-policy")
    for policy, expected in ((model, True), (native, False)):
        rows = read_rows(str(run_stage(tmp_path, params_file, params, prompts, policy, f"r-{expected}")))
        tokenizer = AutoTokenizer.from_pretrained(policy)
        for row in rows:
            assert json.loads(row["environment"]["config"])["system_prompt"] is expected
            fed = tokenizer.decode(row["turns"][0]["prompt_token_ids"])
            assert (protocol_prompt([TOOL]) in fed) is expected and ("<tools>" in fed) is (not expected)
            # the prompt as fed is kept for the datasets where the environment added a system message
            added = row["prompt_messages"]
            assert (added == [{"role": "system", "content": protocol_prompt([TOOL])}, *row["messages"]]) is expected
            assert (added is None) is (not expected)


def test_episodes_with_reasoning_get_both_manifest_records_from_one_read(tmp_path, params_file, inputs):
    """rollouts.reasoning beside an environment: the manifest has `episodes` and `tokens`, both read back from the
    written rows (one read of the union of their columns)."""
    params, prompts, model = inputs
    params["rollouts"]["reasoning"] = {"open": "<think>", "close": "</think>"}
    out = run_stage(tmp_path, params_file, params, prompts, model, "both")
    rows = read_rows(str(out))
    manifest = json.loads((out / "_manifest.json").read_text())
    assert manifest["episodes"]["trajectories"] == len(rows) == 6
    assert manifest["tokens"]["generated"] == sum(r["n_tokens"] for r in rows)
    assert manifest["tokens"]["reasoning_uncounted"] == 0  # a local policy counts every trace
