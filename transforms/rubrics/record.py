"""A learned rule set's kept rules with their measured agreement, read from its row's evidence: what the label stage's
manifest and the card show. Small on purpose: the label stage imports it, and nothing of the writer."""

import json


def rules_record(row: dict) -> list[dict]:
    """The kept rules of a rule set's row (RUBRIC_V1, mode autorule), each {rule, support, agree, disagree,
    agreement}."""
    evidence = json.loads(row["evidence"] or "{}")
    return [
        {k: c[k] for k in ("rule", "support", "agree", "disagree", "agreement")}
        for c in evidence.get("candidates", [])
        if c.get("kept")
    ]
