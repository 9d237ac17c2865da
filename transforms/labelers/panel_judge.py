"""PanelJudge: several judge personas vote on each completion, and the label is kept only when the panel agrees.

Input columns: messages (the prompt), completion, reference (binary panels compare against it when present).
Output: score in [0, 1] (the agreed Likert score rescaled, or 1.0 / 0.0 for an agreed yes / no; None = the panel
split or too few votes parsed), confidence (the share of valid votes that agree), verdict, rationale, raw (every
panelist's reply and vote, per round).

Rejection sampling over a panel of judges: a label that only one of three judges would give is not a label, so a
split panel abstains and the item is dropped or sent back instead of being labeled by a coin flip. Panelists differ
by persona (and may differ by model: each can name its own backend). With `reflection`, a split first round gets a
second one where each panelist reads the others' replies before it votes again; the decision uses that round.
"""

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from rewardmill.transforms.judges.agreement import agreement_metrics
from rewardmill.transforms.judges.client import BackendConfig, JudgeRequest, JudgeResponse, Sampling
from rewardmill.transforms.judges.likert import build_pointwise, check_scale, normalize_score, parse_likert
from rewardmill.transforms.judges.panel import (
    DEFAULT_PERSONAS,
    KINDS,
    PanelDecision,
    Persona,
    aggregate_votes,
    apply_persona,
    build_reflection,
)
from rewardmill.transforms.judges.reference import TOP_LOGPROBS, build_correctness, build_equivalence, yes_no_vote
from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.judge_base import (
    JudgeLabeler,
    call_failed,
    first_error,
    judged_answer,
    no_answer_label,
    question_of,
)

DIGITS = 6
_DEFAULT_PROMPTS = {p.name: p.system_prompt for p in DEFAULT_PERSONAS}
# A round-2 slot for a panelist whose round-1 call failed: it has no reply of its own to reflect on.
NO_REFLECTION = JudgeResponse((), error="no round-1 reply to reflect on")


@dataclass(frozen=True)
class PanelistSpec:
    name: str  # shown to the other panelists during reflection and kept in raw
    persona: str = ""  # system prompt put before the task; "" = the DEFAULT_PERSONAS entry of the same name
    backend: BackendConfig | None = None  # None = the panel's backend; set it to mix models or endpoints

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"panelist name must be a non-empty string, got {self.name!r}")
        if not self.persona and self.name not in _DEFAULT_PROMPTS:
            known = sorted(_DEFAULT_PROMPTS)
            raise ValueError(f"panelist {self.name!r} needs a persona (no default persona of that name; {known})")

    def as_persona(self) -> Persona:
        return Persona(self.name, self.persona or _DEFAULT_PROMPTS[self.name])


@dataclass(frozen=True)
class PanelJudgeConfig:
    backend: BackendConfig = field(default_factory=BackendConfig)  # the panel's model, unless a panelist sets its own
    panelists: tuple[PanelistSpec, ...] = tuple(PanelistSpec(p.name) for p in DEFAULT_PERSONAS)  # >= 2, distinct
    kind: Literal["likert", "binary"] = "likert"  # likert: "Score: n" votes; binary: yes/no "is it correct" votes
    criteria: str = "correctness of the final answer"  # likert: what the panel rates
    scale: tuple[int, int] = (1, 5)  # likert
    threshold: float = 2 / 3  # share of the valid votes that must equal the majority / mode to keep the label
    min_valid: int = 2  # fewer readable votes than this: abstain
    reflection: bool = False  # a split first round gets a second, each panelist reading the others' replies
    max_tokens: int = 32  # per reply: a vote and a short reason
    # binary: "logprobs" = vote yes when P(yes) >= 0.5 at the answer (every reply with logprobs votes, as in the
    # reference judge; a reply without them falls back to its text); "text" = only what the reply says.
    votes_from: Literal["logprobs", "text"] = "logprobs"
    seed: int = 0
    pass_threshold: float = 0.5  # rescaled score at or above which the verdict is `correct`
    aspect: str = "panel"

    def __post_init__(self):
        check_scale(self.scale)
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        names = [p.name for p in self.panelists]
        if len(names) < 2 or len(set(names)) != len(names):
            raise ValueError(f"panelists must be at least 2 with distinct names, got {names}")
        if not 0 < self.threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {self.threshold!r}")
        if not 1 <= self.min_valid <= len(names):  # more than the panel can give would abstain on every row
            raise ValueError(f"min_valid must be between 1 and the {len(names)} panelists, got {self.min_valid!r}")
        if self.votes_from not in ("logprobs", "text"):
            raise ValueError(f"votes_from must be 'logprobs' or 'text', got {self.votes_from!r}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens!r}")
        if not 0 <= self.pass_threshold <= 1:
            raise ValueError(f"pass_threshold must be in [0, 1], got {self.pass_threshold!r}")


class PanelJudge(JudgeLabeler):
    name = "panel_judge"
    version = "2"  # 2: reads the answer after reasoning; no substance = 0.0 without a call
    reads = ("messages", "completion", "reference")
    Config = PanelJudgeConfig

    def __init__(self, config: PanelJudgeConfig | None = None):
        super().__init__()
        self.config = config or PanelJudgeConfig()

    def prompt(self, messages, completion: str, reference: str | None) -> tuple[dict, ...]:
        """The task every panelist sees: a Likert rating, or yes/no against the reference (or plain correctness)."""
        cfg, question, completion = self.config, question_of(messages), judged_answer(completion)
        if cfg.kind == "likert":
            return build_pointwise(question, completion, cfg.criteria, cfg.scale)
        if isinstance(reference, str) and reference.strip():
            return build_equivalence(question, completion, reference)
        return build_correctness(question, completion)

    def requests(self, messages, completion: str, reference: str | None) -> list[JudgeRequest]:
        """Round 1 for one row: one greedy request per panelist, its persona before the shared task."""
        task, sampling = self.prompt(messages, completion, reference), self._sampling()
        return [JudgeRequest(apply_persona(task, p.as_persona()), sampling) for p in self.config.panelists]

    def reflections(self, first: list[JudgeRequest], replies: list[JudgeResponse]) -> list[JudgeRequest | None]:
        """Round 2 for one row: each panelist that replied reads the others' replies; None where its call failed."""
        names = [p.name for p in self.config.panelists]
        out: list[JudgeRequest | None] = []
        for i, (request, reply) in enumerate(zip(first, replies, strict=True)):
            if reply.error:
                out.append(None)
                continue
            others = [(names[j], r.text) for j, r in enumerate(replies) if j != i and not r.error]
            out.append(JudgeRequest(build_reflection(request.messages, reply.text, others), request.sampling))
        return out

    def label(self, messages, completion: str, reference: str | None = None) -> Label:
        return self.label_many([(messages, completion, reference)])[0]

    def label_many(self, rows: list[tuple]) -> list[Label]:
        """Rows whose answer has no substance get no_answer_label and no call; the others go to the panel."""
        ask = [i for i, row in enumerate(rows) if not self.screens_out(judged_answer(row[1]))]
        labels = dict(zip(ask, self._judge([rows[i] for i in ask]), strict=True)) if ask else {}
        return [labels.get(i) or no_answer_label(self.config.aspect) for i in range(len(rows))]

    def _judge(self, rows: list[tuple]) -> list[Label]:
        first_requests = [self.requests(*row) for row in rows]
        first = self._send(first_requests)
        reflect = [self.config.reflection and self.split(replies) for replies in first]
        second_requests = [
            self.reflections(requests, replies) if again else [None] * len(requests)
            for requests, replies, again in zip(first_requests, first, reflect, strict=True)
        ]
        second = self._send(second_requests) if any(reflect) else [None] * len(rows)
        return [
            self.to_label(replies, again if wanted else None)
            for replies, again, wanted in zip(first, second, reflect, strict=True)
        ]

    def _sampling(self) -> Sampling:
        cfg = self.config
        top = TOP_LOGPROBS if cfg.kind == "binary" and cfg.votes_from == "logprobs" else 0
        return Sampling(temperature=0.0, max_tokens=cfg.max_tokens, seed=cfg.seed, top_logprobs=top)

    def _send(self, rows: list[list[JudgeRequest | None]]) -> list[list[JudgeResponse]]:
        """All requests of a batch, one `complete` call per distinct panelist backend; None slots are not sent."""
        cfg = self.config
        clients = [self.client_for(p.backend or cfg.backend) for p in cfg.panelists]
        groups: dict[int, list[tuple[int, int]]] = {}  # id(client) -> (row, panelist) positions it answers
        for r, requests in enumerate(rows):
            for k, request in enumerate(requests):
                if request is not None:
                    groups.setdefault(id(clients[k]), []).append((r, k))
        out = [[NO_REFLECTION] * len(requests) for requests in rows]
        for positions in groups.values():
            replies = clients[positions[0][1]].complete([rows[r][k] for r, k in positions])
            for (r, k), reply in zip(positions, replies, strict=True):
                out[r][k] = reply
        return out

    def votes(self, replies: list[JudgeResponse]) -> list[int | bool | None]:
        """Pure: each panelist's vote (a Likert score or yes = True / no = False); None = call failed or no parse."""
        cfg = self.config
        if cfg.kind == "likert":
            return [None if r.error else parse_likert(r.text, cfg.scale).score for r in replies]
        return [yes_no_vote(r, use_logprobs=cfg.votes_from == "logprobs") for r in replies]

    def split(self, replies: list[JudgeResponse]) -> bool:
        """Whether the valid votes of a round disagree (what triggers reflection)."""
        return len({v for v in self.votes(replies) if v is not None}) > 1

    def to_label(self, first: list[JudgeResponse], second: list[JudgeResponse] | None = None) -> Label:
        """Pure: the panelists' replies (round 1, and round 2 after reflection; in panelist order) -> Label.
        The decision uses the last round. Every call of a round failed: the row is rejected (retried next run)."""
        cfg = self.config
        rounds = [first] if second is None else [first, second]
        if any(len(replies) != len(cfg.panelists) for replies in rounds):
            raise ValueError(f"expected one reply per panelist ({len(cfg.panelists)}) in each round")
        for replies in rounds:
            if all(r.error for r in replies):
                return call_failed(first_error(replies), cfg.aspect)
        votes = self.votes(rounds[-1])
        decision = aggregate_votes(votes, cfg.threshold, cfg.kind, cfg.min_valid)
        raw = {
            "panelists": [p.name for p in cfg.panelists],
            "kind": cfg.kind,
            "rounds": [
                {"votes": self.votes(r), "texts": [x.text for x in r], "errors": [x.error for x in r]} for r in rounds
            ],
            "accepted": decision.accepted,
            "agreement": round(decision.agreement, DIGITS),
        }
        raw_text = json.dumps(raw, ensure_ascii=False)
        failed = sum(r.error is not None for r in rounds[-1])
        notes = (" after reflection" if second is not None else "") + (f"; {failed} call(s) failed" if failed else "")
        if not decision.accepted:
            return Label(None, 0.0, "abstain", (self._split(decision) + notes)[:500], raw=raw_text, aspect=cfg.aspect)
        score = normalize_score(decision.score, cfg.scale) if cfg.kind == "likert" else decision.score
        verdict = "correct" if score >= cfg.pass_threshold else "incorrect"
        rationale = f"panel agrees: {self._agreeing(decision)} on {self._value(decision.score)}{notes}"
        if reason := self._reason(rounds[-1], votes, decision):
            rationale += f". {reason}"
        return Label(
            score, round(decision.agreement, DIGITS), verdict, rationale[:500], raw=raw_text, aspect=cfg.aspect
        )

    def _value(self, score: float) -> str:
        cfg = self.config
        if cfg.kind == "binary":
            return "yes" if score else "no"
        return f"{int(score)} on a {cfg.scale[0]}-{cfg.scale[1]} scale"

    @staticmethod
    def _agreeing(decision: PanelDecision) -> str:
        top = Counter(v for v in decision.votes if v is not None).most_common(1)[0][1] if decision.n_valid else 0
        return f"{top}/{decision.n_valid} valid votes"

    def _split(self, decision: PanelDecision) -> str:
        cfg = self.config
        if decision.n_valid == 0:
            return "panel abstains: no panelist gave a readable vote"
        if decision.n_valid < cfg.min_valid:
            return f"panel abstains: {decision.n_valid} readable vote(s) < min_valid {cfg.min_valid}"
        if decision.agreement >= cfg.threshold:  # enough agreement but no single top value
            return f"panel split: a tie for the top among {decision.n_valid} valid votes"
        return f"panel split: {self._agreeing(decision)} agree < threshold {cfg.threshold:.3g}"

    def _reason(self, replies: list[JudgeResponse], votes: list, decision: PanelDecision) -> str:
        """The first agreeing panelist's own reason (Likert replies carry one), to show why."""
        if self.config.kind != "likert":
            return ""
        for spec, reply, vote in zip(self.config.panelists, replies, votes, strict=True):
            if vote is not None and vote == decision.score:
                if reason := parse_likert(reply.text, self.config.scale).rationale:
                    return f"{spec.name}: {reason}"
        return ""

    @classmethod
    def summarize(cls, labels: list[dict]) -> dict:
        """Dataset statistics for the stage's metrics: acceptance rate (accepted / labels with a valid vote), mean
        agreement, inter-judge agreement over the final round's votes (panelists as raters, None = no vote) and,
        when reflection ran, on how many rows and how many votes it changed (readable in both rounds, different)."""
        panels = [raw for raw in (_panel_raw(row.get("raw")) for row in labels) if raw is not None]
        finals = [raw["rounds"][-1]["votes"] for raw in panels]
        voted = [raw for raw, votes in zip(panels, finals, strict=True) if any(v is not None for v in votes)]
        accepted = sum(bool(raw["accepted"]) for raw in panels)
        names = list(dict.fromkeys(name for raw in panels for name in raw["panelists"]))
        ratings = [
            [
                dict(zip(raw["panelists"], votes, strict=True)).get(name)
                for raw, votes in zip(panels, finals, strict=True)
            ]
            for name in names
        ]
        level = "nominal" if any(raw.get("kind") == "binary" for raw in panels) else "ordinal"
        summary = {
            "labels": len(labels),
            "accepted": accepted,
            "acceptance_rate": round(accepted / len(voted), DIGITS) if voted else None,
            "mean_agreement": round(sum(r["agreement"] for r in voted) / len(voted), DIGITS) if voted else None,
            "agreement": agreement_metrics(ratings, level, names) if len(names) >= 2 and panels else None,
        }
        reflected = [raw["rounds"] for raw in panels if len(raw["rounds"]) > 1]
        if reflected:
            summary["reflected"] = len(reflected)
            summary["reflection_changed_votes"] = sum(
                a is not None and b is not None and a != b
                for rounds in reflected
                for a, b in zip(rounds[0]["votes"], rounds[-1]["votes"], strict=True)
            )
        return summary


def _panel_raw(raw: str | None) -> dict | None:
    """A label's raw JSON when it is a panel's record (labels from a failed labeler carry none)."""
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        return None
    return data if isinstance(data, dict) and data.get("rounds") and "panelists" in data else None
