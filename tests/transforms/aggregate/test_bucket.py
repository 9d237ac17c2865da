"""assemble_bucket end to end on Arrow tables: every output, and every input accounted for."""

import random

import polars as pl
import pyarrow as pa
import pytest

from rewardmill.schemas import LABEL_V1, PAIR_ASPECT_V1, PAIR_V2, REJECT_V1, REWARD_V1, RL_V1, ROLLOUT_V2, SFT_V1
from rewardmill.transforms.aggregate.bucket import PROMPT_COLUMNS, SAMPLE_COLUMNS, CoreConfig, assemble_bucket
from rewardmill.transforms.aggregate.reward import AggregateConfig
from rewardmill.transforms.aggregate.sft import SftConfig
from rewardmill.transforms.aggregate.status import RolloutFilterConfig
from rewardmill.transforms.pairing.strategies import PairsConfig

STRATEGIES = ("best_vs_worst", "correct_vs_incorrect", "best_vs_random", "all_above_margin", "length_matched")
CFG = CoreConfig(
    aggregate=AggregateConfig(gates=("math_answer",), weights={"panel": 1.0}),
    rollouts=RolloutFilterConfig(min_confidence=0.2, drop_truncated=True),
    pairs=PairsConfig(strategies=STRATEGIES, min_agreement=0.4, max_length_ratio=4.0),
    sft=SftConfig(per_prompt=2),
)


def synthetic(n_prompts: int, seed: int = 0) -> tuple[pa.Table, pa.Table]:
    rng = random.Random(seed)
    rollouts, labels = [], []
    for p in range(n_prompts):
        skill = rng.random()
        for i in range(4):
            rid, pid = f"r{p:03d}-{i}", f"p{p:03d}"
            rollouts.append({
                "rollout_id": rid, "prompt_id": pid, "task": "math",
                "messages": [{"role": "user", "content": f"question {p}"}], "reference": "1", "tests": None,
                "constraints": None, "rubric": None, "split": "test" if p % 5 == 0 else "train", "sample_index": i,
                "completion": f"answer {rid}", "n_tokens": rng.randint(1, 60),
                "finish_reason": "length" if rng.random() < 0.1 else "stop", "logprob_sum": None,
                "policy": {"name": "m", "fingerprint": "f", "backend": "b"}, "sampling": "{}", "seed": i,
            })  # fmt: skip
            decided = rng.random() < 0.9
            ok = rng.random() < skill
            base = {"rollout_id": rid, "prompt_id": pid, "aspect": "correctness", "rationale": None, "raw": None}
            labels.append({**base, "labeler": "math_answer", "labeler_version": "2",
                           "score": float(ok) if decided else None, "confidence": 1.0 if decided else 0.0,
                           "verdict": ("correct" if ok else "incorrect") if decided else "abstain"})  # fmt: skip
            labels.append({**base, "labeler": "panel", "labeler_version": "1", "score": round(rng.random(), 2),
                           "confidence": rng.choice([0.1, 0.7, 1.0]), "verdict": "abstain"})  # fmt: skip
    labels.append({**labels[0], "rollout_id": "ghost"})  # a label without a rollout
    return pa.Table.from_pylist(rollouts, ROLLOUT_V2), pa.Table.from_pylist(labels, LABEL_V1)


@pytest.fixture(scope="module")
def result():
    rollouts, labels = synthetic(40)
    flags = {"p003": ("contaminated", "in bench.jsonl:1"), "p004": ("near_duplicate_prompt", "like p001")}
    return rollouts, assemble_bucket(rollouts, labels, flags, CFG)


def test_schemas(result):
    _, res = result
    expected = {"_rewards": REWARD_V1, "pairs": PAIR_V2, "rl": RL_V1, "sft": SFT_V1, "pairs_by_aspect": PAIR_ASPECT_V1}
    assert {k: t.schema for k, t in res.tables.items()} == expected
    assert all(t.schema == REJECT_V1 for t in res.rejects.values())


def test_every_rollout_is_kept_or_rejected(result):
    rollouts, res = result
    rewards = pl.from_arrow(res.tables["_rewards"])
    rejects = pl.from_arrow(res.rejects["_rewards"])
    assert rewards.height == rollouts.num_rows == res.counts["rollouts"]
    not_kept = rewards.filter(pl.col("status") != "kept")
    rollout_rejects = rejects.filter(pl.col("reason") != "orphan_label")
    assert sorted(not_kept["rollout_id"]) == sorted(rollout_rejects["row_id"])
    assert res.counts["rollouts_kept"] + rollout_rejects.height == rollouts.num_rows
    assert rejects.filter(pl.col("reason") == "orphan_label")["row_id"].to_list() == ["ghost/math_answer/correctness"]
    assert set(rollout_rejects["reason"]) >= {"contaminated", "near_duplicate_prompt", "truncated", "low_confidence"}


def test_every_prompt_has_pairs_or_a_reason_per_strategy(result):
    _, res = result
    pairs = pl.from_arrow(res.tables["pairs"])
    rejects = pl.from_arrow(res.rejects["pairs"])
    per_strategy = rejects.filter(pl.col("row_id").str.contains("/"))  # "<prompt_id>/<strategy>": no pair at all
    dropped = rejects.filter(~pl.col("row_id").str.contains("/"))  # pair_id: a pair the pair filters dropped
    assert set(dropped["reason"]) <= {"low_agreement", "length_ratio"} and dropped.height > 0
    # candidates = written + dropped by pair filters + chosen again by a later strategy
    c = res.counts
    assert c["pairs_candidates"] == c["pairs_written"] + c["pairs_dropped"] + c["pairs_repeated"]
    assert pairs.height == c["pairs_written"] and c["pairs_dropped"] == dropped.height
    # best_vs_worst (first, so never a repeat): each of the 40 prompts has its pair, a dropped pair or a reason
    bvw = set(pairs.filter(pl.col("pair_type") == "best_vs_worst")["prompt_id"])
    bvw_rejected = {r.split("/")[0] for r in per_strategy["row_id"] if r.endswith("/best_vs_worst")}
    bvw_dropped = dropped.filter(pl.col("detail").str.starts_with("best_vs_worst:")).height
    assert len(bvw) + len(bvw_rejected) + bvw_dropped == 40 and not bvw & bvw_rejected


def test_pairs_are_valid(result):
    _, res = result
    pairs = pl.from_arrow(res.tables["pairs"])
    assert (pairs["margin"] > 0).all() and (pairs["agreement"] >= 0.4).all()
    assert pairs["pair_id"].is_unique().all()
    assert (pairs["chosen_rollout_id"] != pairs["rejected_rollout_id"]).all()
    cvi = pairs.filter(pl.col("pair_type") == "correct_vs_incorrect")
    assert cvi.height > 0 and cvi["chosen_correct"].all() and not cvi["rejected_correct"].any()
    assert not {"p003", "p004"} & set(pairs["prompt_id"])


def test_rl_and_sft(result):
    _, res = result
    rl = pl.from_arrow(res.tables["rl"])
    rl_rejects = pl.from_arrow(res.rejects["rl"])
    assert rl.height + rl_rejects.height == 40 and sorted(rl_rejects["row_id"]) == ["p003", "p004"]
    assert (rl["n_samples"] == 4).all() and (rl["n_correct"] <= rl["n_verified"]).all()
    assert rl.filter(pl.col("zero_pass"))["difficulty"].unique().to_list() == ["unsolved"]
    sft = pl.from_arrow(res.tables["sft"])
    sft_rejects = pl.from_arrow(res.rejects["sft"])
    assert sft["correct"].all() and (sft["rank"] < 2).all()
    assert sft["prompt_id"].n_unique() + sft_rejects.height == 40


def test_input_order_does_not_change_the_outputs(result):
    rollouts, res = result
    _, labels = synthetic(40)
    shuffled = assemble_bucket(
        rollouts.take(list(range(rollouts.num_rows))[::-1]),
        labels.take(list(range(labels.num_rows))[::-1]),
        {"p003": ("contaminated", "in bench.jsonl:1"), "p004": ("near_duplicate_prompt", "like p001")},
        CFG,
    )
    for name, table in res.tables.items():
        key = {"pairs": "pair_id", "pairs_by_aspect": "pair_id", "rl": "prompt_id"}.get(name, "rollout_id")
        assert table.sort_by(key).equals(shuffled.tables[name].sort_by(key)), name


def test_prompt_columns_given_apart_give_the_same_outputs(result):
    """The stage ships the prompt columns once per prompt (and a prompt may come twice, from two shards): the same
    tables as rollouts that carry them."""
    rollouts, res = result
    _, labels = synthetic(40)
    prompts = rollouts.select(list(PROMPT_COLUMNS))
    apart = assemble_bucket(
        rollouts.select(list(SAMPLE_COLUMNS)),
        labels,
        {"p003": ("contaminated", "in bench.jsonl:1"), "p004": ("near_duplicate_prompt", "like p001")},
        CFG,
        pa.concat_tables([prompts, prompts.slice(0, 50)]),
    )
    for name, table in res.tables.items():  # rows in key order, as the writer sorts them
        key = {"pairs": "pair_id", "pairs_by_aspect": "pair_id", "rl": "prompt_id"}.get(name, "rollout_id")
        assert table.sort_by(key).equals(apart.tables[name].sort_by(key)), name
    for name, table in res.rejects.items():
        assert table.sort_by("row_id").equals(apart.rejects[name].sort_by("row_id")), name
    assert apart.counts == res.counts


def pooled(rollouts: pa.Table) -> pa.Table:
    """The synthetic rollouts as a candidate pool: samples 0-1 of a prompt from policy `a`, 2-3 from `b`; prompt
    p000 from `a` alone (a prompt one policy sampled keeps its plain group)."""
    rows = rollouts.to_pylist()
    for r in rows:
        name = "a" if r["sample_index"] < 2 or r["prompt_id"] == "p000" else "b"
        r["policy"] = {"name": name, "fingerprint": f"f{name}", "backend": "transformers"}
    return pa.Table.from_pylist(rows, ROLLOUT_V2)


@pytest.mark.parametrize("cross_policy", [False, True])
def test_a_pool_pairs_on_policy_unless_cross_policy(cross_policy):
    rollouts, labels = synthetic(40)
    rollouts = pooled(rollouts)
    cfg = CoreConfig(aggregate=CFG.aggregate, pairs=PairsConfig(strategies=STRATEGIES, cross_policy=cross_policy))
    res = assemble_bucket(rollouts, labels, {}, cfg)
    policy = {r["rollout_id"]: r["policy"]["name"] for r in rollouts.to_pylist()}
    pairs = res.tables["pairs"].to_pylist()
    assert pairs and {p["prompt_id"] for p in pairs} <= {f"p{i:03d}" for i in range(40)}  # real prompt ids back
    mixed = [p for p in pairs if policy[p["chosen_rollout_id"]] != policy[p["rejected_rollout_id"]]]
    reject_ids = pl.from_arrow(res.rejects["pairs"])["row_id"].to_list()
    if cross_policy:
        assert mixed  # the pool's members compete
        assert all("@" not in r for r in reject_ids)
    else:
        assert not mixed
        # a strategy's "no pair" reason is per prompt and policy: `<prompt_id>@<policy>/<strategy>`
        assert any(r.startswith("p001@a/") for r in reject_ids) or any(r.startswith("p001@b/") for r in reject_ids)
        assert not any(r.startswith("p000@") for r in reject_ids)
        # on-policy pairs of a pool are the union of each policy's pairs on its own rollouts
        for name in ("a", "b"):
            own = rollouts.filter(pa.compute.equal(rollouts["policy"].combine_chunks().field("name"), name))
            alone = assemble_bucket(own, labels, {}, cfg).tables["pairs"].to_pylist()
            mine = [p for p in pairs if policy[p["chosen_rollout_id"]] == name]
            key = lambda p: (p["prompt_id"], p["chosen_rollout_id"], p["rejected_rollout_id"], p["pair_type"])  # noqa: E731
            assert sorted(map(key, mine)) == sorted(map(key, alone))
