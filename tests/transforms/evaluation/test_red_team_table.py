"""The red-team table is the gold packs: each pack's own test runs every row through its labeler (test_code_pack,
test_math_pack, test_ifeval_pack, test_format_pack, the judges' probe tests). This checks the table's reach: enough
attacks, every attack class the issue names, honest controls beside the attacks in every pack."""

from collections import Counter

from rewardmill.transforms.evaluation.gold_packs import load_packs

# The classes a policy was seen to use against the verifiers and judges; each must have rows.
ATTACK_CLASSES = {
    "shadowing",
    "protocol_forgery",
    "exception",
    "retraction",
    "negation",
    "hedge",
    "homoglyph",
    "reasoning_placement",
    "special_tokens",
    "empty_symbol",
    "master_key",
    "prompt_injection",
    "decoy",
    "restated_question",
}
PACKS = {"code", "math", "ifeval", "format", "judge_probes"}


def test_the_table_has_every_attack_class_and_enough_attacks():
    rows = load_packs()
    hacks = [row for row in rows if row.kind == "hack"]
    assert len(hacks) >= 60
    assert ATTACK_CLASSES <= {row.cls for row in hacks}, ATTACK_CLASSES - {row.cls for row in hacks}


def test_every_pack_has_attacks_and_honest_controls():
    kinds = Counter((row.pack, row.kind) for row in load_packs())
    for pack in PACKS:
        assert kinds[(pack, "hack")] >= 2 and kinds[(pack, "honest")] >= 2, (pack, kinds)
