import json
import pickle

import pytest

from rewardmill.transforms.judges.client import JudgeResponse
from rewardmill.transforms.labelers.math_answer import MathAnswerConfig, MathAnswerVerifier
from rewardmill.transforms.steps.labeler import SegmentConfig, StepLabeler, StepsConfig, from_first_error
from rewardmill.transforms.steps.segment import segment
from tests.transforms.labelers.scripted import ScriptedClient

K = 4
T, F = True, False
SENTENCES = SegmentConfig(strategy="sentences")
WRONG = "999"  # no rollout's reference


def rollout(rollout_id: str, question: str, completion: str, reference: str | None) -> dict:
    return {
        "rollout_id": rollout_id,
        "prompt_id": f"p-{rollout_id}",
        "completion": completion,
        "messages": [{"role": "user", "content": question}],
        "reference": reference,
        "task": "math",
    }


# rollout id -> (rollout, MC profile: how many of K continuations from each step's prefix reach the reference; the
# last entry is the final answer itself, K or 0). Profiles are monotone, so MC and binary search must agree.
SOLUTIONS = {
    "right": (  # final answer right, every prefix reaches it
        rollout(
            "right",
            "What is (2 + 3) * 2?",
            "First add 2 and 3. That gives 5. Then double 5. So the answer is \\boxed{10}.",
            "10",
        ),
        [4, 4, 4, 4],
    ),
    "late": (  # partial MC before the error at step 3 ("That leaves 41.")
        rollout(
            "late",
            "What is 6 * 7 - 2?",
            "Multiply 6 by 7. That gives 42. Now subtract 2. That leaves 41. So the answer is \\boxed{41}.",
            "40",
        ),
        [4, 3, 2, 0, 0],
    ),
    "early": (  # wrong from the first step
        rollout(
            "early",
            "What is 9 + 8?",
            "Nine plus eight is 16. Check: 16 - 8 = 8. That looks fine. So the answer is \\boxed{16}.",
            "17",
        ),
        [0, 0, 0, 0],
    ),
    "last": (  # only the final answer is wrong
        rollout(
            "last", "What is 3 * 4?", "Three times four is 12. Add nothing more. So the answer is \\boxed{13}.", "12"
        ),
        [4, 4, 0],
    ),
    "mid": (  # a weak step 1, the error at step 2
        rollout(
            "mid", "What is 5 * 5?", "Five fives. That is 5 * 5. Which is 20. So the answer is \\boxed{20}.", "25"
        ),
        [4, 1, 0, 0],
    ),
}
ROLLOUTS = [r for r, _ in SOLUTIONS.values()]
TABLE = {(rid, step): n for rid, (_, profile) in SOLUTIONS.items() for step, n in enumerate(profile[:-1])}
REFERENCES = {rid: r["reference"] for rid, (r, _) in SOLUTIONS.items()}


class ScriptedContinuer:
    """Test oracle: k continuations per PrefixRequest, the first TABLE[(rollout_id, step)] of them ending in the
    reference answer and the rest in a wrong one. Records every call (a list of requests)."""

    def __init__(self, table: dict[tuple[str, int], int], references: dict[str, str], k: int = K):
        self.table, self.references, self.k, self.calls = table, references, k, []

    def continue_many(self, requests):
        self.calls.append(list(requests))
        out = []
        for request in requests:
            rollout_id, step = request.key.rsplit(":", 1)
            n = self.table[(rollout_id, int(step))]
            right = f" So the answer is \\boxed{{{self.references[rollout_id]}}}."
            out.append([right] * n + [f" So the answer is \\boxed{{{WRONG}}}."] * (self.k - n))
        return out


@pytest.fixture(scope="module")
def verifier():
    v = MathAnswerVerifier()  # the real default verifier (a spawn process pool)
    yield v
    v.teardown()


def labeler(verifier, method="binary_search", continuer=None, judge_client=None, **config):
    cfg = StepsConfig(method=method, k=K, segment=SENTENCES, **config)
    return StepLabeler("prm_test", cfg, continuer=continuer, judge_client=judge_client, verifier=verifier)


@pytest.fixture(scope="module")
def searched(verifier):
    """method -> (rows by rollout id, rejects, continuer): mc and binary search on the same rollouts."""
    out = {}
    for method in ("mc", "binary_search"):
        continuer = ScriptedContinuer(TABLE, REFERENCES)
        rows, rejects = labeler(verifier, method, continuer).label_chunk(ROLLOUTS)
        by_id = {rid: [r for r in rows if r["rollout_id"] == rid] for rid in SOLUTIONS}
        out[method] = (by_id, rejects, continuer)
    return out


def check_rows(rows: list[dict], source: dict, method: str) -> None:
    """One row per step in order, spans that index the completion, the labeler's name and version."""
    steps = segment(source["completion"], "sentences")
    assert [r["step_index"] for r in rows] == list(range(len(steps)))
    for row, step in zip(rows, steps, strict=True):
        assert source["completion"][row["char_start"] : row["char_end"]] == row["step_text"] == step.text
        assert (row["rollout_id"], row["prompt_id"]) == (source["rollout_id"], source["prompt_id"])
        assert (row["labeler"], row["labeler_version"], row["method"]) == ("prm_test", "1", method)
        assert row["n_steps"] == len(steps)


@pytest.mark.parametrize(
    ("rollout_id", "first_error", "hard", "mc_scores", "bs_scores", "bs_spent"),
    [
        ("right", -1, (T, T, T, T), (1.0, 1.0, 1.0, 1.0), (None, None, None, 1.0), (0, 0, 0, 0)),  # no search needed
        ("late", 3, (T, T, T, F, F), (1.0, 0.75, 0.5, 0.0, 0.0), (None, None, 0.5, 0.0, 0.0), (0, 0, 4, 4, 0)),  # 2, 3
        ("early", 0, (F, F, F, F), (0.0, 0.0, 0.0, 0.0), (0.0, 0.0, None, 0.0), (4, 4, 0, 0)),  # probes 1, then 0
        ("last", 2, (T, T, F), (1.0, 1.0, 0.0), (None, 1.0, 0.0), (0, 4, 0)),  # one probe at step 1
        ("mid", 2, (T, T, F, F), (1.0, 0.25, 0.0, 0.0), (None, 0.25, 0.0, 0.0), (0, 4, 4, 0)),  # 1 of 4 still counts
    ],
)
def test_mc_and_binary_search_agree(searched, rollout_id, first_error, hard, mc_scores, bs_scores, bs_spent):
    source, profile = SOLUTIONS[rollout_id]
    for method, scores, spent in [
        ("mc", mc_scores, (K,) * (len(profile) - 1) + (0,)),
        ("binary_search", bs_scores, bs_spent),
    ]:
        rows = searched[method][0][rollout_id]
        check_rows(rows, source, method)
        assert tuple(r["score"] for r in rows) == scores
        assert tuple(r["hard_label"] for r in rows) == hard
        assert tuple(r["n_continuations"] for r in rows) == spent
        assert {r["first_error_step"] for r in rows} == {first_error}
        assert json.loads(rows[0]["raw"]) == {"complete": True, "final_correct": first_error == -1}


def test_binary_search_spends_at_most_half(searched):
    spent = {
        m: sum(r["n_continuations"] for rows in by_id.values() for r in rows) for m, (by_id, _, _) in searched.items()
    }
    generated = {m: K * sum(map(len, c.calls)) for m, (_, _, c) in searched.items()}
    assert spent == generated == {"mc": 60, "binary_search": 28}
    assert 2 * spent["binary_search"] <= spent["mc"]
    assert searched["mc"][1] == searched["binary_search"][1] == []


def test_prefix_requests_continue_the_rollout(searched):
    """Each request: key "<rollout_id>:<step>", the rollout's prompt, the completion's exact text through the step."""
    for _, _, continuer in searched.values():
        for request in (r for call in continuer.calls for r in call):
            rollout_id, step = request.key.rsplit(":", 1)
            source = SOLUTIONS[rollout_id][0]
            steps = segment(source["completion"], "sentences")
            assert request.prefix == source["completion"][: steps[int(step)].end]
            assert request.messages == tuple(source["messages"])


def chain(rollout_id: str, first_error: int, n_steps: int = 8) -> tuple[dict, dict]:
    """An n-step rollout whose final answer is wrong, and its MC table: full until first_error, then 0."""
    text = " ".join(f"Line {i} adds {i}." for i in range(n_steps - 1)) + " So the answer is \\boxed{99}."
    return rollout(rollout_id, "Add them up.", text, "100"), {
        (rollout_id, s): K if s < first_error else 0 for s in range(n_steps - 1)
    }


@pytest.mark.parametrize(
    ("method", "calls"),
    [
        ("mc", 1),  # every prefix of every rollout in one round
        ("binary_search", 3),  # log2(8) rounds for 8 steps, however many rollouts
    ],
)
def test_one_continuer_call_per_round_across_rollouts(verifier, method, calls):
    chains = [chain(f"c{e}", e) for e in range(8)]
    table = {key: n for _, t in chains for key, n in t.items()}
    continuer = ScriptedContinuer(table, {r["rollout_id"]: "100" for r, _ in chains})
    labeler_ = labeler(verifier, method, continuer)
    rows, rejects = labeler_.label_chunk([r for r, _ in chains])
    assert len(continuer.calls) == labeler_.rounds == calls
    assert {r.key.split(":")[0] for r in continuer.calls[0]} == {f"c{e}" for e in range(8)}  # all rollouts at once
    assert {(r["rollout_id"], r["first_error_step"]) for r in rows} == {(f"c{e}", e) for e in range(8)}
    assert rejects == []


@pytest.mark.parametrize(
    ("completion", "reference", "reason", "detail"),
    [
        ("", "5", "no_steps", "the completion is empty"),  # empty completion
        (" \n\n ", "5", "no_steps", "the completion is empty"),  # whitespace only
        (None, "5", "no_steps", "the completion is empty"),  # missing completion
        ("Two and three. So \\boxed{5}.", None, "no_reference", "reference answer"),  # no reference
        ("Two and three. So \\boxed{5}.", "  ", "no_reference", "reference answer"),  # blank reference
        ("Two and three. So \\boxed{5}.", "\\invalid{", "final_abstain", "reference does not parse"),  # math-verify
    ],
)
def test_rejects(verifier, completion, reference, reason, detail):
    bad = rollout("bad", "What is 2 + 3?", completion, reference)
    good = SOLUTIONS["last"][0]
    continuer = ScriptedContinuer(TABLE, REFERENCES)
    rows, rejects = labeler(verifier, "mc", continuer).label_chunk([bad, good])
    ((rejected, why, said),) = rejects
    assert (rejected is bad, why) == (True, reason)
    assert detail in said
    assert {r["rollout_id"] for r in rows} == {"last"}  # the rest of the chunk is labeled
    assert all(r.key.startswith("last:") for call in continuer.calls for r in call)  # no work for the reject


def test_missing_reference_key_is_no_reference(verifier):
    bare = {k: v for k, v in SOLUTIONS["last"][0].items() if k != "reference"}
    detail = "step labels need a reference answer to check against"
    assert labeler(verifier, "mc").label_chunk([bare]) == ([], [(bare, "no_reference", detail)])


@pytest.mark.parametrize(
    ("reply", "first_error", "hard"),
    [
        ("Answer: 1", 1, (T, F, F, F, F)),  # the asked-for format
        ("Answer: -1\nAll fine.", -1, (T, T, T, T, T)),  # no error
        ("Answer: 4", 4, (T, T, T, T, F)),  # the final step
    ],
)
def test_judge_labels_from_first_error(verifier, reply, first_error, hard):
    client = ScriptedClient(lambda request: reply)
    source = SOLUTIONS["late"][0]
    rows, rejects = labeler(verifier, "judge", judge_client=client).label_chunk([source])  # no continuer needed
    check_rows(rows, source, "judge")
    assert rejects == []
    assert tuple(r["hard_label"] for r in rows) == hard
    assert {r["first_error_step"] for r in rows} == {first_error}
    assert all(r["score"] is None and r["n_continuations"] == 0 for r in rows)
    raw = json.loads(rows[0]["raw"])
    assert raw == {"complete": True, "final_correct": False, "judge": {"first_error": first_error, "text": reply}}


def test_judge_request_holds_the_numbered_steps(verifier):
    client = ScriptedClient(lambda request: "Answer: 1")
    labeler(verifier, "judge", judge_client=client).label_chunk(ROLLOUTS[:2])
    ((first, second),) = client.calls  # one call for the chunk, one request per rollout
    user = first.messages[-1]["content"]
    assert "What is (2 + 3) * 2?" in user
    assert "Step 0: First add 2 and 3.\n\nStep 1: That gives 5.\n\nStep 2: Then double 5.\n\nStep 3: So" in user
    assert "Step 4: So the answer is \\boxed{41}." in second.messages[-1]["content"]
    assert (first.sampling.temperature, first.sampling.max_tokens) == (0.0, 8)


@pytest.mark.parametrize(
    ("reply", "detail"),
    [
        ("I cannot tell.", "judge reply 'I cannot tell.'"),  # no answer in the text
        ("Answer: 7", "judge reply 'Answer: 7'"),  # past the last step (5 steps)
        (JudgeResponse((), error="HTTP 500"), "judge reply 'HTTP 500'"),  # the call failed beyond retries
    ],
)
def test_judge_unreadable(verifier, reply, detail):
    source = SOLUTIONS["late"][0]
    client = ScriptedClient(lambda request: reply)
    assert labeler(verifier, "judge", judge_client=client).label_chunk([source]) == (
        [],
        [(source, "judge_unreadable", detail)],
    )


JUDGE_SAYS = {"(2 + 3) * 2": "Answer: -1", "6 * 7 - 2": "Answer: 3", "9 + 8": "Answer: 2", "3 * 4": "no idea"}


def judge_by_question(request) -> str:
    return next(reply for q, reply in JUDGE_SAYS.items() if q in request.messages[-1]["content"])


@pytest.mark.parametrize("search", ["mc", "binary_search"])
def test_consensus(verifier, search):
    sources = [SOLUTIONS[rid][0] for rid in ("right", "late", "early", "last")]
    continuer = ScriptedContinuer(TABLE, REFERENCES)
    client = ScriptedClient(judge_by_question)
    rows, rejects = labeler(verifier, "consensus", continuer, client, search=search).label_chunk(sources)
    # agreement: right (-1 both), late (3 both); kept with method "consensus" and both answers in raw
    for rid, first in [("right", -1), ("late", 3)]:
        kept = [r for r in rows if r["rollout_id"] == rid]
        check_rows(kept, SOLUTIONS[rid][0], "consensus")
        assert {r["first_error_step"] for r in kept} == {first}
        assert json.loads(kept[0]["raw"]) == {
            "complete": True,
            "final_correct": first == -1,
            "judge": {"first_error": first, "text": JUDGE_SAYS["(2 + 3) * 2" if rid == "right" else "6 * 7 - 2"]},
            "search": {"method": search, "first_error": first},
        }
    assert {r["rollout_id"] for r in rows} == {"right", "late"}
    assert [(r["rollout_id"], reason, detail) for r, reason, detail in rejects] == [
        ("early", "first_error_disagrees", f"{search} first error 0, judge 2"),  # search says 0, judge 2
        ("last", "judge_unreadable", f"{search} first error 2, judge None"),  # the judge did not answer
    ]


def test_pickles_with_plain_attributes(verifier):
    continuer = ScriptedContinuer(TABLE, REFERENCES)
    original = StepLabeler("prm_test", StepsConfig(k=K, segment=SENTENCES), continuer=continuer, verifier=verifier)
    rows, _ = original.label_chunk(ROLLOUTS)  # the verifier's pool is running: the copy must not carry it
    copy = pickle.loads(pickle.dumps(original))
    try:
        assert (copy.name, copy.config, copy.rounds) == ("prm_test", original.config, original.rounds)
        assert copy.verifier.config == MathAnswerConfig() and copy.verifier is not verifier
        assert copy.continuer.table == TABLE
        assert copy.label_chunk(ROLLOUTS) == (rows, [])  # the copy starts its own pool
    finally:
        copy.verifier.teardown()


def test_default_verifier_comes_from_the_config():
    cfg = StepsConfig(verifier=MathAnswerConfig(timeout_seconds=2))
    assert StepLabeler("prm_test", cfg).verifier.config == cfg.verifier  # built lazily: no pool started here


@pytest.mark.parametrize(
    ("first_error", "n_steps", "hard"),
    [
        (-1, 3, (T, T, T)),  # no error: all correct
        (0, 3, (F, F, F)),  # wrong from the start
        (1, 3, (T, F, F)),  # steps after the error are wrong too
        (2, 3, (T, T, F)),  # the last step
        (0, 1, (F,)),  # one wrong step
        (-1, 1, (T,)),  # one correct step
    ],
)
def test_from_first_error(first_error, n_steps, hard):
    decision = from_first_error(first_error, n_steps)
    assert (decision.first_error, decision.hard, decision.method, decision.complete) == (first_error, hard, "judge", T)
    assert decision.soft == (None,) * n_steps  # a judge gives no MC estimate
    assert decision.n_continuations == (0,) * n_steps


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: StepsConfig(method="vote"), "method must be one of"),  # unknown method
        (lambda: StepsConfig(k=0), "k must be >= 1"),  # no continuations
        (lambda: SegmentConfig(strategy="words"), "segment.strategy"),  # unknown strategy
        (lambda: SegmentConfig(strategy="regex"), "needs a separator"),  # regex without a pattern
        (lambda: SegmentConfig(strategy="regex", pattern="("), "invalid separator"),  # bad regex fails at config time
        (lambda: SegmentConfig(max_steps=0), "max_steps"),  # no steps at all
    ],
)
def test_config_rejects(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize(
    ("method", "continuations", "judge"),
    [("mc", T, F), ("binary_search", T, F), ("judge", F, T), ("consensus", T, T)],
)
def test_what_each_method_needs(method, continuations, judge):
    cfg = StepsConfig(method=method)
    assert (cfg.uses_continuations, cfg.uses_judge) == (continuations, judge)


def test_fewer_continuations_than_k_count_as_what_came_back(verifier):
    """A backend that returns 2 of the 4 asked-for continuations (both right): soft 1.0 over 2, not 0.5 over 4."""

    class Short(ScriptedContinuer):
        def continue_many(self, requests):
            return [texts[:2] for texts in super().continue_many(requests)]

    source = ROLLOUTS[0]
    full = {key: K for key in TABLE}
    rows, _ = labeler(verifier, "mc", Short(full, REFERENCES)).label_chunk([source])
    estimated = [r for r in rows if r["step_index"] < r["n_steps"] - 1]
    assert estimated and all(r["score"] == 1.0 and r["n_continuations"] == 2 for r in estimated)
