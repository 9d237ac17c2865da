"""Multi-agent judge panel with rejection sampling, the pure pieces: personas, vote aggregation, reflection prompts.

Several personas judge the same item with the same prompt builder (`apply_persona` puts the persona in front of
the system message). `aggregate_votes` keeps a label only when enough valid votes agree with the majority (binary)
or mode (Likert); otherwise the panel abstains: score None, votes kept, so the item is dropped or sent back rather
than labeled by a split panel. An optional reflection round (`build_reflection`) shows each judge the others'
rationales before it votes again.
"""

from collections import Counter
from dataclasses import dataclass

KINDS = ("binary", "likert")


@dataclass(frozen=True)
class Persona:
    """A judge's point of view: a short name for logs and reflection, and a system prompt placed before the task."""

    name: str
    system_prompt: str


DEFAULT_PERSONAS = (
    Persona(
        "strict",
        "You are a strict grader. Give a high rating only when the answer is fully correct and complete.",
    ),
    Persona(
        "lenient",
        "You are a lenient grader. Judge whether the core of the answer is right; ignore small issues of style.",
    ),
    Persona(
        "expert",
        "You are an expert in the subject of the question. Check the facts, the reasoning and the final result.",
    ),
)


def apply_persona(messages: tuple[dict, ...], persona: Persona) -> tuple[dict, ...]:
    """The messages with the persona's prompt before the system message (a new system message if there is none).
    Returns new dicts: the caller's messages are shared across personas and must not change."""
    if messages and messages[0].get("role") == "system":
        first = {**messages[0], "content": f"{persona.system_prompt}\n{messages[0]['content']}"}
        return (first, *messages[1:])
    return ({"role": "system", "content": persona.system_prompt}, *messages)


@dataclass(frozen=True)
class PanelDecision:
    """accepted: the panel agreed enough; score: the agreed value (1.0/0.0 for binary, the mode for Likert) or
    None when it abstained; agreement: share of valid votes equal to the majority/mode (0.0 with no valid vote);
    n_valid: votes that parsed; votes: every vote as given, None included, for the record."""

    accepted: bool
    score: float | None
    agreement: float
    n_valid: int
    votes: tuple[float | int | None, ...]


def _binary(vote: float | int) -> bool:
    if vote not in (0, 1):  # True/False and 0.0/1.0 compare equal to 0/1
        raise ValueError(f"a binary vote must be 0/1 or a bool, got {vote!r}")
    return bool(vote)


def aggregate_votes(
    votes: list[float | int | None], threshold: float, kind: str = "likert", min_valid: int = 2
) -> PanelDecision:
    """Rejection sampling over a panel's votes: accept when at least `min_valid` votes parsed, a single
    majority/mode exists, and its share of the valid votes is >= `threshold` (e.g. 2/3); otherwise abstain.

    A tie for the top (2 yes / 2 no, or modes 4 and 5 equally often) always abstains: there is no label to keep.
    Bad arguments (kind, threshold, a binary vote other than 0/1) raise ValueError; None votes are just invalid."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    if min_valid < 1:
        raise ValueError(f"min_valid must be >= 1, got {min_valid!r}")
    valid = [v for v in votes if v is not None]
    if kind == "binary":
        valid = [_binary(v) for v in valid]
    kept = tuple(votes)
    if not valid:
        return PanelDecision(False, None, 0.0, 0, kept)
    counts = Counter(valid).most_common()
    top, top_count = counts[0]
    agreement = top_count / len(valid)
    unique_top = len(counts) == 1 or counts[1][1] < top_count
    accepted = unique_top and len(valid) >= min_valid and agreement >= threshold
    score = float(top) if accepted else None
    return PanelDecision(accepted, score, agreement, len(valid), kept)


def build_reflection(
    original_messages: tuple[dict, ...],
    own_answer_text: str,
    others: list[tuple[str, str]],
    max_chars: int = 300,
) -> tuple[dict, ...]:
    """Messages for a reflection round: the judge's own conversation and reply, then the other judges' rationales
    (persona name, text; each cut to `max_chars` so a small model's context holds them), asking it to vote again in
    the same format. Judges see rationales, not an instruction to agree, so a reasoned dissent can stand."""
    opinions = "\n".join(f"- {name}: {_cut(text, max_chars)}" for name, text in others) or "- (none)"
    follow_up = (
        f"Other judges wrote:\n{opinions}\n\n"
        "Think about their reasons. Keep your verdict or change it, then reply again in exactly the same format."
    )
    return (
        *({**m} for m in original_messages),
        {"role": "assistant", "content": own_answer_text},
        {"role": "user", "content": follow_up},
    )


def _cut(text: str | None, max_chars: int) -> str:
    text = " ".join((text or "").split())  # one line per judge: newlines in a rationale would break the list
    return text if len(text) <= max_chars else text[: max_chars - 3].rstrip() + "..."
