"""TransformersJudgeClient on the real default model (SmolLM2-135M-Instruct, CPU, float32)."""

import dataclasses
import pickle

import pytest

from rewardmill.transforms.judges.client import JudgeRequest, Sampling
from rewardmill.transforms.sampling.policy import FINGERPRINT_FILE, model_identity, read_policy_info

RATE = "Rate the answer '4' to 'What is 2+2?' from 1 to 5. Reply with one digit."
SHORT = Sampling(max_tokens=6)


def ask(content: str, sampling: Sampling = SHORT) -> JudgeRequest:
    return JudgeRequest(({"role": "user", "content": content},), sampling)


def test_greedy_is_deterministic_whatever_the_batch_and_counts_tokens(local_judge):
    tok = local_judge._load().tokenizer
    request = ask("What is 2+2? Answer briefly.", Sampling(max_tokens=8))
    before = local_judge.usage()
    first = local_judge.complete([request])[0]
    again = local_judge.complete([ask("Say hi", request.sampling), request])[1]  # a batch mate, other padding
    after = local_judge.usage()

    assert first.error is None and first.text and not first.cached
    assert again == first
    prompt = tok.apply_chat_template(list(request.messages), add_generation_prompt=True, tokenize=False)
    assert first.prompt_tokens == len(tok(prompt, add_special_tokens=False)["input_ids"])
    assert 0 < first.completion_tokens <= 8
    if first.completions[0].finish_reason == "length":
        assert first.completion_tokens == 8
    assert after["requests"] - before["requests"] == 3
    assert after["prompt_tokens"] - before["prompt_tokens"] > 2 * first.prompt_tokens
    assert after["completion_tokens"] - before["completion_tokens"] > 2 * first.completion_tokens


def test_greedy_n_repeats_the_one_greedy_answer(local_judge):
    one, two = local_judge.complete([ask("Say hi"), ask("Say hi", Sampling(max_tokens=6, n=2))])
    assert two.completions == one.completions * 2
    assert two.completion_tokens == 2 * one.completion_tokens and two.prompt_tokens == one.prompt_tokens
    assert one.completions[0].logprobs is None  # not asked for


def test_top_logprobs_are_the_raw_next_token_distribution(local_judge):
    import torch

    greedy, hot = local_judge.complete(
        [
            ask(RATE, Sampling(max_tokens=3, top_logprobs=5)),
            ask(RATE, Sampling(temperature=1.5, top_p=0.5, max_tokens=3, top_logprobs=5, seed=1)),
        ]
    )
    positions = greedy.completions[0].logprobs
    stopped = greedy.completions[0].finish_reason == "stop"
    assert positions is not None and len(positions) == greedy.completion_tokens - stopped  # the stop token is no text
    for position in positions:
        values = list(position.top.values())
        assert values == sorted(values, reverse=True) and 1 <= len(values) <= 5
        assert position.logprob <= 0 and all(v <= 0 for v in values)
        assert next(iter(position.top)) == position.token  # greedy takes the best token...
        assert position.top[position.token] == pytest.approx(position.logprob)  # ...and reports its logprob
    assert "".join(p.token for p in positions).strip() == greedy.text
    # The first position sees the same prompt whatever the sampling: temperature and top_p do not warp it.
    assert hot.completions[0].logprobs[0].top == pytest.approx(positions[0].top, abs=1e-4)

    policy = local_judge._load()
    text = policy.tokenizer.apply_chat_template(
        [{"role": "user", "content": RATE}], add_generation_prompt=True, tokenize=False
    )
    with torch.inference_mode():
        logits = policy.model(**policy.tokenizer(text, return_tensors="pt", add_special_tokens=False)).logits[0, -1]
    values, indices = torch.log_softmax(logits, -1).topk(5)
    expected = {policy.tokenizer.decode([i]): v for i, v in zip(indices.tolist(), values.tolist(), strict=True)}
    assert positions[0].top == pytest.approx(expected, abs=1e-4)


def test_seeded_samples_are_reproducible_and_independent_of_batch_mates(local_judge):
    sampling = Sampling(temperature=1.0, max_tokens=6, n=3, seed=7)
    target = ask("Describe the sea in a few words.", sampling)
    alone = local_judge.complete([target])[0]
    mates = [ask("Say hi", sampling), ask("Name a fruit.", dataclasses.replace(sampling, n=2, seed=3))]
    batched = local_judge.complete([mates[0], target, mates[1]])[1]  # one generate call of 8 rows

    assert len(alone.completions) == 3 and alone.completion_tokens > 0
    assert batched.completions == alone.completions
    assert len({c.text for c in alone.completions}) > 1  # n samples, not n copies
    reseeded = local_judge.complete([ask("Describe the sea in a few words.", dataclasses.replace(sampling, seed=8))])
    assert reseeded[0].completions != alone.completions


def test_a_malformed_conversation_fails_alone(local_judge):
    broken = JudgeRequest(({"role": "user"},), Sampling(max_tokens=4))  # no content: the chat template raises
    bad, good = local_judge.complete([broken, ask("Say hi")])
    assert bad.completions == () and bad.error.startswith("UndefinedError") and bad.text is None
    assert good.error is None and good.text


def test_pickles_without_the_model_and_reloads_lazily(local_judge):
    request = ask("Say hi")
    expected = local_judge.complete([request])
    copy = pickle.loads(pickle.dumps(local_judge))
    assert copy._policy is None and copy.model_id == local_judge.model_id and copy.usage()["requests"] == 0
    assert copy.complete([request]) == expected


def test_model_id_is_the_folder_fingerprint(policy_dir, tmp_path):
    fingerprint = read_policy_info(policy_dir).fingerprint
    assert model_identity(str(policy_dir)) == fingerprint
    for path in policy_dir.iterdir():  # the same files without rewardmill_policy.json: fingerprinted directly
        if path.name != FINGERPRINT_FILE:
            (tmp_path / path.name).symlink_to(path)
    assert model_identity(str(tmp_path)) == fingerprint
    assert model_identity(str(policy_dir), "bfloat16") == f"{fingerprint}|bfloat16"  # dtype changes judgments
    assert model_identity("HuggingFaceTB/SmolLM2-135M-Instruct") == "HuggingFaceTB/SmolLM2-135M-Instruct"


def test_batch_invariant_judgments_are_exact_functions_of_the_request(policy_dir):
    """backend.batch_invariant: a judgment's logprobs are the same to the last bit alone and among batch mates of
    other lengths (batched, their padding moves them in the 5th digit), and the cache keys them apart."""
    from rewardmill.transforms.judges.client import BackendConfig
    from rewardmill.transforms.judges.transformers_client import TransformersJudgeClient

    config = BackendConfig(kind="transformers", model=str(policy_dir), batch_invariant=True)
    judge = TransformersJudgeClient(config)
    target = ask(RATE, Sampling(max_tokens=3, top_logprobs=5))
    mates = [ask("Say hi", target.sampling), ask("A much longer question about the sea and its tides?", SHORT)]
    alone = judge.complete([target])[0]
    batched = judge.complete([mates[0], target, mates[1]])[1]
    assert batched == alone and alone.completions[0].logprobs
    plain = TransformersJudgeClient(dataclasses.replace(config, batch_invariant=False))
    assert judge.model_id == plain.model_id + "|batch-invariant"
