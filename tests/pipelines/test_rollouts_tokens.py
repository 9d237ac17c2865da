"""`rollouts.keep_tokens` on the real default model (transformers): every assistant turn records the token ids it was
fed and drew, and each drawn token's raw logprob, exactly: a trainer that feeds `prompt_token_ids + token_ids` to the
policy gets back `token_logprobs` (the importance-weight check), with no re-tokenizing of the chat. Single turns and
feedback episodes; off, nothing changes. The vLLM backend's capture is checked in
tests/transforms/sampling/test_vllm_backend.py."""

import json

import pytest

from rewardmill.pipelines.rollouts import RolloutsConfig
from rewardmill.transforms.io.parquet import read_rows
from rewardmill.transforms.sampling.transformers_generate import load_policy, turn_texts
from tests.pipelines.stage_data import make_prompts
from tests.pipelines.test_rollouts_environment import run_stage

pytestmark = pytest.mark.model


@pytest.fixture
def inputs(tmp_path, params_file, policy_dir):
    from tests.conftest import tiny_params

    params = tiny_params()
    params["prompts"]["sources"] = params["prompts"]["sources"][:1]
    params["prompts"]["sources"][0].update(count=2)
    params["rollouts"].update(n=2, max_new_tokens=12, batch_size=4, keep_tokens=True)
    prompts = make_prompts(tmp_path, params_file, params)
    return params, prompts, policy_dir


def teacher_forced(policy, prompt_ids: list[int], drawn: list[int]) -> list[float]:
    """The policy's raw logprob of each drawn token after `prompt_ids` and the tokens drawn before it."""
    import torch

    ids = torch.tensor([prompt_ids + drawn])
    with torch.inference_mode():
        logits = policy.model(ids).logits[0, len(prompt_ids) - 1 : -1].float()
    return torch.log_softmax(logits, -1).gather(1, torch.tensor(drawn)[:, None])[:, 0].tolist()


def check_turns(rows: list[dict], policy) -> int:
    """Every assistant turn's capture against the policy: returns how many turns were checked."""
    checked = 0
    for row in rows:
        before = []  # the conversation the turn continued: the prompt, then the episode's earlier turns
        logprob_sum = 0.0
        for turn in row["turns"]:
            if turn["role"] != "assistant":
                before.append({"role": turn["role"], "content": turn["content"]})
                continue
            ids, logprobs = turn["token_ids"], turn["token_logprobs"]
            assert len(ids) == len(logprobs) == turn["n_tokens"] > 0, turn
            text = turn_texts(policy.tokenizer, [row["messages"] + before], None, [len(row["messages"])])[0]
            fed = policy.tokenizer(text, add_special_tokens=False)["input_ids"]
            assert turn["prompt_token_ids"] == fed  # exactly what the policy was fed for this turn
            assert policy.tokenizer.decode(ids, skip_special_tokens=True).strip() == turn["content"]
            assert teacher_forced(policy, fed, ids) == pytest.approx(logprobs, abs=2e-3)
            logprob_sum += sum(logprobs)
            before.append({"role": "assistant", "content": turn["content"]})
            checked += 1
        assert row["logprob_sum"] == pytest.approx(logprob_sum, abs=1e-6)  # the row's sum is over the same tokens
    return checked


def test_single_turn_samples_keep_what_was_fed_and_drawn(tmp_path, params_file, inputs):
    params, prompts, model = inputs
    cache = tmp_path / "cache"
    out = run_stage(tmp_path, params_file, params, prompts, model, "tokens", cache)
    rows = read_rows(str(out))
    assert json.loads((out / "_manifest.json").read_text())["schema"] == "rollout_v3"
    assert all(len(r["turns"]) == 1 and r["turns"][0]["content"] == r["completion"] for r in rows)
    assert check_turns(rows, load_policy(str(model))) == len(rows) == 4
    again = run_stage(tmp_path, params_file, params, prompts, model, "again", cache)  # from the cache: same bytes
    assert (out / "part-00000-of-00001.parquet").read_bytes() == (again / "part-00000-of-00001.parquet").read_bytes()

    # off: ROLLOUT_V2 as before, and the same samples under other ids (token capture is part of the identity)
    params["rollouts"]["keep_tokens"] = False
    plain = read_rows(str(run_stage(tmp_path, params_file, params, prompts, model, "plain", cache)))
    assert "turns" not in plain[0]
    assert sorted(r["completion"] for r in plain) == sorted(r["completion"] for r in rows)
    assert not {r["rollout_id"] for r in plain} & {r["rollout_id"] for r in rows}


def test_every_turn_of_an_episode_keeps_its_own_tokens(tmp_path, params_file, inputs):
    params, prompts, model = inputs
    params["rollouts"]["environment"] = {"name": "feedback", "config": {"max_attempts": 3}, "max_turns": 3}
    rows = read_rows(str(run_stage(tmp_path, params_file, params, prompts, model, "episodes")))
    assert check_turns(rows, load_policy(str(model))) >= len(rows)
    for row in rows:  # feedback and tool messages are not the policy's: no tokens of their own
        assert all(t["token_ids"] is None for t in row["turns"] if t["role"] != "assistant")


def test_a_served_policy_cannot_keep_tokens():
    with pytest.raises(ValueError, match="keep_tokens: a served policy"):
        RolloutsConfig(backend="openai", keep_tokens=True)
