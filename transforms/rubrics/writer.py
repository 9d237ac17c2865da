"""RubricWriter: a rubric for each prompt of a chunk, or a reject with its reason.

In: (prompt row, the prompt's rollout rows) pairs. Out: RUBRIC_V1 rows and reject rows. Every model call is greedy and
goes through the call cache keyed by the writer's fingerprint, and the rank labeler's labels through the label cache,
so a killed stage resumes where it stopped and writes the same bytes.

Reasons a prompt gets no rubric (never an empty one): `no_reference` (reference mode, the prompt has none),
`no_contrast` (contrastive mode: fewer than two scored rollouts, or no two apart by more than `min_margin`),
`writer_call_failed` (the call failed after its retries; retried by the next run), `too_few_criteria` (the reply has
fewer than `min_criteria` readable criteria; its text is in the reject's detail).
"""

import json
from dataclasses import dataclass, replace
from typing import Any

from rewardmill.transforms.judges.backends import make_client
from rewardmill.transforms.judges.client import JudgeRequest, JudgeResponse, Sampling
from rewardmill.transforms.judges.reference import TOP_LOGPROBS, yes_no_vote
from rewardmill.transforms.judges.rubric import Principle, build_principle
from rewardmill.transforms.labelers.cache import call_cache_dir
from rewardmill.transforms.labelers.judge_base import judged_answer, question_of
from rewardmill.transforms.rewards.functions import LabelerReward, reward_of
from rewardmill.transforms.rubrics.criteria import Criterion, parse_criteria, render, rubric_id
from rewardmill.transforms.rubrics.params import RubricsParams
from rewardmill.transforms.rubrics.prompts import contrastive_messages, reference_messages, refine_messages
from rewardmill.transforms.stage.outputs import reject

RUBRIC = "rubric"
REJECT = "reject"
CHECK_MAX_TOKENS = 4  # one yes/no word per criterion check
DETAIL_CHARS = 300


@dataclass(frozen=True)
class Scored:
    """A rollout as the rank labeler scored it."""

    rollout_id: str
    score: float
    answer: str


class RubricWriter:
    """The stage's core for `rubrics.<name>`. Picklable: the client and the ranker are built on first use."""

    def __init__(self, name: str, params: RubricsParams, cache_dir: str | None = None):
        self.name = name
        self.params = params
        self.cache_dir = cache_dir  # the label stages' cache folder: labels here, calls in call_cache_dir beside it
        self._client = None
        self._ranker = None

    def __getstate__(self):
        return {**self.__dict__, "_client": None, "_ranker": None}

    @property
    def stage(self) -> str:
        return f"rubrics@{self.name}"

    @property
    def client(self):
        if self._client is None:
            backend = self.params.backend
            if backend.cache_dir is None and self.cache_dir is not None:
                backend = replace(backend, cache_dir=call_cache_dir(self.cache_dir))
            self._client = make_client(backend)
        return self._client

    @property
    def ranker(self) -> LabelerReward:
        if self._ranker is None:
            self._ranker = LabelerReward(f"rubrics.{self.name}.rank_by", self.params.ranker(), self.cache_dir)
        return self._ranker

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        if self._ranker is not None:
            self._ranker.close()
        self._client = self._ranker = None

    def flush(self) -> None:
        """The cached calls so far, written: a stage killed after a chunk resumes after it."""
        if self._client is not None:
            self._client.flush()

    def usage(self) -> dict[str, int]:
        return self._client.usage() if self._client is not None else {}

    # -- the chunk ----------------------------------------------------------------------------------------------------

    def write(self, items: list[tuple[dict, list[dict]]]) -> list[tuple[str, dict]]:
        """(prompt, rollouts) pairs -> (RUBRIC | REJECT, row) pairs, one per prompt, in the items' order."""
        ranked = self.rank(items) if self.params.needs_ranking else [[] for _ in items]
        plans = [self.plan(prompt, scored) for (prompt, _), scored in zip(items, ranked, strict=True)]
        asked = [i for i, plan in enumerate(plans) if isinstance(plan, JudgeRequest)]
        replies = dict(zip(asked, self.client.complete([plans[i] for i in asked]), strict=True)) if asked else {}
        out: list[tuple[str, dict] | None] = [None] * len(items)
        drafts: dict[int, tuple[list[Criterion], dict]] = {}
        for i, (prompt, _) in enumerate(items):
            if i not in replies:
                out[i] = (REJECT, plans[i])
                continue
            result = self.read_reply(prompt, plans[i], replies[i])
            if result[0] == REJECT:
                out[i] = result
            else:
                drafts[i] = (result[1], {**self.evidence(ranked[i]), "texts": [replies[i].text]})
        if self.params.refine.rounds and drafts:
            drafts = self.refine({i: (items[i][0], ranked[i], *drafts[i]) for i in drafts})
        for i, (criteria, evidence) in drafts.items():
            out[i] = (RUBRIC, self.rubric_row(items[i][0], criteria, evidence))
        return [item for item in out if item is not None]

    def rank(self, items: list[tuple[dict, list[dict]]]) -> list[list[Scored]]:
        """Each prompt's rollouts with a score from the rank labeler, best first (ties: lower rollout id first)."""
        rows = [row for _, rollouts in items for row in rollouts]
        if not rows:
            return [[] for _ in items]
        columns = {key: [row.get(key) for row in rows] for key in rows[0]}
        labels = self.ranker.labels(columns["messages"], columns["completion"], None, columns)
        scores = {row["rollout_id"]: reward_of(label) for row, label in zip(rows, labels, strict=True)}
        return [
            sorted(
                (
                    Scored(r["rollout_id"], scores[r["rollout_id"]], judged_answer(r["completion"]))
                    for r in rollouts
                    if scores.get(r["rollout_id"]) is not None
                ),
                key=lambda s: (-s.score, s.rollout_id),
            )
            for _, rollouts in items
        ]

    def plan(self, prompt: dict, scored: list[Scored]) -> JudgeRequest | dict:
        """The writer's request for one prompt, or its reject row."""
        cfg = self.params
        question = question_of(prompt["messages"])
        sampling = Sampling(temperature=0.0, max_tokens=cfg.max_tokens)
        if cfg.mode == "reference":
            reference = prompt.get("reference")
            if not isinstance(reference, str) or not reference.strip():
                return reject(
                    self.stage, prompt["prompt_id"], "no_reference", "reference mode needs the prompt's answer"
                )
            return JudgeRequest(reference_messages(question, reference, cfg.n_criteria), sampling)
        pair = contrast(scored, cfg.min_margin)
        if pair is None:
            return self.no_contrast(prompt, scored)
        preferred, rejected = pair
        return JudgeRequest(
            contrastive_messages(question, preferred.answer, rejected.answer, cfg.n_criteria), sampling
        )

    def no_contrast(self, prompt: dict, scored: list[Scored]) -> dict:
        """The reject of a prompt whose scored rollouts give no (preferred, rejected) pair."""
        detail = f"{len(scored)} scored rollouts, none apart by more than min_margin {self.params.min_margin:g}"
        return reject(self.stage, prompt["prompt_id"], "no_contrast", detail)

    def read_reply(self, prompt: dict, request: JudgeRequest, reply: JudgeResponse) -> tuple[str, Any]:
        shown = "\n".join(m["content"] for m in request.messages)
        cfg = self.params
        if reply.error:
            return REJECT, reject(self.stage, prompt["prompt_id"], "writer_call_failed", reply.error[:DETAIL_CHARS])
        criteria = parse_criteria(reply.text, cfg.max_criteria, shown)
        if len(criteria) < cfg.min_criteria:
            detail = (
                f"{len(criteria)} readable criteria (min_criteria {cfg.min_criteria}): {reply.text[:DETAIL_CHARS]!r}"
            )
            return REJECT, reject(self.stage, prompt["prompt_id"], "too_few_criteria", detail)
        return RUBRIC, criteria

    def evidence(self, scored: list[Scored]) -> dict:
        if self.params.mode == "reference":
            return {"from": "reference"}
        preferred, rejected = contrast(scored, self.params.min_margin)
        return {"from": "contrast", "preferred": _brief(preferred), "rejected": _brief(rejected)}

    # -- the refine round ---------------------------------------------------------------------------------------------

    def refine(self, drafts: dict[int, tuple]) -> dict[int, tuple[list[Criterion], dict]]:
        """One round over {i: (prompt, scored, criteria, evidence)}: each criterion checked yes/no on the best rollout
        and the runner-up (the best one scored lower); the criteria giving both the same answer are rewritten. A
        prompt without a runner-up, without such criteria, or whose rewrite is unreadable keeps its rubric."""
        checks: dict[int, tuple[Scored, Scored, list[JudgeRequest]]] = {}
        for i, (prompt, scored, criteria, _) in drafts.items():
            pair = runner_up(scored)
            if pair is not None:
                question = question_of(prompt["messages"])
                checks[i] = (*pair, [check(question, s.answer, c) for s in pair for c in criteria])
        flat = [r for _, _, requests in checks.values() for r in requests]
        replies = iter(self.client.complete(flat) if flat else [])
        rewrites: dict[int, tuple[JudgeRequest, list[int], dict]] = {}
        out = {i: (criteria, evidence) for i, (_, _, criteria, evidence) in drafts.items()}
        for i, (best, second, requests) in checks.items():
            prompt, _, criteria, evidence = drafts[i]
            votes = [yes_no_vote(next(replies)) for _ in requests]
            n = len(criteria)
            weak = [k + 1 for k in range(n) if votes[k] is not None and votes[k] == votes[n + k]]
            record = {"best": _brief(best), "runner_up": _brief(second), "votes": [votes[:n], votes[n:]], "weak": weak}
            out[i] = (criteria, {**evidence, "refine": record})
            if weak:
                messages = refine_messages(question_of(prompt["messages"]), criteria, best.answer, second.answer, weak)
                rewrites[i] = (JudgeRequest(messages, Sampling(0.0, max_tokens=self.params.max_tokens)), weak, record)
        answers = self.client.complete([r for r, _, _ in rewrites.values()]) if rewrites else []
        for (i, (request, _weak, record)), reply in zip(rewrites.items(), answers, strict=True):
            criteria, evidence = out[i]
            # the rubric it was shown may come back as it was (the criteria it keeps): only the rest is an echo
            shown = "\n".join(m["content"] for m in request.messages).replace(render(criteria), "")
            new = parse_criteria(reply.text, self.params.max_criteria, shown) if not reply.error else []
            texts = [*evidence["texts"], reply.text]
            if len(new) < self.params.min_criteria:
                record = {**record, "kept": "the rewrite had too few readable criteria"}
                out[i] = (criteria, {**evidence, "texts": texts, "refine": record})
                continue
            old = {c.criterion for c in criteria}
            out[i] = (
                new,
                {
                    **evidence,
                    "texts": texts,
                    "refine": {**record, "rewritten": sum(c.criterion not in old for c in new)},
                },
            )
        return out

    def rubric_row(self, prompt: dict, criteria: list[Criterion], evidence: dict) -> dict:
        texts = evidence.pop("texts", [])
        refined = int(evidence.get("refine", {}).get("rewritten", 0))
        return {
            "prompt_id": prompt["prompt_id"],
            "rubric_set": self.name,
            "mode": self.params.mode,
            "criteria": [c.as_row() for c in criteria],
            "rubric_id": rubric_id(criteria),
            "refined": refined,
            "judge": self.client.model_id,
            "evidence": json.dumps(evidence, sort_keys=True, ensure_ascii=False),
            "raw": json.dumps(texts, ensure_ascii=False),
        }


def contrast(scored: list[Scored], min_margin: float) -> tuple[Scored, Scored] | None:
    """(preferred, rejected): the best and the worst scored rollout (ties: lowest rollout id), when the best beats the
    worst by more than `min_margin`; else None."""
    if len(scored) < 2:
        return None
    best = scored[0]
    worst = min(scored, key=lambda s: (s.score, s.rollout_id))
    return (best, worst) if best.score - worst.score > min_margin else None


def runner_up(scored: list[Scored]) -> tuple[Scored, Scored] | None:
    """(best, runner-up): the best rollout and the best one scored strictly lower; None when all tie."""
    if not scored:
        return None
    lower = [s for s in scored if s.score < scored[0].score]
    return (scored[0], lower[0]) if lower else None


def check(question: str, answer: str, criterion: Criterion) -> JudgeRequest:
    """One greedy yes/no request: does `answer` satisfy `criterion` (P(yes) read from logprobs where given)."""
    messages = build_principle(question, answer, Principle("criterion", criterion.criterion))
    return JudgeRequest(messages, Sampling(0.0, max_tokens=CHECK_MAX_TOKENS, top_logprobs=TOP_LOGPROBS))


def _brief(scored: Scored) -> dict:
    return {"rollout_id": scored.rollout_id, "score": scored.score}
