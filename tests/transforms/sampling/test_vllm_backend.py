"""vLLM cannot run on this CPU-only machine, so its output objects are plain stand-ins with vLLM's field names
(RequestOutput.outputs[i].index/text/token_ids/cumulative_logprob/finish_reason); the GPU run is in the README."""

from types import SimpleNamespace

from rewardmill.transforms.sampling.params import SamplingParams, prompt_seed
from rewardmill.transforms.sampling.vllm_backend import to_samples, vllm_sampling_kwargs


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
