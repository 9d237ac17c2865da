"""End to end: the environments users already have, each as a `dvc exp run` of the demo project (tests/e2e/project.py,
this file's own copy), each building pairs that the validate stage passes and the export stage writes:

- reasoning-gym tasks (two generators the default model sometimes gets right), labeled by the tasks' own scorers;
- a verifiers tool environment (the calculator of tests/transforms/environments/vf_envs, on PYTHONPATH as a user's
  own module would be), its episodes run by the rollouts stage, its rubric the labels and one function the gate;
- a file of recorded agent transcripts, the rollouts nothing sampled, the card saying so.

The file name puts it after test_repro.py on `make test`'s workers (tests/e2e/conftest.py).
"""

import json
import re
import shutil
from pathlib import Path

import pytest

from rewardmill.transforms.io.parquet import read_rows
from tests.e2e.project import BIN, run

pytestmark = pytest.mark.e2e

ENVS = Path(__file__).parents[1] / "transforms/environments/vf_envs"
# What every experiment here leaves out of the demo: the judges and the code tests (no code prompts).
NO_JUDGES = ["-S", "~labelers.code_tests", "-S", "~labelers.appeal", "-S", "~labelers.panel",
             "-S", "~assemble.aggregate.weights"]  # fmt: skip
RG_TASKS = (
    "{basic_arithmetic:{count:8,seed:0,config:{min_terms:2,max_terms:2,min_digits:1,max_digits:1,operators:['+'],"
    "allow_parentheses:false,allow_negation:false}},gcd:{count:8,seed:0,config:{min_numbers:2,max_numbers:2,"
    "min_value:2,max_value:12}}}"
)


def experiment(project: Path, name: str, *settings: str) -> list[str]:
    """The `dvc exp run` command of an experiment on the demo's params: params.yaml is set back to the committed one
    first (an experiment applies its params to the workspace; DVC reruns whatever differs from dvc.lock)."""
    run(["git", "checkout", "--", "params.yaml"], project)
    return [str(BIN / "dvc"), "exp", "run", "-n", name, *settings]


def check_datasets(project: Path, out: str) -> list[dict]:
    """The experiment ran the stages that build and check datasets, its pairs validate, and export wrote them."""
    ran = set(re.findall(r"Running stage '([^']+)'", out))
    assert {"prompts", "rollouts", "assemble", "validate", "export"} <= ran, out[-3000:]
    pairs = read_rows(str(project / "data/datasets/pairs"))
    assert pairs, out[-3000:]
    metrics = json.loads((project / "metrics/validate.json").read_text())
    assert all(v["success"] for v in metrics["validation"].values()), metrics["validation"]
    assert (project / "export/README.md").exists()
    return pairs


def grpo_step(project: Path, names: list[str], tmp_path: Path) -> dict:
    """One GRPO step on the exported `rl` config with the card's reward functions: `from_params(..., prompts=
    "data/prompts")`, which joins each row's prompt metadata (the task's entry, the environment's task) by prompt_id.
    The logged rewards, by name."""
    from datasets import concatenate_datasets, load_dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from rewardmill.rewards import from_params

    loaded = load_dataset(str(project / "export"), "rl")
    rows = concatenate_datasets([loaded[split] for split in sorted(loaded)])
    model = str(project / "models/policy")
    reward_funcs = from_params(project / "params.yaml", names, cache=False, prompts="data/prompts")
    args = GRPOConfig(
        output_dir=str(tmp_path / "grpo"), max_steps=1, per_device_train_batch_size=4, num_generations=2,
        max_completion_length=16, logging_steps=1, report_to=[], use_cpu=True, save_strategy="no",
    )  # fmt: skip
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model),
        reward_funcs=reward_funcs,
        args=args,
        train_dataset=rows.select(range(min(4, len(rows)))),
        processing_class=AutoTokenizer.from_pretrained(model),
    )
    loss = trainer.train().training_loss
    assert loss == loss  # a number, not NaN
    logged = {k: v for entry in trainer.state.log_history for k, v in entry.items()}
    for name in names:  # every completion scored: each row is the function's own task
        assert logged[f"{name}/scored"] == 1.0 and logged[f"rewards/{name}/mean"] >= 0.0, logged
    return logged


def test_reasoning_gym_tasks_build_pairs_that_validate(project, tmp_path):
    out = run(
        experiment(
            project,
            "reasoning-gym",
            "-S",
            f"prompts.sources=[{{name:rg,kind:reasoning_gym,system_prompt:null,tasks:{RG_TASKS}}}]",
            *NO_JUDGES,
            "-S",
            "+labelers.rg={labeler:reasoning_gym,tasks:[reasoning],config:{extraction:committed}}",
            "-S",
            "assemble.aggregate.gates=[rg]",
        ),  # fmt: skip
        project,
    )
    pairs = check_datasets(project, out)
    labels = read_rows(str(project / "data/labels/rg"))
    assert {"correct", "incorrect"} <= {label["verdict"] for label in labels}  # the model sometimes gets them right
    rollouts = {r["rollout_id"]: r for r in read_rows(str(project / "data/rollouts"))}
    verdicts = {label["rollout_id"]: label["verdict"] for label in labels}
    for pair in pairs:
        assert verdicts[pair["chosen_rollout_id"]] == "correct" != verdicts[pair["rejected_rollout_id"]]
        assert rollouts[pair["chosen_rollout_id"]]["task"] == "reasoning"
    grpo_step(project, ["rg"], tmp_path)  # the tasks' own scorers as GRPO rewards, as the card shows


def test_a_verifiers_tool_environment_builds_pairs_that_validate(project, tmp_path, monkeypatch):
    shutil.copy(ENVS / "vf_calc_env.py", project / "vf_calc_env.py")  # the user's own environment module
    run(["git", "add", "vf_calc_env.py"], project)
    run(["git", "commit", "-qm", "a verifiers environment"], project)
    args = "{count:8}"
    out = run(
        experiment(
            project,
            "verifiers",
            "-S",
            f"prompts.sources=[{{name:calc,kind:verifiers,id:vf_calc_env,args:{args}}}]",
            "-S",
            "rollouts.n=4",
            "-S",
            f"rollouts.environment={{name:verifiers,config:{{id:vf_calc_env,args:{args}}},max_turns:3}}",
            *NO_JUDGES,
            "-S",
            "+labelers.vf_rubric={labeler:verifiers,tasks:[environment]}",
            "-S",
            "+labelers.correct={labeler:verifiers,tasks:[environment],config:{reward:correct}}",
            "-S",
            "assemble.aggregate.gates=[correct]",
        ),  # fmt: skip
        project,
        {"PYTHONPATH": str(project)},
    )
    pairs = check_datasets(project, out)
    rollouts = {r["rollout_id"]: r for r in read_rows(str(project / "data/rollouts"))}
    assert {r["environment"]["name"] for r in rollouts.values()} == {"verifiers"}
    assert all(json.loads(r["tools"])[0]["function"]["name"] == "calc_evaluate" for r in rollouts.values())
    correct = {label["rollout_id"]: label["score"] for label in read_rows(str(project / "data/labels/correct"))}
    for pair in pairs:  # the environment's own `correct` reward function decides, as the gate
        assert correct[pair["chosen_rollout_id"]] == 1.0 and correct[pair["rejected_rollout_id"]] == 0.0
    rubric = read_rows(str(project / "data/labels/vf_rubric"))
    assert {label["aspect"] for label in rubric} == {"correct", "used_tool"}
    card = (project / "export/README.md").read_text()  # the environment's version and args, as the rollouts ran it
    (row,) = {r["environment"]["config"] for r in rollouts.values()}
    assert "environment `verifiers` version 1" in card and json.loads(row)["module"]["source_sha256"] in card
    monkeypatch.syspath_prepend(str(project))  # the environment's module, for its rubric in this process
    grpo_step(project, ["vf_rubric"], tmp_path)  # the environment's rubric as GRPO rewards


def test_recorded_transcripts_build_pairs_that_validate_and_say_off_policy(project):
    from tests.pipelines.test_rollouts_recorded import LINES

    logs = project / "data/agent_logs.jsonl"
    logs.write_text(
        "".join(json.dumps(line) + "\n" for line in LINES * 2)
    )  # each transcript twice: two prompts' worth
    run(["git", "add", "data/agent_logs.jsonl"], project)
    run(["git", "commit", "-qm", "recorded transcripts"], project)
    out = run(
        experiment(
            project,
            "traces",
            "-S",
            "prompts.sources=[{name:logs,kind:traces,path:data/agent_logs.jsonl}]",
            "-S",
            "rollouts.backend=recorded",
            *NO_JUDGES,
            "-S",
            "assemble.aggregate.gates=[math_answer]",
        ),  # fmt: skip
        project,
    )
    pairs = check_datasets(project, out)
    rollouts = {r["rollout_id"]: r for r in read_rows(str(project / "data/rollouts"))}
    assert {r["policy"]["backend"] for r in rollouts.values()} == {"recorded"}
    for pair in pairs:
        assert rollouts[pair["chosen_rollout_id"]]["prompt_id"] == rollouts[pair["rejected_rollout_id"]]["prompt_id"]
    assert "**off-policy**" in (project / "export/README.md").read_text()
