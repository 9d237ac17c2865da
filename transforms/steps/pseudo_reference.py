"""Pseudo-references for step labels: each prompt's majority final answer among its rollouts (TTRL), voted by the
self_consistency labeler, becomes the reference its selected rollouts' steps are checked against.

Input: rollout rows; every eligible rollout of a prompt votes, not only the selected ones (a sample of one rollout
per prompt would always agree with itself). Output: the selected rows, those that need a vote with `reference` =
the majority answer, `reference_source` = "pseudo" and `vote_share`; where the vote finds no majority (too few
answers, a tie, a share below `min_vote_share`), with `pseudo_reference_missing` = why, which the step labeler
rejects as `no_pseudo_reference`. Under `given_or_pseudo` a prompt with a reference keeps it and does not vote.
"""

import json

import apache_beam as beam

from rewardmill.transforms.labelers.self_consistency import SelfConsistencyConfig, SelfConsistencyVerifier
from rewardmill.transforms.steps.labeler import has_reference


def needs_vote(row: dict, mode: str) -> bool:
    return mode == "pseudo" or (mode == "given_or_pseudo" and not has_reference(row))


def outcome(labels) -> dict:
    """A prompt's vote from its self_consistency labels: {"answer", "vote_share"} or {"missing": why} (pure)."""
    first = labels[0]
    if first.score is None:
        return {"missing": f"{first.verdict}: {first.rationale}"}
    raw = json.loads(first.raw)
    return {"answer": raw["pseudo_reference"], "vote_share": raw["vote_share"]}


def vote(verifier: SelfConsistencyVerifier, voters: list[tuple[str, str]]) -> dict:
    """A prompt's outcome from its (rollout_id, completion) voters, in rollout-id order, so the first-seen form of
    the majority answer (its text) does not depend on the order they arrived in."""
    return outcome(verifier.label_group([(completion, None) for _, completion in sorted(voters)]))


def attach_all(rows: list[dict], selected: list[dict], mode: str, config: SelfConsistencyConfig, eligible) -> list:
    """The driver-side twin of AttachPseudoReferences (the plan uses it): `selected` with their prompts' votes,
    cast by every row of `rows` that `eligible` keeps and that needs a vote."""
    voters: dict[str, list[tuple[str, str]]] = {}
    for row in rows:
        if eligible(row) and needs_vote(row, mode):
            voters.setdefault(row["prompt_id"], []).append((row["rollout_id"], row["completion"] or ""))
    verifier = SelfConsistencyVerifier(config)
    try:
        votes = {prompt_id: vote(verifier, pairs) for prompt_id, pairs in voters.items()}
    finally:
        verifier.teardown()
    return [attach(row, votes, mode) for row in selected]


def attach(row: dict, votes: dict[str, dict], mode: str) -> dict:
    """The row with its prompt's pseudo-reference, or with why there is none (pure; never mutates `row`)."""
    if not needs_vote(row, mode):
        return row
    vote = votes[row["prompt_id"]]  # the row itself voted, so its prompt has an outcome
    if "missing" in vote:
        return {**row, "reference": None, "pseudo_reference_missing": vote["missing"]}
    return {**row, "reference": vote["answer"], "reference_source": "pseudo", "vote_share": vote["vote_share"]}


class VotePrompt(beam.DoFn):
    """(prompt_id, [(rollout_id, completion)]) -> (prompt_id, outcome), voted by `vote` (in rollout-id order)."""

    def __init__(self, config: SelfConsistencyConfig):
        self.config = config
        self.verifier = None

    def setup(self):
        self.verifier = SelfConsistencyVerifier(self.config)

    def process(self, element):
        prompt_id, voters = element  # (rollout_id, completion) pairs
        yield prompt_id, vote(self.verifier, list(voters))

    def teardown(self):
        if self.verifier is not None:
            self.verifier.teardown()


class AttachPseudoReferences(beam.PTransform):
    """(all rollouts, selected rollouts) -> the selected rollouts with their pseudo-references (see the module
    docstring). `eligible(row)` says which rollouts vote: the steps stage's tasks and policy."""

    def __init__(self, mode: str, config: SelfConsistencyConfig, eligible):
        super().__init__()
        self.mode, self.config, self.eligible = mode, config, eligible

    def expand(self, pcolls):
        rollouts, selected = pcolls
        mode = self.mode
        votes = (
            rollouts
            | "Voters" >> beam.Filter(lambda row, ok: ok(row) and needs_vote(row, mode), self.eligible)
            | "Key by prompt" >> beam.Map(lambda row: (row["prompt_id"], (row["rollout_id"], row["completion"] or "")))
            | "Group by prompt" >> beam.GroupByKey()
            | "Vote" >> beam.ParDo(VotePrompt(self.config))
        )
        return selected | "Attach" >> beam.Map(attach, beam.pvalue.AsDict(votes), mode)
