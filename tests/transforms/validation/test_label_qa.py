"""Label QA: disagreement counts by kind, the most confident disagreements with their texts, judges vs gates."""

from rewardmill.schemas import LABEL_V1
from rewardmill.transforms.validation.label_qa import label_qa, render_html, summary
from tests.transforms.validation.conftest import write_project, write_stage
from tests.transforms.validation.rows import _id, label_row

# the judge against math_answer (the gate): rollout 0 correct/correct, 1 incorrect/correct (a disagreement at 0.9),
# 2 correct/incorrect (at 0.6), 3 the gate timed out
JUDGE = [("correct", 1.0, 0.8), ("correct", 1.0, 0.9), ("incorrect", 0.0, 0.6), ("correct", 1.0, 0.7)]


def judge_rows(name: str, verdicts) -> list[dict]:
    rows = []
    for i, (verdict, score, confidence) in enumerate(verdicts):
        row = label_row(i, verdict, score)
        rows.append({**row, "labeler": name, "confidence": confidence, "rationale": f"{name} <says> {verdict}"})
    return rows


def test_disagreements_by_kind_ranked_by_confidence_with_texts(tmp_path):
    data = write_project(tmp_path)
    write_stage(data / "labels" / "judge", judge_rows("judge", JUDGE), LABEL_V1, "label")
    write_stage(data / "labels" / "other", judge_rows("other", [JUDGE[1]] * 4), LABEL_V1, "label")
    labels = sorted((data / "labels").iterdir())
    report = label_qa(labels, data / "rollouts", data / "datasets" / "_rewards", top=2)

    assert report["gates"] == ["math_answer"]
    pairs = {(p["labeler"], p["labeler_b"]): p for p in report["pairs"]}
    assert pairs[("judge", "math_answer")] | {} == {
        "labeler": "judge", "labeler_b": "math_answer", "kind": "gate_vs_judge", "n": 3, "disagree": 2,
        "share": 0.666667,
    }  # fmt: skip
    assert pairs[("judge", "other")]["kind"] == "judge_vs_judge" and pairs[("judge", "other")]["disagree"] == 1
    # each disputed rollout once, the most confident first (its most confident disagreeing pair, by the less
    # confident side): rollout 1, where both judges (0.9) overrule the gate, is one entry, not one per pair
    top = report["disagreements"]
    assert [(d["rollout_id"], d["strength"]) for d in top] == [(_id("rollout", 1), 0.9), (_id("rollout", 2), 0.6)]
    first = top[0]
    assert [(s["labeler"], s["verdict"], s["confidence"]) for s in first["labels"]] == [
        ("judge", "correct", 0.9), ("math_answer", "incorrect", 1.0), ("other", "correct", 0.9)
    ]  # fmt: skip
    assert first["labels"][0]["rationale"] == "judge <says> correct"
    assert first["completion"] == "answer 1" and first["reference"] == "5" and first["prompt"]
    # the judge against the gate: rollouts 0-2 (3 has no gate verdict)
    assert report["confusion"]["judge"] == {
        "correct_correct": 1, "correct_incorrect": 1, "incorrect_correct": 1, "incorrect_incorrect": 0, "n": 3,
        "accuracy": 0.333333, "kappa": -0.5,
    }  # fmt: skip
    assert "math_answer" not in report["confusion"]  # a gate is not judged against itself
    assert summary(report)["pairs"]["judge|math_answer"] == {"n": 3, "disagree": 2}

    page = render_html(report)
    assert "judge &lt;says&gt;" in page and "<says>" not in page  # every text escaped
    assert page.count("<h3>") == 2
