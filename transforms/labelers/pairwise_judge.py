"""PairwiseJudge: an LLM compares the rollouts of one prompt two at a time; each rollout's score is its win rate.

Input columns: messages (the prompt), completion — all rollouts of one prompt at once (`label_group`, sorted by
rollout_id).   Output per rollout: score = (wins + ties / 2) / decided comparisons in [0, 1] (None = no comparison
could be read), confidence = the share of its comparisons whose two orders agreed, verdict correct when it beat its
opponents more often than not (score > 0.5), abstain when exactly even, raw = every comparison with the judge's text
in both orders.

Position bias is large, so every pair is judged twice, (x as A, y as B) and (y as A, x as B): a win counts only
when both orders agree, otherwise it is a tie marked inconsistent (MT-Bench). `summarize` reports the dataset's
swap-consistency rate, the judge's position-bias diagnostic. With n rollouts a prompt costs n(n-1) calls; with
more than `max_opponents` + 1 rollouts each rollout meets only its next `max_opponents` neighbours (cyclic).

The judge reads the answers after any leading reasoning block. A rollout whose answer has no substance scores 0.0
(judge_base.no_answer_label) and its comparisons are decided without a call: it loses to any answer with substance.
"""

import json
from dataclasses import dataclass, field

from rewardmill.transforms.judges.client import BackendConfig, JudgeRequest, Sampling
from rewardmill.transforms.judges.pairwise import build_pairwise, combine_orders, parse_pairwise, swap_consistency
from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.judge_base import (
    JudgeLabeler,
    call_failed,
    judged_answer,
    no_answer_label,
    question_of,
)

DIGITS = 6


@dataclass(frozen=True)
class PairwiseJudgeConfig:
    backend: BackendConfig = field(default_factory=BackendConfig)  # which model judges (default: the policy folder)
    criteria: str = "correctness and helpfulness of the answer"
    max_opponents: int = 3  # comparisons per rollout; 3 = every pair for the usual 4 rollouts per prompt
    max_tokens: int = 24  # "Winner: A" then a short reason
    seed: int = 0
    aspect: str = "preference"

    def __post_init__(self):
        if self.max_opponents < 1:
            raise ValueError(f"max_opponents must be >= 1, got {self.max_opponents}")


def schedule(n: int, max_opponents: int) -> list[tuple[int, int]]:
    """The (i, j) pairs to compare among n rollouts, i < j, each pair once: all pairs when every rollout can meet
    every other within `max_opponents`, else each rollout with its next ceil(max_opponents / 2) neighbours
    (cyclic), so every rollout gets about `max_opponents` comparisons. Deterministic."""
    if n - 1 <= max_opponents:
        return [(i, j) for i in range(n) for j in range(i + 1, n)]
    reach = max(1, -(-max_opponents // 2))
    pairs = {tuple(sorted((i, (i + d) % n))) for i in range(n) for d in range(1, reach + 1)}
    return sorted(pairs)


class PairwiseJudge(JudgeLabeler):
    name = "pairwise_judge"
    version = "2"  # 2: reads the answer after reasoning; no substance = 0.0 and loses without a call
    reads = ("messages", "completion")
    Config = PairwiseJudgeConfig

    def __init__(self, config: PairwiseJudgeConfig | None = None):
        super().__init__()
        self.config = config or PairwiseJudgeConfig()

    def request(self, messages, answer_a: str, answer_b: str) -> JudgeRequest:
        cfg = self.config
        prompt = build_pairwise(question_of(messages), judged_answer(answer_a), judged_answer(answer_b), cfg.criteria)
        return JudgeRequest(prompt, Sampling(temperature=0.0, max_tokens=cfg.max_tokens, seed=cfg.seed))

    def label(self, messages, completion: str) -> Label:
        return self.label_group([(messages, completion)])[0]

    def label_group(self, rows: list[tuple]) -> list[Label]:
        """All rollouts of one prompt (tuples of `reads`) -> one Label each, in the same order."""
        pairs = schedule(len(rows), self.config.max_opponents)
        empty = {i for i, row in enumerate(rows) if self.screens_out(judged_answer(row[1]))}
        asked = [(i, j) for i, j in pairs if i not in empty and j not in empty]
        requests = []
        for i, j in asked:
            messages = rows[i][0]
            requests.append(self.request(messages, rows[i][1], rows[j][1]))  # x = i as A
            requests.append(self.request(messages, rows[j][1], rows[i][1]))  # y = j as A
        responses = self.client.complete(requests) if requests else []
        answered = {pair: responses[2 * k : 2 * k + 2] for k, pair in enumerate(asked)}
        comparisons = []
        for i, j in pairs:
            if (i, j) not in answered:  # an answer with no substance loses to one with substance, both: a tie
                verdicts = ["tie", "tie"] if i in empty and j in empty else ["B", "A"] if i in empty else ["A", "B"]
                no_call = {"texts": [None, None], "errors": [None, None], "verdicts": verdicts, "no_substance": True}
                comparisons.append({"i": i, "j": j, **no_call})
                continue
            first, second = answered[(i, j)]
            comparisons.append(
                {
                    "i": i,
                    "j": j,
                    "texts": [first.text, second.text],
                    "errors": [first.error, second.error],
                    "verdicts": [parse_pairwise(first.text).winner, parse_pairwise(second.text).winner],
                }
            )
        return [
            no_answer_label(self.config.aspect) if index in empty else self.to_label(index, comparisons)
            for index in range(len(rows))
        ]

    def to_label(self, index: int, comparisons: list[dict]) -> Label:
        """Pure: the comparisons of one prompt (each {i, j, texts, errors, verdicts}) -> rollout `index`'s Label."""
        cfg = self.config
        mine = [c for c in comparisons if index in (c["i"], c["j"])]
        if not mine:
            return Label(None, 0.0, "abstain", "no other rollout of this prompt to compare with", aspect=cfg.aspect)
        if all(all(c["errors"]) for c in mine):
            return call_failed(mine[0]["errors"][0], cfg.aspect)
        record, points, decided, consistent = [], 0.0, 0, 0
        for c in mine:
            outcome = combine_orders(*c["verdicts"])
            me, other = ("x", c["j"]) if c["i"] == index else ("y", c["i"])
            result = (
                None
                if outcome.winner is None
                else "tie"
                if outcome.winner == "tie"
                else ("win" if outcome.winner == me else "loss")
            )
            if result is not None:
                decided += 1
                points += {"win": 1.0, "tie": 0.5, "loss": 0.0}[result]
                consistent += bool(outcome.consistent)
            record.append(
                {
                    "opponent": other,
                    "as_first": c["i"] == index,
                    "verdicts": c["verdicts"],
                    "consistent": outcome.consistent,
                    "result": result,
                    "texts": c["texts"],
                    **({"errors": c["errors"]} if any(c["errors"]) else {}),
                    **({"no_substance": True} if c.get("no_substance") else {}),
                }
            )
        raw = json.dumps({"index": index, "comparisons": record}, ensure_ascii=False)
        if decided == 0:
            return Label(None, 0.0, "abstain", "no comparison could be read", raw=raw, aspect=cfg.aspect)
        score = round(points / decided, DIGITS)
        wins = sum(r["result"] == "win" for r in record)
        ties = sum(r["result"] == "tie" for r in record)
        rationale = (
            f"win rate {score:.2f} over {decided} comparisons ({wins} wins, {ties} ties; "
            f"{consistent}/{decided} consistent across both orders)"
        )
        # Exactly even (all ties, or as many wins as losses): the judge expressed no preference either way.
        verdict = "correct" if score > 0.5 else "incorrect" if score < 0.5 else "abstain"
        return Label(score, round(consistent / decided, DIGITS), verdict, rationale, raw=raw, aspect=cfg.aspect)

    @classmethod
    def summarize(cls, labels: list[dict]) -> dict:
        """swap_consistency over every compared pair of the dataset (each pair counted once), the share of pairs
        the judge decided (not a tie), and how often the first-shown answer won a single order (position bias)."""
        verdict_pairs, first_wins, single = [], 0, 0
        for row in labels:
            raw = json.loads(row["raw"]) if row.get("raw") else {}
            for c in raw.get("comparisons", ()):
                if not c["as_first"] or c.get("no_substance"):
                    continue  # each pair is in both rollouts' raw: count it from the first-shown one only; a pair
                    # decided by the substance screen says nothing about the judge
                verdict_pairs.append(tuple(c["verdicts"]))
                for v in c["verdicts"]:
                    if v in ("A", "B"):
                        single += 1
                        first_wins += v == "A"
        outcomes = [combine_orders(*p) for p in verdict_pairs]
        decided = [o for o in outcomes if o.winner is not None]
        consistency = swap_consistency(verdict_pairs)
        return {
            "pairs": len(verdict_pairs),
            "pairs_parsed": len(decided),
            "swap_consistency": None if consistency is None else round(consistency, DIGITS),
            "share_decisive": round(sum(o.winner != "tie" for o in decided) / len(decided), DIGITS)
            if decided
            else None,
            "first_position_win_rate": round(first_wins / single, DIGITS) if single else None,
        }
