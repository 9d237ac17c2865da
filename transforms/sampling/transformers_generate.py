"""Seeded generation on a local transformers model: load a policy folder, format chat prompts, and draw n samples per
prompt in one `generate` call (sample j of prompt p seeded by (seed, p, j)). No Beam: the rollouts stage's handler
(transformers_backend.py), the judges' local client and step continuations all generate here.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewardmill.transforms.judges.untrusted import neutral_message, tokenizer_specials
from rewardmill.transforms.sampling.params import Sample, SamplingParams, sample_seed
from rewardmill.transforms.sampling.seeded import SeededSampler


@dataclass
class LoadedPolicy:
    model: Any
    tokenizer: Any
    eos_token_ids: list[int]


def load_policy(model_dir: str, device: str = "cpu") -> LoadedPolicy:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rewardmill.transforms.sampling.policy import local_model

    model_dir = local_model(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.padding_side = "left"  # decoder-only models continue from the right edge
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32 if device == "cpu" else "auto")
    model.to(device).eval()
    eos = model.generation_config.eos_token_id
    eos_ids = sorted({*([eos] if isinstance(eos, int) else (eos or [])), tokenizer.eos_token_id})
    return LoadedPolicy(model=model, tokenizer=tokenizer, eos_token_ids=eos_ids)


def chat_texts(tokenizer, conversations: Sequence[list[dict[str, str]]]) -> list[str]:
    return [tokenizer.apply_chat_template(list(m), add_generation_prompt=True, tokenize=False) for m in conversations]


def generate_samples(
    policy: LoadedPolicy, conversations: Sequence[list[dict[str, str]]], prompt_ids: Sequence[str], sp: SamplingParams
) -> list[list[Sample]]:
    """n samples for each conversation in one `generate` call; sample j of prompt p is seeded by (seed, p, j)."""
    return generate_from_texts(policy, chat_texts(policy.tokenizer, conversations), prompt_ids, sp)


def generate_from_texts(
    policy: LoadedPolicy, texts: Sequence[str], seed_keys: Sequence[str], sp: SamplingParams, strip: bool = True
) -> list[list[Sample]]:
    """n samples for each already formatted prompt text (a chat prompt, or one plus the start of an answer to
    continue); sample j of text t is seeded by (seed, seed_keys[t], j)."""
    seeds = [sample_seed(sp.seed, key, j) for key in seed_keys for j in range(sp.n)]
    flat = sample_texts(policy, [t for t in texts for _ in range(sp.n)], seeds, sp, strip)
    return [
        [Sample(**{**vars(s), "index": j}) for j, s in enumerate(flat[p * sp.n : (p + 1) * sp.n])]
        for p in range(len(texts))
    ]


def generate_turns(
    policy: LoadedPolicy,
    conversations: Sequence[list[dict[str, Any]]],
    seeds: Sequence[int],
    sp: SamplingParams,
    tools: list[dict[str, Any]] | None = None,
    turns_from: Sequence[int] | None = None,
) -> list[Sample]:
    """One assistant turn for each conversation (a multi-turn episode's next turn), seeded by seeds[i], in one
    `generate` call; formatted by `turn_texts`."""
    texts = turn_texts(policy.tokenizer, conversations, tools, turns_from)
    return sample_texts(policy, texts, list(seeds), sp, strip=True)


def turn_texts(
    tokenizer,
    conversations: Sequence[list[dict[str, Any]]],
    tools: list[dict[str, Any]] | None,
    turns_from: Sequence[int] | None = None,
) -> list[str]:
    """Each conversation formatted for its next assistant turn, with `tools` given to the chat template (a template
    without tool support ignores them): the same text on every backend that formats locally. The messages from
    turns_from[i] on (an episode's turns: untrusted) have the tokenizer's special strings broken first, in their
    content and tool-call arguments, so none is parsed as a control token (None: no message is)."""
    specials = tokenizer_specials(tokenizer)
    texts = []
    for i, messages in enumerate(conversations):
        start = len(messages) if turns_from is None else turns_from[i]
        safe = [*messages[:start], *(neutral_message(m, specials) for m in messages[start:])]
        texts.append(
            tokenizer.apply_chat_template(safe, tools=tools or None, add_generation_prompt=True, tokenize=False)
        )
    return texts


PROBE_TOOL = {"type": "function", "function": {"name": "probe", "description": "", "parameters": {"type": "object"}}}


def renders_tools(tokenizer) -> bool:
    """Whether the tokenizer's chat template has a tool format: given tools, it formats a conversation differently
    (SmolLM2's ignores them). Rendered, not guessed from the template's source."""
    messages = [{"role": "user", "content": "hi"}]

    def render(tools):
        return tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)

    return render([PROBE_TOOL]) != render(None)


def token_counter(tokenizer):
    """Counts a text's tokens as the policy tokenizes generated text (no special tokens added): reasoning_tokens."""
    return lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])


def sample_texts(
    policy: LoadedPolicy, texts: Sequence[str], seeds: Sequence[int], sp: SamplingParams, strip: bool = True
) -> list[Sample]:
    """One sample per formatted text, text i drawn with seeds[i] alone (`SeededSampler`), all in one `generate`
    call; each Sample has index 0. With `sp.batch_invariant`, one call per distinct text instead (its rows alone: the
    same shapes whatever else is sampled, so the same bits)."""
    if not sp.batch_invariant:
        return _sample_together(policy, texts, seeds, sp, strip)
    rows: dict[str, list[int]] = {}
    for i, text in enumerate(texts):
        rows.setdefault(text, []).append(i)
    samples: list[Sample | None] = [None] * len(texts)
    for text, where in rows.items():
        drawn = _sample_together(policy, [text] * len(where), [seeds[i] for i in where], sp, strip)
        for i, sample in zip(where, drawn, strict=True):
            samples[i] = sample
    return samples


def _sample_together(
    policy: LoadedPolicy, texts: Sequence[str], seeds: Sequence[int], sp: SamplingParams, strip: bool
) -> list[Sample]:
    """sample_texts in one `generate` call (left padding to the longest text)."""
    import torch
    from transformers import GenerationConfig, LogitsProcessorList

    tok = policy.tokenizer
    enc = tok(list(texts), return_tensors="pt", padding=True, add_special_tokens=False)
    enc = {k: v.to(policy.model.device) for k, v in enc.items()}
    sampler = SeededSampler(
        list(seeds), sp.temperature, sp.top_k, sp.top_p, policy.eos_token_ids, keep_logprobs=sp.keep_tokens
    )
    config = GenerationConfig(
        do_sample=False,  # the SeededSampler draws the token; greedy just takes it
        max_new_tokens=sp.max_new_tokens,
        eos_token_id=policy.eos_token_ids,
        pad_token_id=tok.pad_token_id,
    )
    with torch.inference_mode():
        out = policy.model.generate(**enc, generation_config=config, logits_processor=LogitsProcessorList([sampler]))
    generated = out[:, enc["input_ids"].shape[1] :].cpu()
    samples = []
    for row, seed in enumerate(seeds):
        n_tokens = int(sampler.n_tokens[row])
        samples.append(
            Sample(
                index=0,
                seed=seed,
                completion=_text(tok.decode(generated[row, :n_tokens].tolist(), skip_special_tokens=True), strip),
                n_tokens=n_tokens,
                finish_reason="stop" if bool(sampler.done[row]) else "length",
                logprob_sum=float(sampler.logprob_sum[row]),
                tokens=_tokens(enc, generated, sampler, row, n_tokens) if sp.keep_tokens else None,
            )
        )
    return samples


def _tokens(enc: dict, generated, sampler: SeededSampler, row: int, n_tokens: int) -> dict:
    """What row `row` was fed (its prompt ids, left padding cut) and drew, with the raw logprob of each drawn token."""
    prompt = enc["input_ids"][row][enc["attention_mask"][row].bool()].tolist()
    return {
        "prompt_ids": prompt,
        "completion_ids": generated[row, :n_tokens].tolist(),
        "logprobs": sampler.token_logprobs[row][:n_tokens],
    }


def _text(decoded: str, strip: bool) -> str:
    """A rollout's answer is stripped; a continuation is kept exactly as generated (it is glued to its prefix)."""
    return decoded.strip() if strip else decoded
