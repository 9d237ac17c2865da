"""ReferenceJudge: an LLM decides whether a completion's answer is equivalent to the reference, with P(yes) as score.

Input columns: messages (the prompt), completion, reference (+ the appealed rule verifier's columns).
Output: score = P(yes) / (P(yes) + P(no)) at the answer token when the backend returns logprobs, else 1.0 / 0.0
from the word; confidence = |2 P(yes) - 1| (0.5 flat without logprobs); verdict correct when score >= threshold;
None with verdict abstain when the row has no reference or the reply has no readable yes/no; raw = the judge's text.
The judge reads the answer after any leading reasoning block; an answer with no substance (empty, only symbols such
as the Pitfalls paper's "{", a bare lead-in such as "Solution") scores 0.0, incorrect, without a call.

Appeal mode (`appeal: {labeler, config}`), after "Pitfalls of Rule- and Model-based Verifiers": rule verifiers are
precise but miss equivalent forms (12/36 vs 1/3, units, "x = 3"). The rule verifier runs first; a rollout it
accepts keeps the rule's label and costs no call; every other rollout (incorrect, could not verify, timeout) is
re-checked by the judge, whose verdict decides. Both verdicts are kept in raw, and `summarize` counts how many
rule negatives the judge overturned. Without `appeal` the judge labels every rollout with a reference.
"""

import json
from dataclasses import dataclass, field

from rewardmill.transforms.judges.client import BackendConfig, JudgeRequest, JudgeResponse, Sampling
from rewardmill.transforms.judges.reference import TOP_LOGPROBS, build_equivalence, parse_yes_no, response_p_yes
from rewardmill.transforms.labelers.base import Label, resolve_labeler, safe_label
from rewardmill.transforms.labelers.contract import declared_tasks
from rewardmill.transforms.labelers.judge_base import (
    JudgeLabeler,
    call_failed,
    judged_answer,
    no_answer_label,
    question_of,
)
from rewardmill.transforms.labelers.math_answer import HEDGED

DIGITS = 6
CONFIDENCE_UNCALIBRATED = 0.5  # a greedy yes/no read from text alone says nothing about how sure the judge was


@dataclass(frozen=True)
class AppealSpec:
    labeler: str = "math_answer"  # registry key of the rule verifier whose non-correct labels are appealed
    config: dict = field(default_factory=dict)  # its settings, checked against its Config


@dataclass(frozen=True)
class ReferenceJudgeConfig:
    backend: BackendConfig = field(default_factory=BackendConfig)  # which model judges (default: the policy folder)
    appeal: AppealSpec | None = None  # set = judge only what this rule verifier does not accept (see module doc)
    threshold: float = 0.5  # P(yes) at or above which the answer is judged equivalent
    max_tokens: int = 4  # one word
    seed: int = 0
    aspect: str = "correctness"

    def __post_init__(self):
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"threshold must be in (0, 1), got {self.threshold}")
        if self.appeal is not None:
            rule_of(self)  # fail at config time on an unknown labeler or a bad inner config


def rule_of(config: ReferenceJudgeConfig):
    """The appealed rule verifier, built from its registry key and validated config."""
    cls, rule_config = resolve_labeler(config.appeal.labeler, config.appeal.config, "appeal")
    return cls(rule_config)


def _final(rule: Label) -> bool:
    """A rule verdict no appeal may overturn: a hedged answer ("5 or 6") is wrong however a judge reads it."""
    return rule.verdict == "incorrect" and rule.rationale.startswith(HEDGED)


def _label_dict(label: Label) -> dict:
    return {"score": label.score, "verdict": label.verdict, "rationale": label.rationale}


class ReferenceJudge(JudgeLabeler):
    name = "reference_judge"
    version = "3"  # 2: a hedged rule verdict is final (never appealed); 3: no substance = 0.0 without a call
    reads: tuple[str, ...] = ("messages", "completion", "reference")  # per instance: then the rule verifier's
    tasks: tuple[str, ...] | None = None  # per instance: the rule verifier's tasks in appeal mode
    Config = ReferenceJudgeConfig

    def __init__(self, config: ReferenceJudgeConfig | None = None):
        super().__init__()
        self.config = config or ReferenceJudgeConfig()
        self.rule = rule_of(self.config) if self.config.appeal is not None else None
        own = ("messages", "completion", "reference")
        # Per instance: the rule verifier's columns follow the judge's own, in its order.
        self.reads = own + tuple(c for c in (self.rule.reads if self.rule else ()) if c not in own)
        self.tasks = declared_tasks(self.rule) if self.rule else None

    def request(self, messages, completion: str, reference: str) -> JudgeRequest:
        cfg = self.config
        prompt = build_equivalence(question_of(messages), judged_answer(completion), reference)
        return JudgeRequest(prompt, Sampling(0.0, max_tokens=cfg.max_tokens, seed=cfg.seed, top_logprobs=TOP_LOGPROBS))

    def label(self, *values) -> Label:
        return self.label_many([values])[0]

    def label_many(self, rows: list[tuple]) -> list[Label]:
        rules = [self._rule_label(values) for values in rows]
        judged = [i for i, (row, rule) in enumerate(zip(rows, rules, strict=True)) if self._needs_judge(row, rule)]
        empty = {i for i in judged if self.screens_out(judged_answer(rows[i][1]))}
        ask = [i for i in judged if i not in empty]
        responses = self.client.complete([self.request(*rows[i][:3]) for i in ask]) if ask else []
        answers = dict(zip(ask, responses, strict=True))
        return [
            self.no_answer(rules[i]) if i in empty else self.to_label(values[2], rules[i], answers.get(i))
            for i, values in enumerate(rows)
        ]

    def no_answer(self, rule: Label | None) -> Label:
        """An answer with no substance: 0.0 without a call, the rule's verdict kept beside it in appeal mode."""
        label = no_answer_label(self.config.aspect)
        raw = {"judge": None, "no_substance": True} | ({"rule": _label_dict(rule)} if rule is not None else {})
        return Label(label.score, label.confidence, label.verdict, label.rationale, json.dumps(raw), label.aspect)

    def _rule_label(self, values: tuple) -> Label | None:
        if self.rule is None:
            return None
        row = dict(zip(self.reads, values, strict=True))
        return safe_label(self.rule, tuple(row[c] for c in self.rule.reads))  # a crash is one more negative

    @staticmethod
    def _needs_judge(values: tuple, rule: Label | None) -> bool:
        has_reference = isinstance(values[2], str) and values[2].strip() != ""
        return has_reference and (rule is None or (rule.verdict != "correct" and not _final(rule)))

    def to_label(self, reference: str | None, rule: Label | None, response: JudgeResponse | None) -> Label:
        """Pure: the rule's label (appeal mode) and the judge's response (None = not asked) -> the final Label."""
        cfg = self.config
        if rule is not None and (rule.verdict == "correct" or _final(rule)):
            raw = json.dumps({"rule": _label_dict(rule), "judge": None, "appealed": False}, ensure_ascii=False)
            return Label(rule.score, rule.confidence, rule.verdict, f"rule: {rule.rationale}"[:500], raw, cfg.aspect)
        if response is None:  # no reference to compare with
            raw = json.dumps({"rule": _label_dict(rule) if rule else None, "judge": None}, ensure_ascii=False)
            return Label(None, 0.0, "abstain", "no reference answer to compare with", raw, cfg.aspect)
        if response.error:
            return call_failed(response.error, cfg.aspect)
        parsed = parse_yes_no(response.text)
        prob = response_p_yes(response)
        judge = {"text": response.text, "parsed": parsed.value, "p_yes": None if prob is None else round(prob, DIGITS)}
        raw_dict = {"judge": judge} if rule is None else {"rule": _label_dict(rule), "judge": judge, "appealed": True}
        raw = json.dumps(raw_dict, ensure_ascii=False)
        if prob is not None:
            score, confidence, how = round(prob, DIGITS), round(abs(2 * prob - 1), DIGITS), f"P(yes) = {prob:.2f}"
        elif parsed.value is not None:
            score, confidence, how = float(parsed.value), CONFIDENCE_UNCALIBRATED, f"judge said {parsed.matched!r}"
        else:
            return Label(None, 0.0, "abstain", "the judge gave no readable yes/no", raw, cfg.aspect)
        verdict = "correct" if score >= cfg.threshold else "incorrect"
        prefix = f"rule said {rule.verdict}; judge on appeal: " if rule is not None else "judge: "
        what = "equivalent to the reference" if verdict == "correct" else "not equivalent to the reference"
        return Label(score, confidence, verdict, f"{prefix}{what} ({how})"[:500], raw, cfg.aspect)

    @classmethod
    def summarize(cls, labels: list[dict]) -> dict:
        """judged (rows the judge decided), share judged equivalent, and in appeal mode: appealed rows and how many
        of them the judge overturned (rule said no, judge said yes), with the share overturned."""
        judged = equivalent = appealed = overturned = 0
        for row in labels:
            raw = json.loads(row["raw"]) if row.get("raw") else {}
            if raw.get("judge") is None or row["score"] is None:
                continue
            judged += 1
            equivalent += row["verdict"] == "correct"
            if raw.get("appealed"):
                appealed += 1
                overturned += row["verdict"] == "correct"
        stats = {
            "judged": judged,
            "share_equivalent": round(equivalent / judged, DIGITS) if judged else None,
            "appealed": appealed,
            "overturned": overturned,
            "share_overturned": round(overturned / appealed, DIGITS) if appealed else None,
        }
        return stats
