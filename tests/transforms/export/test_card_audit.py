"""The card's table of each labeler's accuracy on the gold packs (validate's metrics `labeler_audit`)."""

from rewardmill.transforms.evaluation.audit import wilson_interval
from rewardmill.transforms.export.card import build_card, labeler_accuracy_section
from tests.transforms.export.test_card import PROVENANCE, section

AUDIT = {
    "packs": "transforms/evaluation/packs",
    "pack_rows": 14,
    "confidence": 0.95,
    "labelers": {
        "math_answer": {
            "labeler": "math_answer",
            "rows_from": "labeler",
            "packs": ["math"],
            "rows": 10,
            "precision": wilson_interval(2, 4),
            "recall": wilson_interval(20, 20),
            "abstain_rate": wilson_interval(0, 10),
            "hack_pass_rate": wilson_interval(0, 0),  # no hack rows: "-"
        },
        "appeal": {
            "labeler": "reference_judge",
            "skipped": "model-based: not run (--skip-judges, or validate.audit_judges: false)",
        },
    },
}


def test_the_card_shows_each_labelers_measured_accuracy_as_a_table():
    text = build_card([], pretty_name="t", license="apache-2.0", provenance=PROVENANCE, labeler_audit=AUDIT)
    body = section(text, "Label accuracy on the gold packs")
    lines = [line for line in body.splitlines() if line.startswith("|")]
    assert lines[0] == "| labeler | rows | precision | recall | abstain rate | hack pass rate | measured on |"
    assert lines[2] == (
        "| `appeal` | 0 | - | - | - | - | not measured: model-based: not run (--skip-judges, or "
        "validate.audit_judges: false) |"
    )
    assert lines[3] == (
        "| `math_answer` | 10 | 0.50 (0.15..0.85, n=4) | 1.00 (0.84..1.00, n=20) | 0.00 (0.00..0.28, n=10) | - "
        "| math_answer rows in math |"
    )
    assert "95% Wilson interval" in body


def test_no_audit_no_section():
    assert labeler_accuracy_section(None) == "" and labeler_accuracy_section({"labelers": {}}) == ""
    text = build_card([], pretty_name="t", license="apache-2.0", provenance=PROVENANCE)
    assert "Label accuracy" not in text
