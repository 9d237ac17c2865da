"""The vLLM backend on vLLM's CPU build with the real default model (one engine per session), plus its pure
mappings. The same code runs on the GPU build."""

import math
import pickle
from types import SimpleNamespace

import pytest

from rewardmill.transforms.sampling.params import SamplingParams, prompt_seed
from rewardmill.transforms.sampling.transformers_generate import chat_texts, load_policy
from rewardmill.transforms.sampling.vllm_backend import VLLMPolicyHandler, to_samples, vllm_sampling_kwargs
from rewardmill.transforms.sampling.vllm_engine import engine_kwargs, prompt_token_ids, token_prompts

SP = SamplingParams(n=3, temperature=0.8, top_p=0.95, max_new_tokens=12, seed=7)


def prompt(i: int) -> dict:
    return {"prompt_id": f"p{i}", "messages": [{"role": "user", "content": f"What is {i} + {i}? Answer briefly."}]}


def test_sampling_kwargs_map_every_field_and_seed_per_prompt():
    sp = SamplingParams(n=3, temperature=0.7, top_p=0.9, top_k=0, max_new_tokens=64, seed=5)
    kwargs = vllm_sampling_kwargs(sp, "pid")
    assert kwargs == {
        "n": 3,
        "temperature": 0.7,
        "top_p": 0.9,
        "top_k": 0,
        "max_tokens": 64,
        "seed": prompt_seed(5, "pid"),
        "logprobs": 0,
    }
    assert vllm_sampling_kwargs(sp, "other")["seed"] != kwargs["seed"]


def test_to_samples_orders_by_index_and_maps_finish_reason():
    # vLLM's RequestOutput fields, built by hand: only the index/finish-reason mapping is under test here
    out = SimpleNamespace(
        outputs=[
            SimpleNamespace(index=1, text=" b ", token_ids=[1, 2, 3], cumulative_logprob=-3.0, finish_reason="length"),
            SimpleNamespace(index=0, text="a", token_ids=[4], cumulative_logprob=-0.5, finish_reason="stop"),
        ]
    )
    samples = to_samples(out, seed=9)
    assert [(s.index, s.completion, s.n_tokens, s.finish_reason, s.logprob_sum, s.seed) for s in samples] == [
        (0, "a", 1, "stop", -0.5, 9),
        (1, "b", 3, "length", -3.0, 9),
    ]


def test_cpu_defaults_are_float32_eager_and_user_settings_win():
    assert engine_kwargs({}) == {"dtype": "float32", "enforce_eager": True, "enable_chunked_prefill": False, "seed": 0}
    assert engine_kwargs({"dtype": "bfloat16", "max_model_len": 512})["dtype"] == "bfloat16"


def test_prompt_token_ids_never_add_a_second_bos(policy_dir):
    """A chat template that starts with BOS (Llama 3, Mistral) and a tokenizer that adds BOS: tokenizing the
    templated text the default way doubles it (what vLLM does to a text prompt); ours keeps one, as transformers'."""
    from tokenizers.processors import TemplateProcessing
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(policy_dir)
    bos = tok.bos_token
    tok.chat_template = "{{ bos_token }}" + tok.chat_template
    tok._tokenizer.post_processor = TemplateProcessing(single=f"{bos} $A", special_tokens=[(bos, tok.bos_token_id)])
    text = chat_texts(tok, [prompt(1)["messages"]])[0]
    ids = prompt_token_ids(tok, [text])[0]
    assert ids.count(tok.bos_token_id) == text.count(bos)  # one BOS token for every BOS the template wrote
    assert tok(text)["input_ids"] == [tok.bos_token_id] + ids  # the default way adds one more: the bug guarded
    assert token_prompts(tok, [text]) == [{"prompt_token_ids": ids}]


def test_handler_uses_the_shared_engine_pickles_and_is_batch_independent(vllm_engine, policy_dir):
    handler = VLLMPolicyHandler(str(policy_dir), SP, {})
    assert handler.load_model() is vllm_engine  # one engine per process and settings
    restored = pickle.loads(pickle.dumps(handler))
    prompts = [prompt(i) for i in range(3)]
    together = list(handler.run_inference([prompts], vllm_engine))[0]
    apart = [pair for p in reversed(prompts) for pair in list(restored.run_inference([[p]], vllm_engine))[0]]

    def by_key(pairs):
        return {(p["prompt_id"], s.index): s for p, s in pairs}

    def tokens(pairs):  # what a sample is, beside the float sum of its logprobs
        return {k: (s.completion, s.n_tokens, s.finish_reason, s.seed) for k, s in by_key(pairs).items()}

    assert len(together) == 3 * SP.n
    assert tokens(together) == tokens(apart)  # per-request seeds: batch mates and order change no token
    # ...but other batch shapes sum the logprobs in another order (seen: 1e-5 apart); the same batches are stable
    for key, sample in by_key(apart).items():
        assert sample.logprob_sum == pytest.approx(by_key(together)[key].logprob_sum, abs=1e-3)
    again = list(handler.run_inference([prompts], vllm_engine))[0]
    assert by_key(again) == by_key(together)
    texts = {s.completion for s in by_key(together).values()}
    assert len(texts) > 1  # real sampling, not one greedy answer repeated
    for s in by_key(together).values():
        assert 1 <= s.n_tokens <= SP.max_new_tokens and s.finish_reason in ("stop", "length")
        assert s.logprob_sum < 0 and math.isfinite(s.logprob_sum)
        assert s.seed == prompt_seed(SP.seed, "p0") or s.seed in {prompt_seed(SP.seed, f"p{i}") for i in range(3)}


def test_vllm_sees_the_transformers_prompt_tokens_and_reports_raw_logprobs(vllm_engine, policy_dir):
    """Both backends feed the same prompt ids, and vLLM's cumulative logprob is the raw (untempered) log-likelihood
    of the sampled tokens under the policy that transformers computes."""
    import torch
    from vllm import SamplingParams as VLLMSamplingParams

    policy = load_policy(str(policy_dir))
    text = chat_texts(policy.tokenizer, [prompt(2)["messages"]])[0]
    expected = policy.tokenizer(text, add_special_tokens=False)["input_ids"]
    params = VLLMSamplingParams(**vllm_sampling_kwargs(SP, "p2"))
    out = vllm_engine.generate(token_prompts(vllm_engine.get_tokenizer(), [text]), [params], use_tqdm=False)[0]
    assert list(out.prompt_token_ids) == expected
    sample = out.outputs[0]
    ids = torch.tensor([expected + list(sample.token_ids)])
    with torch.inference_mode():
        logits = policy.model(ids).logits[0, len(expected) - 1 : -1].float()
    raw = torch.log_softmax(logits, -1).gather(1, torch.tensor(sample.token_ids)[:, None]).sum().item()
    assert sample.cumulative_logprob == pytest.approx(raw, abs=1e-2)


def test_keep_tokens_records_what_vllm_fed_and_drew(vllm_engine, policy_dir):
    """rollouts.keep_tokens on vLLM: each sample's prompt ids are the transformers tokenization (one chat format for
    both), its drawn ids decode to its text, and the per-token logprobs are the sampled tokens' raw ones, summing to
    vLLM's cumulative logprob. Single samples and an episode's turns (generate_vllm_turns) alike."""
    from dataclasses import replace

    from rewardmill.transforms.sampling.vllm_backend import generate_vllm, generate_vllm_turns

    policy = load_policy(str(policy_dir))
    keep = replace(SP, keep_tokens=True)
    messages = [prompt(i)["messages"] for i in range(2)]
    singles = [s for per in generate_vllm(vllm_engine, messages, ["p0", "p1"], keep) for s in per]
    turns = generate_vllm_turns(vllm_engine, messages, [11, 12], keep, None)
    texts = chat_texts(policy.tokenizer, messages)
    for i, s in enumerate([*singles, *turns]):
        fed = policy.tokenizer(texts[i // SP.n if i < len(singles) else i - len(singles)], add_special_tokens=False)
        assert s.tokens["prompt_ids"] == fed["input_ids"]
        assert len(s.tokens["completion_ids"]) == len(s.tokens["logprobs"]) == s.n_tokens
        assert policy.tokenizer.decode(s.tokens["completion_ids"], skip_special_tokens=True).strip() == s.completion
        assert sum(s.tokens["logprobs"]) == pytest.approx(s.logprob_sum, abs=1e-4)
    assert all(s.tokens is None for per in generate_vllm(vllm_engine, messages[:1], ["p0"], SP) for s in per)


def test_a_batch_larger_than_one_engine_step_keeps_its_seeds(vllm_engine, policy_dir):
    """More prompt tokens than one engine step takes (4096): with chunked prefill, vLLM's CPU build killed its engine
    ("CPU Generator does not use offset") when it cut a seeded prompt; the CPU defaults turn it off. The 40 prompts
    alone are over 4096 tokens; two samples each (not more: every sample is prefilled again) check the seeds."""
    from rewardmill.transforms.sampling.vllm_backend import generate_vllm

    sp = SamplingParams(n=2, temperature=0.8, top_p=0.95, max_new_tokens=2, seed=1)
    long = [{"role": "user", "content": f"Problem {i}: " + "add the numbers one and two, " * 12} for i in range(40)]
    samples = generate_vllm(vllm_engine, [[m] for m in long], [f"p{i}" for i in range(40)], sp)
    assert len(samples) == 40 and all(len(per) == 2 for per in samples)
    alone = generate_vllm(vllm_engine, [[long[7]]], ["p7"], sp)[0]
    assert [s.completion for s in alone] == [s.completion for s in samples[7]]  # its seeds held in the big batch
