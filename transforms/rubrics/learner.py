"""RuleLearner: the AutoRule calls (autorule.py) for a rubrics stage in mode autorule, over all its chosen prompts.

Out: one RUBRIC_V1 row (prompt_id ALL_PROMPTS) whose criteria are the kept rules, and a reject per chosen prompt that
gave no pair (no_contrast). A rationale whose call failed or that gave no readable rule supports nothing (counted in
the row's evidence); rule checks are greedy yes/no calls. Every call goes through the writer's cached client.
"""

from rewardmill.transforms.judges.client import JudgeRequest, Sampling
from rewardmill.transforms.judges.reference import yes_no_vote
from rewardmill.transforms.labelers.judge_base import question_of
from rewardmill.transforms.rubrics.autorule import (
    ALL_PROMPTS,
    agreement,
    best_supported,
    is_heldout,
    merge_rules,
)
from rewardmill.transforms.rubrics.criteria import Criterion, parse_criteria
from rewardmill.transforms.rubrics.prompts import rationale_messages, rules_messages
from rewardmill.transforms.rubrics.writer import REJECT, RUBRIC, RubricWriter, check, contrast

DIGITS = 6


def learn(writer: RubricWriter, items: list[tuple[dict, list[dict]]]) -> list[tuple[str, dict]]:
    """Every chosen prompt's (prompt, rollouts) -> the rule set's row and the prompts' rejects."""
    cfg, auto = writer.params, writer.params.autorule
    out: list[tuple[str, dict]] = []
    pairs = []  # (prompt, preferred, rejected)
    for (prompt, _), scored in zip(items, writer.rank(items), strict=True):
        pair = contrast(scored, cfg.min_margin)
        if pair is None:
            out.append((REJECT, writer.no_contrast(prompt, scored)))
        else:
            pairs.append((prompt, *pair))
    extract = [p for p in pairs if not is_heldout(p[0]["prompt_id"], auto.heldout)]
    heldout = [p for p in pairs if is_heldout(p[0]["prompt_id"], auto.heldout)]
    rationale_sampling = Sampling(0.0, max_tokens=auto.rationale_tokens)
    asked = [JudgeRequest(rationale_messages(question_of(p["messages"]), a.answer, b.answer), rationale_sampling)
             for p, a, b in extract]  # fmt: skip
    rationales = writer.client.complete(asked) if asked else []
    readable = [r.text for r in rationales if not r.error and r.text.strip()]
    rules_sampling = Sampling(0.0, max_tokens=cfg.max_tokens)
    replies = writer.client.complete(
        [JudgeRequest(rules_messages(t, cfg.n_criteria), rules_sampling) for t in readable]
    )
    shown = "\n".join(m["content"] for m in rules_messages("", cfg.n_criteria))  # the rationale may be restated
    found = [parse_criteria(r.text, cfg.max_criteria, shown) if not r.error else [] for r in replies]
    candidates = best_supported(merge_rules(found, auto.merge_jaccard), auto.max_candidates)
    checks = [
        check(question_of(p["messages"]), answer.answer, Criterion(c.rule))
        for c in candidates
        for p, a, b in heldout
        for answer in (a, b)
    ]
    votes = iter(yes_no_vote(r) for r in (writer.client.complete(checks) if checks else []))
    measured, kept = [], []
    for candidate in candidates:
        pair_votes = [(next(votes), next(votes)) for _ in heldout]
        result = agreement(pair_votes)
        keep = result.decided >= auto.min_decided and result.rate is not None and result.rate >= auto.min_agreement
        measured.append(
            {"rule": candidate.rule, "support": candidate.support, "agree": result.agree, "disagree": result.disagree,
             "undecided": result.undecided, "agreement": None if result.rate is None else round(result.rate, DIGITS),
             "kept": keep}
        )  # fmt: skip
        if keep:
            kept.append(Criterion(candidate.rule, 1.0, "principle"))
    evidence = {
        "from": "autorule",
        "prompts": sorted(p["prompt_id"] for p, _, _ in pairs),
        "extraction_pairs": len(extract),
        "heldout_pairs": len(heldout),
        "rationales": len(readable),
        "rationales_failed": len(asked) - len(readable),
        "candidates": measured,
    }
    if pairs:
        anchor = {"prompt_id": ALL_PROMPTS}
        row = writer.rubric_row(anchor, kept, {**evidence, "texts": [*readable, *(r.text for r in replies)]})
        out.insert(0, (RUBRIC, row))
    return out
