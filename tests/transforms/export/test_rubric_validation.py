"""The card's rubric validation section, from the assemble manifests' record."""

from rewardmill.transforms.export.rubric_validation import rubric_validation_section

RECORD = {
    "labels_dropped": 8,
    "labelers": {
        "rubric": {
            "rubric_set": "reference", "rubrics_validated": 3, "pairs": 7, "accuracy": 0.428571, "agreement": 0.4,
            "mean_accuracy": 0.5, "flagged": 2, "dropped": 2, "min_accuracy": 0.5,
        },
        "unmeasured": {
            "rubric_set": "contrast", "rubrics_validated": 0, "pairs": 0, "accuracy": None, "agreement": None,
            "mean_accuracy": None, "flagged": 0, "dropped": 0, "min_accuracy": 0.5,
        },
    },
}  # fmt: skip


def test_the_section_says_how_poor_the_rubrics_are():
    text = rubric_validation_section({"pairs": {"rubric_validation": RECORD}, "rl": {}})
    assert text.startswith("## Rubric validation") and "(8 labels in all)" in text
    assert "| `rubric` | `reference` | 3 | 7 | 0.429 | 0.400 | 0.500 | 2 (below 0.5) | 2 |" in text
    assert "`rubric`: its rubrics reproduce the trusted preferences no better than chance (0.429)" in text
    assert "`unmeasured`: no trusted pair to measure its rubrics on; their scores are unvalidated." in text
    good = {"labelers": {"rubric": {**RECORD["labelers"]["rubric"], "accuracy": 0.8}}}
    assert "reproduce 80.0% of the trusted preferences" in rubric_validation_section(
        {"pairs": {"rubric_validation": good}}
    )
    assert rubric_validation_section({"pairs": {}}) == ""
