"""End to end: rubrics for what no rule can check, as one `dvc exp run` of the demo project (tests/e2e/project.py,
this file's own copy). The demo already writes a rubric per prompt (rubrics@reference) and grades against it
(label@rubric); the experiment adds a learned rule set (rubrics@rules, AutoRule) checked by `rule_checker`, drops
the rubrics the validation flags, asks for per-aspect pairs and combines the weighted scores normalize-then-sum
(GDPO). The datasets validate, the card reports the rubric validation, the kept rules and the reward vector, and the
per-aspect pairs load by name and train a DPO step in TRL.

The file name puts it after test_repro.py on `make test`'s workers (tests/e2e/conftest.py).
"""

import json
import re

import pytest

from rewardmill.transforms.io.parquet import read_rows
from tests.e2e.project import run
from tests.e2e.test_sources_ecosystem import experiment

pytestmark = pytest.mark.e2e

RULES = (
    "+rubrics.rules={mode:autorule,tasks:[math],rank_by:{labeler:reference_similarity,config:{metric:rougeL}},"
    "n_criteria:3,max_tokens:96,autorule:{max_candidates:4,min_agreement:0.0,rationale_tokens:64}}"
)
# appeal's P(yes) varies within a prompt on the tiny demo; the panel's and the rubrics' scores mostly tie there
# rubric/rubric:c1: the first criterion of each prompt's generated rubric, a part of rubric/rubric in the score vector
ASPECTS = ["appeal/correctness", "panel/panel", "rubric/rubric", "rubric/rubric:c1", "rules/rules"]


def test_rubrics_rules_validation_and_per_aspect_pairs(project, tmp_path):
    out = run(
        experiment(
            project,
            "rubrics",
            "-S",
            RULES,
            "-S",
            "+labelers.rules={labeler:rule_checker,tasks:[math],config:{rubrics:rules},probe_prompts:0}",
            "-S",
            "assemble.rubric_validation.drop=true",
            "-S",
            "assemble.rubric_validation.trusted=[math_answer]",
            "-S",
            f"assemble.pairs_by_aspect.aspects=[{','.join(ASPECTS)}]",
            "-S",
            "assemble.aggregate.combine=normalize_then_sum",
        ),  # fmt: skip
        project,
    )
    ran = set(re.findall(r"Running stage '([^']+)'", out))
    assert {"rubrics@rules", "label@rules", "assemble", "validate", "export"} <= ran, out[-3000:]
    for judge in ("appeal", "panel"):  # every label stage depends on data/rubrics: the others rerun from their caches
        usage = json.loads((project / f"metrics/labels/{judge}.json").read_text())["usage"]
        assert usage.get("requests", 0) == 0, (judge, usage)
    metrics = json.loads((project / "metrics/validate.json").read_text())
    assert all(v["success"] for v in metrics["validation"].values()), metrics["validation"]

    # the rubric validation is measured and reported, however poor the demo model's rubrics are
    validated = metrics["rubric_validation"]["rubric"]
    assert validated["rubric_set"] == "reference" and validated["pairs"] >= 0
    manifest = json.loads((project / "data/datasets/pairs/_manifest.json").read_text())
    record = manifest["rubric_validation"]
    assert record["labelers"]["rubric"]["dropped"] == record["labelers"]["rubric"]["flagged"]
    assert record["labelers"]["rubric"]["trusted"] == ["math_answer"]  # assemble.rubric_validation.trusted
    card = (project / "export/README.md").read_text()
    assert "## Rubric validation" in card and "## Learned rules" in card
    assert re.search(r"`rubric`: (its rubrics reproduce|no trusted pair)", card)
    goals = manifest["objectives"]  # the reward vector the card's GRPO snippet passes, as the reward was made
    assert goals["aggregation"] == "normalize_then_sum" and goals["rewards"][:2] == ["math_answer", "code_tests"]
    if len(goals["rewards"]) > 1:
        assert (
            f"reward_weights={goals['weights']!r}" in card
            and "multi_objective_aggregation='normalize_then_sum'" in card
        )

    # the learned rule set: one row for every prompt, its kept rules in the rule checker's manifest and on the card
    (rules,) = read_rows(str(project / "data/rubrics/rules"))
    kept = [c for c in json.loads(rules["evidence"])["candidates"] if c["kept"]]
    checker = json.loads((project / "data/labels/rules/_manifest.json").read_text())
    assert (
        [r["rule"] for r in checker["rules"]]
        == [c["rule"] for c in kept]
        == [c["criterion"] for c in rules["criteria"]]
    )
    assert f"`rules` checks rule set `rules`: {len(kept)} rules kept." in card

    # each criterion of a rollout's generated rubric is an entry of its score vector, beside the rubric's score
    rubrics = {r["prompt_id"]: r for r in read_rows(str(project / "data/rubrics/reference"))}

    def graded_by_rubric(row: dict) -> bool:  # the rubric judge graded it (did not abstain)
        return any(s["name"] == "rubric/rubric" and s["score"] is not None for s in row["scores"])

    rewards = read_rows(str(project / "data/datasets/_rewards"))
    graded = [r for r in rewards if r["prompt_id"] in rubrics and graded_by_rubric(r)]
    assert graded
    for row in graded:
        names = {s["name"] for s in row["scores"]}
        criteria = rubrics[row["prompt_id"]]["criteria"]
        assert {f"rubric/rubric:c{i}" for i in range(1, len(criteria) + 1)} <= names

    # per-aspect pairs: each names its aspect and carries that aspect's scores; they load and train in TRL
    pairs = read_rows(str(project / "data/datasets/pairs_by_aspect"))
    assert pairs and {p["aspect"] for p in pairs} <= set(ASPECTS)
    for pair in pairs:
        named = {s["name"]: s["score"] for s in pair["scores_chosen"]}
        assert named[pair["aspect"]] == pair["score_chosen"] and pair["margin"] > 0
    dpo_step(project, tmp_path)


def dpo_step(project, tmp_path) -> None:
    from datasets import concatenate_datasets, load_dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import DPOConfig, DPOTrainer

    loaded = load_dataset(str(project / "export"), "pairs_by_aspect")
    rows = concatenate_datasets([loaded[split] for split in sorted(loaded)])
    assert "aspect" in rows.column_names
    model = str(project / "models/policy")
    args = DPOConfig(output_dir=str(tmp_path / "dpo"), max_steps=1, per_device_train_batch_size=2, max_length=128,
                     report_to=[], use_cpu=True, save_strategy="no")  # fmt: skip
    trainer = DPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model),
        args=args,
        train_dataset=rows.select(range(min(2, len(rows)))),
        processing_class=AutoTokenizer.from_pretrained(model),
    )
    loss = trainer.train().training_loss
    assert loss == loss  # a number, not NaN
