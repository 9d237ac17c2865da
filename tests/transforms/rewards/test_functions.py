"""transforms/rewards (rewardmill.rewards): labelers as TRL reward functions, called the way GRPOTrainer calls them."""

import json
import pickle

import pytest

from rewardmill.rewards import LabelerReward, MissingColumns, from_params
from rewardmill.rewards.functions import completion_text, labeler_inputs, prompt_messages, reward_of
from rewardmill.transforms.config import ConfigError
from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.cache import LabelCache, record_key
from rewardmill.transforms.labelers.math_answer import MathAnswerVerifier
from tests.conftest import tiny_params

ADD_TESTS = json.dumps({"style": "asserts", "asserts": ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]})
RIGHT_CODE = "```python\ndef add(a, b):\n    return a + b\n```"
WRONG_CODE = "```python\ndef add(a, b):\n    return a - b\n```"


def said(text: str) -> list[dict]:  # a conversational completion, as GRPOTrainer hands it over
    return [{"role": "assistant", "content": text}]


def grpo_batch() -> dict:
    """Four completions of a math prompt and a code prompt, with the rl config's columns and TRL's extras."""
    metrics, extra = {}, {}
    return {
        "prompts": [[{"role": "user", "content": "What is 2+3?"}]] * 2 + [[{"role": "user", "content": "add"}]] * 2,
        "completions": [said("The answer is $5$."), said("I think $6$."), said(RIGHT_CODE), said(WRONG_CODE)],
        "completion_ids": [[1, 2], [3], [4, 5, 6], [7]],
        "task": ["math", "math", "code", "code"],
        "reference": ["5", "5", None, None],
        "tests": [None, None, ADD_TESTS, ADD_TESTS],
        "constraints": [None] * 4,
        "trainer_state": object(),
        "log_metric": lambda name, value: metrics.__setitem__(name, value),
        "log_extra": lambda column, values: extra.__setitem__(column, values),
        "_logged": (metrics, extra),
    }


def call(reward, batch: dict) -> list:
    return reward(**{k: v for k, v in batch.items() if not k.startswith("_")})


MULTI_TURN = [
    {"role": "assistant", "content": "\\boxed{42}", "tool_calls": [{"type": "function", "function": {"name": "python",
                                                                   "arguments": {"code": "print(6*7)"}}}]},
    {"role": "tool", "name": "python", "content": "42"},
    {"role": "assistant", "content": "\\boxed{41}"},
]  # fmt: skip


@pytest.mark.parametrize(
    "completion, text",
    [
        ("plain text", "plain text"),  # standard format: the string itself
        (said("hi"), "hi"),  # conversational: the assistant's content
        ([{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "image"}]}], "a"),  # parts
        ([{"role": "tool", "content": "x"}, {"role": "assistant", "content": "y"}], "y"),  # only assistant turns
        ([], ""),  # nothing generated
        # multi-turn, as TRL passes tool calling: the final answer, not every turn's text joined (an answer given
        # early and taken back later must not be what a verifier reads)
        (MULTI_TURN, "\\boxed{41}"),
        ([*MULTI_TURN, {"role": "tool", "content": "late"}], ""),  # ends on a tool result: no final answer yet
        ([said("a")[0], said("b")[0]], "ab"),  # one turn in two assistant parts: joined, as before
    ],
)
def test_completion_text(completion, text):
    assert completion_text(completion) == text


def test_a_multi_turn_completion_is_scored_by_its_final_answer_and_turn_labelers_read_its_turns():
    labeler = MathAnswerVerifier()
    (values,) = labeler_inputs(labeler.reads, ["q"], [MULTI_TURN], None, {"reference": ["42"]})
    assert labeler.label(*values).verdict == "incorrect"  # the 42 of turn 1 was taken back
    (turns,) = labeler_inputs(("turns",), ["q"], [MULTI_TURN], None, {})
    assert turns[0] == MULTI_TURN and labeler_inputs(("turns",), ["q"], ["text"], None, {}) == [(None,)]


def test_prompt_messages_and_inputs_follow_the_rollouts_columns():
    assert prompt_messages("q") == [{"role": "user", "content": "q"}]
    values = labeler_inputs(
        ("completion", "reference", "n_tokens", "messages"),
        ["q"],
        [said("a")],
        [[1, 2, 3]],
        {"reference": ["r"]},
    )
    assert values == [("a", "r", 3, [{"role": "user", "content": "q"}])]
    with pytest.raises(MissingColumns):
        labeler_inputs(("completion", "tests"), ["q"], ["a"], None, {"reference": ["r"]})


@pytest.fixture(scope="module")
def rewards(tmp_path_factory):
    params = tiny_params()
    cache = tmp_path_factory.mktemp("cache")
    funcs = from_params(params, ["math_answer", "code_tests"], cache=str(cache))
    yield {f.name: f for f in funcs}, cache
    for f in funcs:
        f.close()


def test_rewards_are_the_labelers_scores_and_none_where_they_do_not_apply(rewards):
    funcs, _ = rewards
    batch = grpo_batch()
    math, code = call(funcs["math_answer"], batch), call(funcs["code_tests"], batch)
    assert math == [1.0, 0.0, None, None]  # code rows are not math_answer's task
    assert code == [None, None, 1.0, 0.0]  # the sandboxed tests ran the code
    direct = MathAnswerVerifier(funcs["math_answer"].config)
    try:
        assert [direct.label("The answer is $5$.", "5").score, direct.label("I think $6$.", "5").score] == math[:2]
    finally:
        direct.teardown()
    metrics, extra = batch["_logged"]
    assert metrics["code_tests/scored"] == 0.5
    assert extra["code_tests_verdict"] == ["not_applicable", "not_applicable", "correct", "incorrect"]
    assert funcs["math_answer"].__name__ == "math_answer"  # TRL logs rewards/<__name__>/mean


def test_a_row_the_labeler_cannot_label_is_none_not_zero(rewards):
    funcs, _ = rewards
    batch = grpo_batch()
    batch["reference"] = [None, "5", None, None]  # a math prompt without a reference: math_answer abstains
    batch["tests"] = [None, None, None, "{not json"]  # no tests: abstain; malformed tests: error
    assert call(funcs["math_answer"], batch) == [None, 0.0, None, None]
    assert call(funcs["code_tests"], batch) == [None, None, None, None]


def test_labels_are_cached_under_the_label_stage_key(rewards):
    funcs, cache = rewards
    math = funcs["math_answer"]
    call(math, grpo_batch())
    hits = math._cache.hits
    assert call(math, grpo_batch()) == [1.0, 0.0, None, None]
    assert math._cache.hits == hits + 2  # both math rows came from the cache
    # the label stage's own cache (same root, labeler class and config, record key of the values it reads) has them
    stage_cache = LabelCache(str(cache), MathAnswerVerifier, math.config)
    assert stage_cache.get(record_key(("The answer is $5$.", "5"))).score == 1.0


def test_reward_functions_pickle_and_work_after_a_round_trip(rewards):
    funcs, _ = rewards
    for func in funcs.values():
        call(func, grpo_batch())  # built its labeler, sandbox and cache
        copy = pickle.loads(pickle.dumps(func))
        try:
            assert copy.__name__ == func.__name__ and call(copy, grpo_batch()) == call(func, grpo_batch())
        finally:
            copy.close()


def test_a_labeler_that_needs_columns_the_dataset_lacks_fails_clearly(rewards):
    funcs, _ = rewards
    batch = grpo_batch()
    del batch["tests"]
    with pytest.raises(MissingColumns, match=r"'code_tests'.*reads \['tests'\].*does not have"):
        call(funcs["code_tests"], batch)
    with pytest.raises(MissingColumns, match="tests"):
        funcs["code_tests"].check_columns(["prompt", "reference", "task"])
    funcs["math_answer"].check_columns(["prompt", "reference", "task"])  # math_answer has what it reads


def test_from_params_reads_a_params_file_and_names_bad_keys(tmp_path):
    params = tiny_params()
    path = tmp_path / "params.yaml"
    path.write_text(json.dumps(params))  # JSON is YAML
    gates = from_params(path)  # no names: the rule verifiers assemble gates on
    assert [f.name for f in gates] == params["assemble"]["aggregate"]["gates"]
    assert gates[0].cache_dir == str(tmp_path / params["cache"]["root"] / "labels")  # beside the params file
    assert isinstance(gates[0], LabelerReward) and from_params(path, "math_answer", cache=False)[0].cache_dir is None
    with pytest.raises(ConfigError, match=r"\['nope'\] not under 'labelers'"):
        from_params(path, ["nope"])
    params["labelers"]["math_answer"]["config"]["typo"] = 1
    with pytest.raises(ConfigError, match="typo"):
        from_params(params, ["math_answer"])


def test_a_group_labeler_votes_within_each_prompts_generations(tmp_path):
    """self_consistency as a GRPO reward (TTRL): each prompt's completions in the batch vote on a pseudo-reference;
    the prompts have no reference."""
    params = tiny_params()
    params["labelers"]["sc"] = {"labeler": "self_consistency", "config": {}}
    (sc,) = from_params(params, ["sc"], cache=str(tmp_path))
    ask = [[{"role": "user", "content": "What is 4 + 5?"}]] * 3 + [[{"role": "user", "content": "What is 1 + 1?"}]] * 3
    answers = ["$9$", "$9$", "$8$", "$2$", "$3$", "$4$"]
    batch = {"prompts": ask, "completions": [said(a) for a in answers], "reference": [None] * 6, "task": ["math"] * 6}
    try:
        assert sc(**batch) == [1.0, 1.0, 0.0, None, None, None]  # the second prompt has no majority
        assert sc(**batch) == [1.0, 1.0, 0.0, None, None, None] and sc._cache.hits == 6  # the same group: cached
    finally:
        sc.close()


@pytest.mark.slow  # the prompts stage, and reasoning-gym's first import
def test_a_labeler_that_reads_a_prompts_metadata_finds_it_in_the_prompts_folder(tmp_path, params_file):
    """The card's GRPO snippet passes `prompts="data/prompts"`: the reasoning_gym labeler, whose scorer needs the
    task's entry (the prompt's metadata), scores the `rl` rows' completions by their prompt_id, as the label stage
    scores the rollouts; without the folder it names what is missing."""
    from rewardmill.transforms.io.parquet import read_rows
    from rewardmill.transforms.labelers.reasoning_gym import ReasoningGymVerifier
    from tests.pipelines.stage_data import make_prompts

    params = tiny_params()
    params["prompts"]["sources"] = [{"name": "rg", "kind": "reasoning_gym", "tasks": {"gcd": {"count": 3}}}]
    params["labelers"] = {"rg": {"labeler": "reasoning_gym", "tasks": ["reasoning"]}}
    prompts = make_prompts(tmp_path, params_file, params)
    rows = read_rows(str(prompts))
    completions = [f"<answer>{r['reference']}</answer>" if i % 2 else "<answer>0</answer>" for i, r in enumerate(rows)]
    columns = {k: [r[k] for r in rows] for k in ("prompt_id", "task", "reference")}  # as the `rl` rows have them
    (reward,) = from_params(params, ["rg"], cache=False, prompts=str(prompts))
    got = reward([r["messages"] for r in rows], completions, **columns)
    direct = ReasoningGymVerifier()
    expected = [
        direct.label(c, r["reference"], r["messages"], r["metadata"]).score
        for c, r in zip(completions, rows, strict=True)
    ]
    assert got == expected and set(got) == {0.0, 1.0}
    (bare,) = from_params(params, ["rg"], cache=False)
    with pytest.raises(MissingColumns, match=r"reads \['metadata'\].*prompts='data/prompts'"):
        bare([r["messages"] for r in rows], completions, **columns)


@pytest.mark.parametrize(
    ("labels", "reward"),
    [
        # a rubric judge's whole score is the reward; its criteria (parts) would pull the mean up to 0.8 if counted
        ([("rubric", 0.2), ("rubric:c1", 1.0), ("rubric:c2", 1.0)], 0.2),
        # a multi-head reward model: the mean of its whole heads
        ([("helpful", 0.2), ("honest", 0.6)], 0.4),
        # only parts were scored: nothing to reward, not a part's score
        ([("rubric", None), ("rubric:c1", 1.0)], None),
    ],
)
def test_reward_of_reads_whole_aspects_only(labels, reward):
    result = [Label(s, 1.0, "abstain" if s is None else "correct", aspect=a) for a, s in labels]
    assert reward_of(result) == (pytest.approx(reward) if reward is not None else None)
