"""Reasoning traces apart from the answer: a completion's leading `<think>…</think>` (the tags are configurable) is
its reasoning, and what follows the closing tag is the answer every verifier and judge reads.

Forms, as reasoning models emit them:
- `<think>r</think>a`: reasoning r, answer a (`closed`).
- `r</think>a` with no opening tag (templates such as Qwen3's put `<think>` in the prompt): the same (`closed`).
- `<think>r` with no closing tag: a trace cut off before its answer (the token budget ran out): reasoning r, no
  answer (`unclosed`); it never gets credit, whatever r contains.
- `<think>r</think>` and nothing after: an answer only inside the think gets no credit either (`no_answer`).
- no tag at all: the whole text is the answer (`none`).
Only the leading trace counts: a `<think>` later in the answer is answer text. A served model's separate
`reasoning_content` is reasoning as is; its `content` is the answer.
"""

from dataclasses import dataclass

STATUSES = ("none", "closed", "unclosed", "no_answer")


@dataclass(frozen=True)
class ReasoningTags:
    open: str = "<think>"
    close: str = "</think>"

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
    elif tags.close in text and tags.open not in text.split(tags.close, 1)[0]:
        reasoning, answer = text.split(tags.close, 1)
    else:
        return Split(None, text, "none")
    answer = answer.strip()
    return Split(reasoning.strip(), answer, "closed" if answer else "no_answer")


def from_served(content: str | None, reasoning_content: str | None, finish_reason: str) -> Split:
    """A served model's message with a separate `reasoning_content`: the content is the answer; a reply cut at the
    token budget while still reasoning (no content) gets no credit."""
    if reasoning_content is None:
        return Split(None, content or "", "none")
    answer = (content or "").strip()
    if answer:
        return Split(reasoning_content.strip(), answer, "closed")
    return Split(reasoning_content.strip(), "", "unclosed" if finish_reason == "length" else "no_answer")
