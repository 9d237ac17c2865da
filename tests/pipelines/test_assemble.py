"""assemble end to end on hand-made rollouts and labels: filters, every output, accounting, same bytes twice."""

import hashlib
import json
import pickle

import pytest

from rewardmill.pipelines import assemble
from rewardmill.schemas import LABEL_V1, ROLLOUT_V2
from rewardmill.transforms.aggregate.beam import AssembleBucket, BucketInputs
from rewardmill.transforms.config import ConfigError
from rewardmill.transforms.io.parquet import read_rows, rows_to_table, write_table
from tests.conftest import only_labelers, tiny_params

QUESTIONS = {
    "pa": "Tom has 3 apples and buys 4 more. How many apples does he have now?",
    "pb": "tom has 3 apples, and buys 4 more! How many apples does he have now",  # exact duplicate of pa
    "pc": "Tom has 3 apples and buys 4 more. How many apples does he have now in total?",  # near duplicate of pa
    "pd": "A train leaves at noon and travels 60 miles per hour for three hours. How far does it go?",  # benchmark
    "pe": "What is the sum of the first five positive integers?",
    "pf": "Name a prime number larger than twenty.",
}


def rows(pid: str, scores: list[float | None], judge: list[float]) -> tuple[list[dict], list[dict]]:
    rollouts, labels = [], []
    for i, (score, j) in enumerate(zip(scores, judge, strict=True)):
        rid = f"{pid}-r{i}"
        rollouts.append({
            "rollout_id": rid, "prompt_id": pid, "task": "math",
            "messages": [{"role": "user", "content": QUESTIONS[pid]}], "reference": "7", "tests": None,
            "constraints": None, "rubric": None, "split": "test" if pid == "pe" else "train", "sample_index": i,
            "completion": "x" * (10 * (i + 1)), "n_tokens": 10 * (i + 1), "finish_reason": "stop",
            "logprob_sum": None, "policy": {"name": "m", "fingerprint": "f", "backend": "b"}, "sampling": "{}",
            "seed": i,
        })  # fmt: skip
        base = {"rollout_id": rid, "prompt_id": pid, "aspect": "correctness", "rationale": None, "raw": None}
        verdict = "abstain" if score is None else ("correct" if score == 1.0 else "incorrect")
        labels.append({**base, "labeler": "math_answer", "labeler_version": "2", "score": score,
                       "confidence": 0.0 if score is None else 1.0, "verdict": verdict})  # fmt: skip
        labels.append({**base, "labeler": "panel", "labeler_version": "1", "score": j, "confidence": 0.8,
                       "verdict": "abstain"})  # fmt: skip
    return rollouts, labels


SPECS = {
    "pa": ([1.0, 0.0, 1.0, 0.0], [0.9, 0.2, 0.4, 0.8]),
    "pb": ([1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.5, 0.5]),
    "pc": ([1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.5, 0.5]),
    "pd": ([1.0, 0.0, 1.0, 0.0], [0.5, 0.5, 0.5, 0.5]),
    "pe": ([1.0, 1.0, 1.0, 1.0], [0.7, 0.7, 0.7, 0.7]),  # all pass, equal judge scores: a tie
    "pf": ([None, None, 0.0, 1.0], [0.1, 0.9, 0.3, 0.6]),  # two undecided: between the classes, by the judge
}


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    all_rollouts, all_labels = [], []
    for pid, (scores, judge) in SPECS.items():
        r, lab = rows(pid, scores, judge)
        all_rollouts += r
        all_labels += lab
    all_labels.append({**all_labels[0], "rollout_id": "ghost"})
    for folder, schema, data in [("data/rollouts", ROLLOUT_V2, all_rollouts)] + [
        (f"data/labels/{n}", LABEL_V1, [x for x in all_labels if x["labeler"] == n]) for n in ("math_answer", "panel")
    ]:
        (tmp_path / folder).mkdir(parents=True)
        write_table(rows_to_table(data, schema), str(tmp_path / folder / "part-00000-of-00001.parquet"))
    bench = tmp_path / "bench.jsonl"
    bench.write_text(json.dumps({"question": QUESTIONS["pd"]}) + "\n" + json.dumps({"question": "Unrelated."}) + "\n")
    return tmp_path


def params(tmp_path, **pairs) -> dict:
    p = only_labelers(tiny_params(), ("math_answer", "panel"))
    p.pop("steps")
    p["assemble"]["filters"]["decontaminate"]["files"] = [str(tmp_path / "bench.jsonl")]
    p["assemble"]["pairs"].update(pairs)
    return p


def run(out: str = "data/datasets"):
    assemble.main(["--rollouts", "data/rollouts", "--labels", "data/labels", "--out", out])


def test_every_input_is_accounted_for(project, params_file):
    strategies = ["best_vs_worst", "correct_vs_incorrect", "all_above_margin", "length_matched", "best_vs_random"]
    params_file(params(project, strategies=strategies, min_agreement=0.3))
    run()
    out = project / "data/datasets"
    assert sorted(f.name for f in out.iterdir()) == ["_rewards", "pairs", "pairs_by_aspect", "rl", "sft"]  # no scratch
    rewards = {r["rollout_id"]: r for r in read_rows(str(out / "_rewards"))}
    assert len(rewards) == 24
    statuses = {pid: {rewards[f"{pid}-r{i}"]["status"] for i in range(4)} for pid in SPECS}
    assert statuses == {
        "pa": {"kept"},
        "pb": {"duplicate_prompt"},
        "pc": {"near_duplicate_prompt"},
        "pd": {"contaminated"},
        "pe": {"kept"},
        "pf": {"kept"},
    }
    rejects = read_rows(str(out / "_rewards/_rejects"))
    assert len(rejects) == 12 + 1 and {r["reason"] for r in rejects if r["row_id"] == "ghost/math_answer/correctness"}
    assert "bench.jsonl:1" in next(r["detail"] for r in rejects if r["reason"] == "contaminated")
    # the judge ranks inside a class: pa-r0 (0.75 + 0.25 * 0.9) above pa-r2
    assert rewards["pa-r0"]["reward"] == pytest.approx(0.975) and rewards["pa-r2"]["reward"] == pytest.approx(0.85)
    # verified first: undecided pf-r1 (judge 0.9) gets 0.25 + 0.5 * 0.9, below verified-correct pf-r3 (0.9)
    assert rewards["pf-r1"]["correct"] is None and rewards["pf-r1"]["reward"] == pytest.approx(0.7)
    assert rewards["pf-r3"]["reward"] == pytest.approx(0.9)

    pairs = read_rows(str(out / "pairs"))
    pair_rejects = read_rows(str(out / "pairs/_rejects"))
    manifest = json.loads((out / "pairs/_manifest.json").read_text())
    counts = manifest["counts"]
    assert counts["pairs_candidates"] == len(pairs) + counts["pairs_dropped"] + counts["pairs_repeated"]
    assert manifest["pair_types"] == {t: sum(p["pair_type"] == t for p in pairs) for t in manifest["pair_types"]}
    for strategy in strategies:
        paired = {p["prompt_id"] for p in pairs if p["pair_type"] == strategy}
        no_pair = {r["row_id"].split("/")[0]: r["reason"] for r in pair_rejects if r["row_id"].endswith(strategy)}
        dropped = {json.loads(r["payload"])["prompt_id"] for r in pair_rejects if r["payload"]}
        assert not paired & set(no_pair)
        assert set(SPECS) - paired - set(no_pair) - dropped <= {p["prompt_id"] for p in pairs}  # repeats
        assert no_pair["pb"] == "duplicate_prompt" and no_pair["pe"] == "tie" and no_pair["pd"] == "contaminated"
    assert {p["prompt_id"] for p in pairs} == {"pa", "pf"}
    assert all(p["agreement"] >= 0.3 and p["margin"] > 0 for p in pairs)

    rl = {r["prompt_id"]: r for r in read_rows(str(out / "rl"))}
    assert set(rl) == {"pa", "pe", "pf"} and rl["pe"]["all_pass"] and rl["pf"]["n_verified"] == 2
    assert {r["row_id"] for r in read_rows(str(out / "rl/_rejects"))} == {"pb", "pc", "pd"}
    sft = read_rows(str(out / "sft"))
    assert [s["rollout_id"] for s in sft] == ["pa-r0", "pe-r0", "pf-r3"]


def test_same_inputs_same_bytes(project, params_file):
    params_file(params(project, strategies=["best_vs_random", "all_above_margin"]))
    run("a")
    run("b")

    def digests(root):
        return {
            str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*")
            if p.is_file()
        }

    assert digests(project / "a") == digests(project / "b")


def test_bad_benchmark_file_fails_before_work(project, params_file):
    p = params(project)
    p["assemble"]["filters"]["decontaminate"]["files"] = ["nope.jsonl"]
    params_file(p)
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        run()
    assert not (project / "data/datasets").exists()


@pytest.mark.parametrize(
    "section, key, value, message",
    [
        ("pairs", "strategies", ["best_of_n"], "best_of_n"),
        ("aggregate", "rank_weight", 0.6, "rank_weight"),
        ("aggregate", "gates", ["mathanswer"], "mathanswer"),  # a typo of a labeler name
        ("filters", "min_confidence", 2.0, "min_confidence"),
        ("pairs", "max_pairs", 2, "max_pairs"),  # unknown key
    ],
)
def test_config_errors_name_the_key(project, params_file, section, key, value, message):
    p = params(project)
    p["assemble"][section][key] = value
    params_file(p)
    with pytest.raises(ConfigError, match=message):
        run()


@pytest.mark.slow
def test_outputs_do_not_depend_on_buckets_even_with_length_balance(project, params_file):
    """`assemble.buckets` only spreads work: 1, 3 and 8 buckets give the same bytes, balance_length included (it
    runs once over all pairs, not per bucket)."""
    strategies = ["best_vs_worst", "all_above_margin"]
    params_file(params(project, strategies=strategies))
    run("data/plain")
    reward = {r["rollout_id"]: r["reward"] for r in read_rows(str(project / "data/plain/_rewards"))}
    rollouts = project / "data/rollouts/part-00000-of-00001.parquet"
    rows = read_rows(str(rollouts.parent), ROLLOUT_V2)
    for row in rows:  # the better a sample, the longer: every chosen side is the longer one
        row["n_tokens"] = 1 + int(100 * (reward.get(row["rollout_id"]) or 0.0))
    write_table(rows_to_table(rows, ROLLOUT_V2), str(rollouts))
    digests, dropped = [], []
    for buckets in (1, 3, 8):
        p = params(project, strategies=strategies, balance_length=True)
        p["assemble"]["buckets"] = buckets
        params_file(p)
        out = project / f"out-{buckets}"
        run(str(out))
        files = sorted(f for f in out.rglob("*.parquet"))
        digests.append({str(f.relative_to(out)): hashlib.sha256(f.read_bytes()).hexdigest() for f in files})
        dropped.append(sum(r["reason"] == "length_balance" for r in read_rows(str(out / "pairs/_rejects"))))
        pairs = read_rows(str(out / "pairs"))
        longer = sum(r["chosen_n_tokens"] > r["rejected_n_tokens"] for r in pairs)
        assert longer <= len(pairs) - longer  # chosen is the longer side in at most half of the pairs
        counts = json.loads((out / "pairs/_manifest.json").read_text())["counts"]
        assert counts["pairs_written"] == len(pairs)
    assert digests[0] == digests[1] == digests[2]
    assert dropped[0] > 0  # the data needed balancing, so the test means something


def test_the_bucket_steps_pickle(tmp_path):
    """Everything shipped to workers pickles: the step that reads the shards (and finds the prompt flags beside them)
    and the step that assembles a bucket."""
    cfg = assemble.AssembleConfig()
    steps = [
        BucketInputs(cfg.filters, cfg.buckets, str(tmp_path)),
        AssembleBucket(cfg.core(), {}, str(tmp_path)),
    ]
    for step in steps:
        again = pickle.loads(pickle.dumps(step))
        assert type(again) is type(step) and again.__dict__.keys() == step.__dict__.keys()


# --- measured weights: a judge ranks by as much as it agrees with the gate ------------------------------------------

WEIGHED = ("q0", "q1", "q2", "q3", "q4", "q5")  # 4 rollouts each: gate says correct, correct, incorrect, incorrect


def weighed_project(root, panel_agrees: bool) -> None:
    """24 rollouts the gate (math_answer) decides, half right; the panel's verdicts agree with it everywhere or
    nowhere. Within each class its scores order r1 above r0 (and r3 above r2)."""
    rollouts, labels = [], []
    for q, pid in enumerate(WEIGHED):
        for i in range(4):
            rid, correct = f"{pid}-r{i}", i < 2
            rollouts.append({
                "rollout_id": rid, "prompt_id": pid, "task": "math",
                "messages": [{"role": "user", "content": f"Question number {q}: what is {q} plus {q * 7}?"}],
                "reference": "7", "tests": None, "constraints": None, "rubric": None, "split": "train",
                "sample_index": i, "completion": f"answer {i}", "n_tokens": 10, "finish_reason": "stop",
                "logprob_sum": None, "policy": {"name": "m", "fingerprint": "f", "backend": "b"}, "sampling": "{}",
                "seed": i,
            })  # fmt: skip
            base = {"rollout_id": rid, "prompt_id": pid, "aspect": "correctness", "rationale": None, "raw": None}
            labels.append({**base, "labeler": "math_answer", "labeler_version": "2", "score": float(correct),
                           "confidence": 1.0, "verdict": "correct" if correct else "incorrect"})  # fmt: skip
            says = correct if panel_agrees else not correct
            score = (0.6 + 0.2 * (i % 2)) if says else (0.1 + 0.2 * (i % 2))  # r1 above r0, r3 above r2
            labels.append({**base, "labeler": "panel", "labeler_version": "1", "score": score, "confidence": 0.8,
                           "verdict": "correct" if says else "incorrect"})  # fmt: skip
    for folder, schema, data in [
        ("data/rollouts", ROLLOUT_V2, rollouts),
        *((f"data/labels/{n}", LABEL_V1, [x for x in labels if x["labeler"] == n]) for n in ("math_answer", "panel")),
    ]:
        (root / folder).mkdir(parents=True, exist_ok=True)
        write_table(rows_to_table(data, schema), str(root / folder / "part-00000-of-00001.parquet"))


def weighed_params(panel_weight) -> dict:
    p = only_labelers(tiny_params(), ("math_answer", "panel"))
    p.pop("steps")
    p["assemble"]["filters"]["decontaminate"]["files"] = []
    p["assemble"]["filters"]["dedup"].update(exact=False, near_threshold=None)
    p["assemble"]["aggregate"]["weights"] = {"panel": panel_weight}
    return p


@pytest.mark.parametrize(
    "panel_agrees, panel_weight, weight, source, ranks",
    [
        # the shipped default: a panel that contradicts the gate everywhere is weighed 0 and no longer ranks
        (False, "measured", 0.0, "measured", False),
        # an explicit weight wins: the same panel ranks as params say
        (False, 1.0, 1.0, "params", True),
        # a panel that agrees with the gate everywhere is weighed 1 and ranks
        (True, "measured", 1.0, "measured", True),
    ],
)
def test_measured_weights_decide_whether_a_judge_ranks(
    tmp_path, monkeypatch, params_file, panel_agrees, panel_weight, weight, source, ranks
):
    monkeypatch.chdir(tmp_path)
    weighed_project(tmp_path, panel_agrees)
    params_file(weighed_params(panel_weight))
    run()
    rewards = {r["rollout_id"]: r for r in read_rows(str(tmp_path / "data/datasets/_rewards"))}
    for pid in WEIGHED:
        right = [rewards[f"{pid}-r{i}"]["reward"] for i in (0, 1)]
        wrong = [rewards[f"{pid}-r{i}"]["reward"] for i in (2, 3)]
        if ranks:  # the panel's scores order each class
            assert right[1] > right[0] > wrong[1] > wrong[0]
        else:  # only the gate: a tie inside each class
            assert right == [1.0, 1.0] and wrong == [0.0, 0.0]
    for name in ("_rewards", "pairs", "rl", "sft"):
        manifest = json.loads((tmp_path / "data/datasets" / name / "_manifest.json").read_text())
        used = manifest["reward_weights"]["panel"]
        assert (used["weight"], used["source"]) == (weight, source)
        assert manifest["params"]["aggregate"]["weights"] == {"panel": panel_weight}  # params as given
    if source == "measured":
        assert used["rows"] == 24 and used["kappa"] == (1.0 if panel_agrees else -1.0)


def test_a_rubric_set_two_label_stages_grade_against_is_counted_once_per_config(tmp_path):
    """record_spend reads the stages' manifests: the sampling, each label stage, and the rubric set a label stage's
    manifest names (with the spend it copied from rubrics@NAME), once however many label stages read it; prm rests on
    the sampling and the steps alone."""
    from rewardmill.transforms.stage.outputs import write_json_atomic

    def spend(requests: int, cost: float) -> dict:
        return {"requests": requests, "tokens_in": 10 * requests, "tokens_out": requests, "cost_usd": cost}

    def stage(rel: str, manifest: dict) -> str:
        folder = tmp_path / rel
        folder.mkdir(parents=True)
        write_json_atomic(str(folder / "_manifest.json"), manifest)
        return str(folder)

    rubric = {"rubric_set": "ref", "rubric_set_spend": spend(4, 0.4)}
    rollouts = stage("rollouts", {"spend": spend(8, 0.8)})
    labels = {
        "a": stage("labels/a", {"spend": spend(2, 0.2)} | rubric),
        "b": stage("labels/b", {"spend": spend(3, 0.3)} | rubric),
        "rule": stage("labels/rule", {"spend": spend(0, 0.0)}),
    }
    steps = {"mc": stage("steps/mc", {"spend": spend(5, 0.5)})}
    out = tmp_path / "datasets"
    manifests = {name: {"rows": 4} for name in ("pairs", "prm")}
    for name in manifests:
        (out / name).mkdir(parents=True)
    assemble.record_spend(str(out), manifests, rollouts, labels, steps)
    pairs = json.loads((out / "pairs/_manifest.json").read_text())["spend"]
    assert set(pairs["stages"]) == {"rollouts", "label@a", "label@b", "label@rule", "rubrics@ref"}
    assert pairs["total"]["requests"] == 8 + 2 + 3 + 0 + 4 and pairs["per_row"]["cost_usd"] == pytest.approx(1.7 / 4)
    prm = json.loads((out / "prm/_manifest.json").read_text())["spend"]
    assert set(prm["stages"]) == {"rollouts", "steps@mc"} and prm["total"]["requests"] == 13
