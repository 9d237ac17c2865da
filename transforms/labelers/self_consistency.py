"""SelfConsistencyVerifier: for a prompt without a reference, the majority final answer among its rollouts becomes
a pseudo-reference (TTRL, majority vote), and each rollout is labeled by agreement with it.

Input columns: completion, reference, all rollouts of one prompt at once (`label_group`). Answers are read as
math_answer reads them (math_answer.read_answer: the final committed answer after any reasoning block, the same
extraction modes; a hedge, retraction, negation or range is no vote) and compared with math-verify; two answers are
one vote when math-verify finds them equivalent, so "0.5" and "\\frac{1}{2}" count together. Output per rollout:
score 1.0 (its answer is the pseudo-reference) or 0.0 (another answer, or none), confidence = the majority's vote
share (TTRL: the share predicts how often the pseudo-label is right), raw = JSON {pseudo_reference, vote_share,
votes, answer}. Abstains, with the reason, when the prompt has a reference (`with_reference: skip`: math_answer
verifies those), when fewer than `min_answers` rollouts state an answer, when two answers tie for the majority, or
when the majority's share is below `min_vote_share`.
"""

import json
from dataclasses import dataclass
from typing import Literal

from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.main_thread import HardTimeout, MainThreadRunner
from rewardmill.transforms.labelers.math_answer import check_modes, read_answer
from rewardmill.transforms.labelers.math_final import committed_text


@dataclass(frozen=True)
class SelfConsistencyConfig:
    min_vote_share: float = 0.5  # the majority's share of the prompt's rollouts; below it every rollout abstains
    min_answers: int = 2  # rollouts that must state an answer before a vote means anything
    # skip: a prompt with a reference abstains (math_answer verifies it); vote: vote anyway, and record whether the
    # pseudo-reference matches the reference (raw `reference_agrees`): how you measure the pseudo-labels' accuracy
    with_reference: Literal["skip", "vote"] = "skip"
    extraction: tuple[Literal["math_verify", "boxed", "answer_is", "last_number"], ...] = ("math_verify",)
    timeout_seconds: int = 5  # per parse/verify call
    float_rounding: int = 6

    def __post_init__(self):
        if not 0.0 < self.min_vote_share <= 1.0:
            raise ValueError(f"min_vote_share must be in (0, 1], got {self.min_vote_share}")
        if self.min_answers < 1:
            raise ValueError(f"min_answers must be >= 1, got {self.min_answers}")
        if self.with_reference not in ("skip", "vote"):
            raise ValueError(f"with_reference must be skip or vote, got {self.with_reference!r}")
        object.__setattr__(self, "extraction", check_modes(self.extraction))


def vote(
    completions: list[str],
    reference: str | None,
    extraction: tuple[str, ...],
    timeout_seconds: int,
    float_rounding: int,
) -> dict:
    """Pure core (main thread: math-verify's timeouts use signal.alarm). -> {"answers": [text | None],
    "clusters": [[rollout index, ...], ...] (equivalent answers, first-seen order), "reference_cluster": index of the
    cluster the reference agrees with, or None}."""
    from math_verify import parse, verify

    from rewardmill.transforms.labelers.math_answer import parse_reference

    parsed, texts = [], []
    for completion in completions:
        try:  # only a final committed answer votes: a hedge, retraction, negation or range states none
            reading = read_answer(
                committed_text(completion if isinstance(completion, str) else ""), extraction, timeout_seconds
            )
            answer = None if reading.rejected else reading.answer
        except Exception:  # malformed LaTeX: this rollout states no readable answer
            answer = None
        parsed.append(answer or None)
        texts.append(str(answer[-1]) if answer else None)

    def same(gold, pred) -> bool:
        try:
            return bool(verify(gold, pred, float_rounding=float_rounding, timeout_seconds=timeout_seconds))
        except Exception:
            return False

    clusters: list[list[int]] = []
    for i, answer in enumerate(parsed):
        if answer is None:
            continue
        home = next((c for c in clusters if same(parsed[c[0]], answer)), None)
        if home is None:
            clusters.append([i])
        else:
            home.append(i)
    reference_cluster = None
    if reference:
        try:
            gold = parse_reference(reference, parse, timeout_seconds)
        except Exception:
            gold = None
        if gold:
            reference_cluster = next((k for k, c in enumerate(clusters) if same(gold, parsed[c[0]])), None)
    return {"answers": texts, "clusters": clusters, "reference_cluster": reference_cluster}


def labels_from_vote(result: dict, n: int, cfg: SelfConsistencyConfig, reference: str | None) -> list[Label]:
    """One label per rollout from `vote`'s result (pure)."""
    answers, clusters = result["answers"], result["clusters"]
    answered = sum(a is not None for a in answers)

    def abstain(why: str) -> list[Label]:
        return [Label(None, 0.0, "abstain", why, json.dumps({"answers": answers}))] * n

    if answered < cfg.min_answers:
        return abstain(
            f"pseudo-reference: {answered} of {n} rollouts state an answer, min_answers is {cfg.min_answers}"
        )
    sizes = sorted((len(c) for c in clusters), reverse=True)
    votes = {answers[c[0]]: len(c) for c in clusters}
    if len(sizes) > 1 and sizes[0] == sizes[1]:
        tied = [answers[c[0]] for c in clusters if len(c) == sizes[0]]
        return abstain(f"pseudo-reference: no majority, {len(tied)} answers tie with {sizes[0]} votes each: {tied}")
    majority = max(clusters, key=len)
    share = len(majority) / n
    pseudo = answers[majority[0]]
    if share < cfg.min_vote_share:
        return abstain(f"pseudo-reference: {pseudo} has vote share {share:.2f}, below min_vote_share")
    base = {"pseudo_reference": pseudo, "vote_share": share, "votes": votes}
    if reference:
        base["reference_agrees"] = (
            result["reference_cluster"] is not None and clusters[result["reference_cluster"]] is majority
        )
    labels = []
    members = set(majority)
    for i, answer in enumerate(answers):
        raw = json.dumps({**base, "answer": answer}, ensure_ascii=False)
        if i in members:
            labels.append(Label(1.0, share, "correct", f"answer {answer} is the majority ({share:.2f})", raw))
        elif answer is None:
            labels.append(Label(0.0, share, "incorrect", f"no final answer; the majority says {pseudo}", raw))
        else:
            labels.append(Label(0.0, share, "incorrect", f"answer {answer} != majority {pseudo} ({share:.2f})", raw))
    return labels


class SelfConsistencyVerifier:
    """Agreement with the majority answer of the prompt's own rollouts (a pseudo-reference), for math prompts
    without a reference. Input columns: completion, reference. See the module docstring."""

    name = "self_consistency"
    # 2: only a final committed answer (math_answer.read_answer: after the reasoning block, no hedge, retraction,
    # negation or range) votes
    # 3: math_answer 5's reading (later results supersede, attributed/tentative answers, Markdown, undone functions)
    version = "4"
    reads = ("completion", "reference")
    tasks = ("math",)
    Config = SelfConsistencyConfig

    def __init__(self, config: SelfConsistencyConfig | None = None):
        self.config = config or SelfConsistencyConfig()
        self._runner = MainThreadRunner(1)

    def label(self, completion: str, reference: str | None) -> Label:
        return self.label_group([(completion, reference)])[0]

    def label_group(self, rows: list[tuple]) -> list[Label]:
        cfg = self.config
        reference = next((r for _, r in rows if r), None)
        if reference and cfg.with_reference == "skip":
            return [Label(None, 0.0, "abstain", "the prompt has a reference (math_answer verifies it)")] * len(rows)
        completions = [c for c, _ in rows]
        try:
            result = self._runner.call(
                vote,
                (completions, reference, cfg.extraction, cfg.timeout_seconds, cfg.float_rounding),
                hard_timeout=cfg.timeout_seconds * (2 + len(rows)) ** 2 + 10,
            )
        except HardTimeout as exc:
            return [Label(None, 0.0, "timeout", f"pseudo-reference vote: {exc}")] * len(rows)
        return labels_from_vote(result, len(rows), cfg, reference)

    @classmethod
    def summarize(cls, labels: list[dict]) -> dict:
        """How often a decided pseudo-reference matched the reference, where prompts had one (`with_reference:
        vote`), and the mean vote share: TTRL's check that vote share predicts label accuracy."""
        raws = [json.loads(r["raw"]) for r in labels if r.get("raw") and r["score"] is not None]
        checked = [r["reference_agrees"] for r in raws if "reference_agrees" in r]
        shares = [r["vote_share"] for r in raws]
        return {
            "decided": len(raws),
            "mean_vote_share": round(sum(shares) / len(shares), 6) if shares else None,
            "pseudo_reference_accuracy": round(sum(checked) / len(checked), 6) if checked else None,
        }

    def teardown(self) -> None:
        self._runner.close()
