import polars as pl
import pytest

from rewardmill.transforms.aggregate.reward import AggregateConfig, score_rollouts
from rewardmill.transforms.aggregate.rl import RlConfig, build_rl_rows
from rewardmill.transforms.aggregate.sft import SftConfig, build_sft_rows
from rewardmill.transforms.aggregate.status import RolloutFilterConfig, with_status
from tests.transforms.aggregate.frames import label, labels, rollouts

AGG = AggregateConfig(gates=("math",), weights={"judge": 1.0})


def scored(verdicts: list[str | None], prompt_id: str = "p", judge: float = 0.5, flags=None, **filters):
    ro = rollouts(*[(f"{prompt_id}{i}", 10 + i, "stop", prompt_id) for i in range(len(verdicts))])
    labs = []
    for i, v in enumerate(verdicts):
        rid = f"{prompt_id}{i}"
        if v is not None:
            labs.append(label(rid, "math", float(v == "correct") if v in ("correct", "incorrect") else None, v))
        labs.append(label(rid, "judge", judge + i / 100, "x"))
    return with_status(score_rollouts(ro, labels(*labs), AGG), flags or {}, RolloutFilterConfig(**filters))


@pytest.mark.parametrize(
    "verdicts, pass_rate, difficulty, zero, full",
    [
        (["correct"] * 4, 1.0, "easy", False, True),  # k/k: no group-relative signal, flagged
        (["incorrect"] * 4, 0.0, "unsolved", True, False),  # 0/k: flagged
        (["correct", "incorrect", "incorrect", "incorrect"], 0.25, "hard", False, False),
        (["correct", "correct", "incorrect", "incorrect"], 0.5, "medium", False, False),
        (["correct", "correct", "correct", "incorrect"], 0.75, "easy", False, False),
        # undecided samples do not count: 1 of 2 verified
        (["correct", "incorrect", "abstain", None], 0.5, "medium", False, False),
        ([None, None], None, "unverified", False, False),  # nothing verified: no pass rate, not flagged
    ],
)
def test_rl_pass_rate_and_difficulty(verdicts, pass_rate, difficulty, zero, full):
    (row,) = build_rl_rows(scored(verdicts), set(), RlConfig()).to_pylist()
    assert row["n_samples"] == len(verdicts) and row["pass_rate"] == pass_rate
    assert (row["difficulty"], row["zero_pass"], row["all_pass"]) == (difficulty, zero, full)
    assert row["prompt"] == [{"role": "user", "content": "What is 2 + 2?"}] and row["reference"] == "4"


def test_rl_leaves_out_flagged_prompts():
    frame = pl.concat([scored(["correct"], "a"), scored(["correct"], "b")])
    assert [r["prompt_id"] for r in build_rl_rows(frame, {"b"}, RlConfig()).to_pylist()] == ["a"]


def test_rl_config():
    with pytest.raises(ValueError, match="hard < easy"):
        RlConfig(easy=0.2, hard=0.5)


def test_sft_takes_the_best_verified_rollouts():
    frame = scored(["correct", "incorrect", "correct", "correct"], judge=0.1)
    table, rejects = build_sft_rows(frame, SftConfig(per_prompt=2))
    rows = table.to_pylist()
    # p3 has the highest judge score among the correct ones, then p2
    assert sorted((r["rollout_id"], r["rank"]) for r in rows) == [("p2", 1), ("p3", 0)]
    assert rows[0]["completion"] == [{"role": "assistant", "content": f"completion of {rows[0]['rollout_id']}"}]
    assert rejects.height == 0


@pytest.mark.parametrize(
    "verdicts, cfg, filters, reason",
    [
        (["incorrect", "incorrect"], SftConfig(), {}, "no_correct_rollout"),
        (["abstain", "abstain"], SftConfig(require_correct=False, min_reward=0.9), {}, "below_min_reward"),
    ],
)
def test_sft_rejects_name_the_reason(verdicts, cfg, filters, reason):
    _, rejects = build_sft_rows(scored(verdicts, **filters), cfg)
    assert rejects.to_dicts() == [{"row_id": "p", "reason": reason, "detail": rejects["detail"][0]}]


def test_sft_prompt_without_a_kept_rollout_gets_its_common_status():
    _, rejects = build_sft_rows(
        scored(["correct", "correct"], flags={"p": ("contaminated", "x.jsonl:3")}), SftConfig()
    )
    assert rejects["reason"].to_list() == ["contaminated"] and "x.jsonl:3" in rejects["detail"][0]


def test_status_reasons():
    ro = rollouts(("a", 5), ("b", 5, "length"), ("c", 5), ("d", 5), ("e", 5, "length", "q"))
    labs = labels(
        label("a", "math", 1.0, "correct"),
        label("b", "math", 1.0, "correct"),
        label("c", "judge", 0.5, "x", confidence=0.3),
        label("e", "math", 1.0, "correct"),
    )
    cfg = RolloutFilterConfig(min_confidence=0.5, drop_truncated=True)
    frame = with_status(score_rollouts(ro, labs, AGG), {"q": ("near_duplicate_prompt", "like p")}, cfg)
    assert dict(zip(frame["rollout_id"], frame["status"], strict=True)) == {
        "a": "kept",
        "b": "truncated",
        "c": "low_confidence",
        "d": "missing_score",  # no label at all
        "e": "near_duplicate_prompt",  # the prompt's flag comes first
    }
    assert frame.filter(pl.col("status") == "kept")["status_detail"].to_list() == [None]
    assert "0.3 < min_confidence 0.5" in frame.filter(pl.col("rollout_id") == "c")["status_detail"][0]
    with pytest.raises(ValueError, match="min_confidence"):
        RolloutFilterConfig(min_confidence=1.5)


def test_prompt_columns_given_apart_give_the_same_rows():
    """assemble_bucket passes the prompts' own columns once per prompt (`prompts`) with narrow scored rollouts; the
    rows equal those built from rollouts that carry them."""
    frame = pl.concat([scored(["correct", "incorrect", "correct"], "a"), scored(["incorrect", "abstain"], "b")])
    prompt_columns = ["prompt_id", "messages", "reference", "tests", "constraints"]
    prompts = frame.select(prompt_columns).unique("prompt_id")
    narrow = frame.drop(prompt_columns[1:])
    cfg = SftConfig(per_prompt=2, require_correct=False, min_reward=0.0)
    assert (
        build_rl_rows(narrow, set(), RlConfig(), prompts)
        .sort_by("prompt_id")
        .equals(build_rl_rows(frame, set(), RlConfig()).sort_by("prompt_id"))
    )
    (apart, apart_rejects), (carried, carried_rejects) = (
        build_sft_rows(narrow, cfg, prompts),
        build_sft_rows(frame, cfg),
    )
    assert apart.sort_by("rollout_id").equals(carried.sort_by("rollout_id")) and apart.num_rows == 4
    assert apart_rejects.equals(carried_rejects)
