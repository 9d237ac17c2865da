"""Reasoning traces apart from the answer: a completion's leading `<think>…</think>` (the tags are configurable) is
its reasoning, and what follows the closing tag is the answer every verifier and judge reads.

Forms, as reasoning models emit them:
- `<think>r</think>a`: reasoning r, answer a (`closed`).
- `r</think>a` with no opening tag, when the chat template puts `<think>` in the prompt (Qwen3's does) and the
  tags say so (`opened_in_prompt`): the same (`closed`); with no close tag at all, the trace was cut (`unclosed`).
  Otherwise a close tag with no leading open tag is answer text, as transforms/labelers/reasoning.py reads it: a
  stray `</think>` must not let a policy tuck what it wrote before it out of the verifiers' sight.
- `<think>r` with no closing tag: a trace cut off before its answer (the token budget ran out): reasoning r, no
  answer (`unclosed`); it never gets credit, whatever r contains.
- `<think>r</think>` and nothing after: an answer only inside the think gets no credit either (`no_answer`).
- no tag at all: the whole text is the answer (`none`).
Only the leading trace counts: a `<think>` later in the answer is answer text. A served model's separate
`reasoning_content` is reasoning as is; its `content` is the answer.
"""

from dataclasses import dataclass

from rewardmill.transforms.sampling.params import token_fields

STATUSES = ("none", "closed", "unclosed", "no_answer")


@dataclass(frozen=True)
class ReasoningTags:
    open: str = "<think>"
    close: str = "</think>"
    opened_in_prompt: bool = False  # the chat template opens the trace in the prompt: the completion starts inside it

    def __post_init__(self):
        if not self.open or not self.close or self.open == self.close:
            raise ValueError(
                f"reasoning tags must be two different non-empty strings, got {self.open!r}, {self.close!r}"
            )


@dataclass(frozen=True)
class Split:
    reasoning: str | None  # None: the completion has no trace
    answer: str  # what verifiers and judges read ('' when there is none)
    status: str  # one of STATUSES

    @property
    def credit_blocked(self) -> str | None:
        """Why this completion may get no credit (a cut trace, or an answer only inside the trace), else None."""
        if self.status == "unclosed":
            return "the reasoning was cut off before its answer (no closing tag): no answer to credit"
        if self.status == "no_answer":
            return "nothing follows the reasoning: an answer only inside the reasoning gets no credit"
        return None


def split_reasoning(text: str, tags: ReasoningTags = ReasoningTags()) -> Split:
    stripped = text.lstrip()
    if stripped.startswith(tags.open):
        body = stripped[len(tags.open) :]
        if tags.close not in body:
            return Split(body.strip(), "", "unclosed")
        reasoning, answer = body.split(tags.close, 1)
    elif tags.opened_in_prompt and tags.close not in text:  # still inside the trace the prompt opened: cut off
        return Split(text.strip(), "", "unclosed")
    elif tags.opened_in_prompt and tags.open not in text.split(tags.close, 1)[0]:
        reasoning, answer = text.split(tags.close, 1)
    else:
        return Split(None, text, "none")
    answer = answer.strip()
    return Split(reasoning.strip(), answer, "closed" if answer else "no_answer")


def served_text(content: str | None, reasoning_content: str | None, finish_reason: str, tags: ReasoningTags) -> str:
    """A served reply as one completion text in `tags`' form, so the rollouts cache keeps one text per sample and the
    split after it (`from_served`) reads the trace between the tags and the content after them; a reply cut at the
    token budget while still reasoning (no content) has no closing tag (a cut trace: no credit)."""
    answer = (content or "").strip()
    if reasoning_content is None:
        return answer
    if not answer and finish_reason == "length":
        return f"{tags.open}{reasoning_content}"
    return f"{tags.open}{reasoning_content}{tags.close}{answer}"


def from_served(
    content: str | None, reasoning_content: str | None, finish_reason: str, tags: ReasoningTags = ReasoningTags()
) -> Split:
    """A served model's message with a separate `reasoning_content`, as the stage reads it: the content is the
    answer; a reply cut at the token budget while still reasoning (no content) gets no credit."""
    return split_reasoning(served_text(content, reasoning_content, finish_reason, tags), tags)


BLOCKED = ("unclosed", "no_answer")  # statuses whose completion gets no credit from any labeler


def blocked_reason(status: str | None) -> str | None:
    """Why a rollout with this `reasoning_status` gets no credit, else None."""
    return Split(None, "", status).credit_blocked if status in BLOCKED else None


def single_turn_columns(sample, split: Split | None) -> dict:
    """ROLLOUT_V3's columns for a one-turn sample (rollouts.reasoning or keep_tokens without an environment):
    `completion` is the answer, the trace is `reasoning`, and `turns` holds the one assistant message, with its token
    ids and logprobs when the sample kept them. `split` None: reasoning is off, the text is the answer."""
    split = split or Split(None, sample.completion, None)
    turn = {
        "role": "assistant",
        "content": split.answer,
        "reasoning": split.reasoning,
        "tool_calls": None,
        "tool_call_id": None,
        "name": None,
        "n_tokens": sample.n_tokens,
        "finish_reason": sample.finish_reason,
        "info": None,
        **token_fields(sample.tokens),
    }
    return {
        "completion": split.answer,
        "reasoning": split.reasoning,
        "reasoning_status": split.status,
        "reasoning_tokens": None,  # counted by the handler, which has the tokenizer
        "turns": [turn],
        "tools": None,
        "environment": None,
        "stop_reason": "done",
        "env_reward": None,
        "env_info": None,
        "prompt_messages": None,
    }


def count_reasoning(trajectory: dict, count) -> dict:
    """`trajectory` with reasoning_tokens: the tokens of every assistant turn's reasoning (`count(text)`), None
    without a counter (a served policy whose server reports none)."""
    if count is None:
        return {**trajectory, "reasoning_tokens": None}
    texts = [t.get("reasoning") for t in trajectory.get("turns") or () if t.get("role") == "assistant"]
    return {**trajectory, "reasoning_tokens": sum(count(t) for t in texts if t)}


def token_usage(rows) -> dict:
    """The rollouts manifest's `tokens` with `rollouts.reasoning` on: every generated token (`n_tokens`, over all
    assistant turns) and how many of them were reasoning, over the rows that counted it (a served policy's cannot:
    its rows have null `reasoning_tokens` and are counted in `reasoning_uncounted`)."""
    generated = reasoning = uncounted = 0
    for row in rows:
        generated += row["n_tokens"] or 0
        if row["reasoning_tokens"] is None:
            uncounted += 1
        else:
            reasoning += row["reasoning_tokens"]
    return {"generated": generated, "reasoning": reasoning, "reasoning_uncounted": uncounted}
