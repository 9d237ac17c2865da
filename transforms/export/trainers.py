"""The dataset card's "Training with TRL" snippets: one per exported config, chosen by its TRL dataset type.

In: a config's name, kind (hub_layout.ConfigSpec.kind), train split and its labelers (stepwise rows: the steps
labelers of its rows; prompt-only rows: the rule verifiers that become GRPO reward functions);
`where` is what `load_dataset` is given (the export folder or the Hub repo id). Out: a markdown subsection. Pure.

The snippets follow TRL's current API: `DPOTrainer` / `RewardTrainer` (preference; RewardTrainer reads the optional
`margin` column), `trl.experimental.prm.PRMTrainer` (stepwise supervision, standard format; TRL 0.26 to 1.13, removed
after), `SFTTrainer` (prompt-completion; loss on the completion only by default) and `GRPOTrainer` (prompt-only;
every column but `prompt` reaches reward functions as a keyword argument, and a reward of None means "not
applicable"; the reward functions are the dataset's own labelers, `rewardmill.rewards.from_params`).
"""

TITLES = {
    "preference": "DPOTrainer or RewardTrainer",
    "stepwise": "PRMTrainer",
    "prompt_completion": "SFTTrainer",
    "prompt_only": "GRPOTrainer",
}


def training_section(
    config: str, kind: str, split: str, where: str, labelers: tuple[str, ...] = (), objectives: dict | None = None
) -> str:
    """-> `### <config>: <trainer>` with a sentence on the columns and a short runnable snippet. `objectives`
    (prompt_only): the assemble manifest's reward functions, weights and TRL aggregation."""
    build = {"preference": _preference, "stepwise": _stepwise, "prompt_completion": _sft, "prompt_only": _grpo}
    if kind not in build:
        return ""
    text, code = _grpo(config, split, labelers, objectives) if kind == "prompt_only" else build[kind](config, split, labelers)
    load = [
        "from datasets import load_dataset",
        *code[0],
        "",
        f'ds = load_dataset("{where}", "{config}")',
        *code[1],
    ]
    return "\n".join([f"### `{config}`: {TITLES[kind]}", "", text, "", "```python", *load, "```"])


def _preference(config: str, split: str, _) -> tuple[str, tuple[list[str], list[str]]]:
    text = (
        "`prompt`, `chosen` and `rejected` are TRL's conversational preference format with an explicit prompt: "
        "`DPOTrainer` and `RewardTrainer` load them as they are and apply the model's chat template. "
        "`RewardTrainer` also reads `margin` (the reward gap) when the column is present. The other columns are "
        "lineage the trainers do not read; filter on them first, e.g. "
        '`ds.filter(lambda r: r["agreement"] == 1.0)` or by `pair_type`.'
    )
    imports = ["from trl import DPOConfig, DPOTrainer, RewardConfig, RewardTrainer"]
    body = [
        f'dpo = DPOTrainer(model="path/to/policy", args=DPOConfig(output_dir="dpo"), train_dataset=ds["{split}"])',
        f'rm = RewardTrainer(model="path/to/base", args=RewardConfig(output_dir="rm"), train_dataset=ds["{split}"])',
    ]
    return text, (imports, body)


def _stepwise(config: str, split: str, step_labelers: tuple[str, ...]) -> tuple[str, tuple[list[str], list[str]]]:
    text = (
        "`prompt` (a string), `completions` (the steps) and `labels` (one bool per step) are TRL's stepwise "
        "supervision format in its standard (not conversational) form, which `PRMTrainer` expects. It joins the "
        'steps with `step_separator` (`"\\n"` by default) and casts labels with `int()`; the soft labels stay in '
        "`soft_labels`. A rollout labelled by several steps labelers has one row per labeler: keep one labeler's "
        "rows (`labeler` column) so no rollout is counted twice. TRL removed `PRMTrainer` after 1.13 (it lived in "
        "`trl.experimental.prm` from 0.26): pin `trl<=1.13` to use it."
    )
    imports = [
        "from transformers import AutoModelForTokenClassification, AutoTokenizer",
        "from trl.experimental.prm import PRMConfig, PRMTrainer  # trl 0.26 to 1.13; before 0.26: from trl import ...",
    ]
    keep = f'ds["{split}"]'
    if len(step_labelers) > 1:
        keep = f'ds["{split}"].filter(lambda r: r["labeler"] == "{step_labelers[0]}")'
    body = [
        f"train = {keep}",
        'model = AutoModelForTokenClassification.from_pretrained("path/to/base", num_labels=2)',
        'tokenizer = AutoTokenizer.from_pretrained("path/to/base")',
        'trainer = PRMTrainer(model=model, args=PRMConfig(output_dir="prm"), processing_class=tokenizer,',
        "                     train_dataset=train)",
    ]
    return text, (imports, body)


def _sft(config: str, split: str, _) -> tuple[str, tuple[list[str], list[str]]]:
    text = (
        "`prompt` and `completion` are TRL's conversational prompt-completion format: `SFTTrainer` applies the chat "
        "template and, by default, computes the loss on the completion only. Every row is a sample of the policy "
        "itself that its labelers scored highly (rejection sampling); `rank`, `reward` and `correct` let you keep "
        "fewer or stricter rows."
    )
    imports = ["from trl import SFTConfig, SFTTrainer"]
    body = [
        'trainer = SFTTrainer(model="path/to/policy", args=SFTConfig(output_dir="sft"),',
        f'                     train_dataset=ds["{split}"])',
    ]
    return text, (imports, body)


def _grpo(
    config: str, split: str, labelers: tuple[str, ...], objectives: dict | None = None
) -> tuple[str, tuple[list[str], list[str]]]:
    text = (
        "`prompt` is TRL's conversational prompt-only format, which `GRPOTrainer` samples from. Every other column "
        "(`reference`, `tests`, `constraints`, `task`, `pass_rate`, ...) reaches each reward function as a keyword "
        "argument of the same name. `rewardmill.rewards.from_params` turns the labelers that verified this dataset "
        "into reward functions with their params.yaml settings, sandbox and label cache (run it in the rewardmill "
        "project that built the dataset); each returns None where it does not apply (another task, no reference). "
        "A labeler that reads a prompt's `metadata` (`reasoning_gym`: the task's entry; `verifiers`: the "
        "environment's task and rubric) finds it in the project's prompts folder by `prompt_id` (`prompts=`), as "
        "the label stage does: the same scorer or rubric that labeled the rollouts scores the policy's samples. "
        "Prompts the policy always or never solves (`all_pass`, `zero_pass`) give no group-relative signal; "
        "`difficulty` buckets the rest."
    )
    names = list(labelers) or ["math_answer"]
    imports = ["from trl import GRPOConfig, GRPOTrainer", "", "from rewardmill.rewards import from_params"]
    body = [
        f'reward_funcs = from_params("params.yaml", {names!r}, prompts="data/prompts")  # keys under `labelers:`',
        f'train = ds["{split}"].filter(lambda r: not (r["zero_pass"] or r["all_pass"]))',
    ]
    if objectives and len(objectives["rewards"]) > 1:  # a reward vector: the weights and aggregation assemble used
        text += (
            f" The reward functions are the reward's objectives with its weights (`reward_weights`), combined as "
            f"`{objectives['aggregation']}` (TRL's `multi_objective_aggregation`; `normalize_then_sum` is GDPO: each "
            "function normalized within its group before the weighted sum), as params `assemble.aggregate` made the "
            "dataset's reward."
        )
        body += [
            f"args = GRPOConfig(output_dir=\"grpo\", reward_weights={objectives['weights']!r},",
            f"                  multi_objective_aggregation={objectives['aggregation']!r})",
        ]
    else:
        body.append('args = GRPOConfig(output_dir="grpo")')
    body.append('trainer = GRPOTrainer(model="path/to/policy", reward_funcs=reward_funcs, args=args, train_dataset=train)')
    return text, (imports, body)
