"""Step critique judge (ProcessBench style), the pure pieces: "which step holds the earliest error?".

An LLM reads a problem and a solution split into steps numbered from 0 (ProcessBench's labels) and names the earliest
wrong step, or -1 when every step is correct. Its answer checks the Monte Carlo step labels of search.py: the
consensus filter keeps a rollout only when both put the first error at the same step.
`build_step_critique` -> chat messages asking for "Answer: <step>" first; `parse_first_error(text, n_steps)` -> the
step index, -1, or None on malformed or out-of-range text.
"""

import re

from rewardmill.transforms.judges.likert import strip_markup

# A step index: "2", "-1", "Step 2", "paragraph #2"; never "2.5", "2x", arithmetic ("2 + 3 = 6") or a range
# echoed back ("0 to 3", "0-3").
_INDEX = r"(?:(?:step|paragraph)\s*#?\s*)?(-?[0-9]{1,6})\b(?!\.[0-9])(?!\s*(?:-|–|to)\s*[0-9])(?!\s*[+/=×^])"
_ALL_CORRECT = r"(none|no\s+(?:errors?|mistakes?)(?:\s+found)?|all\s+(?:the\s+)?(?:steps\s+)?(?:are\s+)?correct)\b"
_VALUE = f"(?:{_INDEX}|{_ALL_CORRECT})"
_ANSWER = re.compile(r"\b(?:final\s+)?answer\s*[:=]\s*" + _VALUE, re.I)  # the format asked for
_BOXED = re.compile(r"\\boxed\s*\{\s*" + _VALUE + r"\s*\}", re.I)  # ProcessBench's own format: the last one counts
_PHRASE = re.compile(  # "the earliest error is in step 2", "the first wrong step is step 1"
    r"\b(?:earliest|first)\s+(?:(?:wrong|incorrect|erroneous|invalid)\s+(?:step|paragraph)|error|mistake)"
    r"(?:\s*(?::|=|is|occurs|appears|at|in))*\s*" + _VALUE,
    re.I,
)
_LONE = re.compile(r"[\s(\[]*" + _INDEX + r"[ \t.)\]]*(?=\n|$)", re.I)  # "2", "Step 2.", "(-1)" alone on line one
_LONE_ALL_CORRECT = re.compile(r"[\s(\[]*" + _ALL_CORRECT + r"[ \t.!)\]]*(?=\n|$)", re.I)  # "None", "All correct."


def build_step_critique(question: str, steps: list[str]) -> tuple[dict, ...]:
    """System + user messages asking for the index of the earliest wrong step of `steps` (0-based), or -1 when all
    are correct, answered first as "Answer: <n>" so the verdict does not depend on how the critique ends."""
    if not steps:
        raise ValueError("steps must hold at least one step")
    last = len(steps) - 1
    system = (
        "You review step-by-step solutions to math problems. Find the earliest step that contains an error: a wrong "
        "calculation, a false statement, a misread condition of the problem, or a conclusion that does not follow. "
        "Steps are numbered from 0; later steps that build on an error do not matter, only the earliest one.\n"
        f"Reply first with 'Answer: <step number>' (a number from 0 to {last}), or 'Answer: -1' if every step is "
        "correct, then at most one sentence on why."
    )
    numbered = "\n\n".join(f"Step {i}: {step.strip()}" for i, step in enumerate(steps))
    user = (
        f"Problem:\n{question}\n\nSolution:\n{numbered}\n\n"
        f"Which step holds the earliest error (0 to {last}, or -1 if none)? Start with 'Answer:'."
    )
    return ({"role": "system", "content": system}, {"role": "user", "content": user})


def _value(match: re.Match) -> int:
    return -1 if match.group(1) is None else int(match.group(1))


def parse_first_error(text: str | None, n_steps: int) -> int | None:
    """Lenient parse of a step critique, by priority: a labeled "Answer: 2" / "Answer: Step 2" / "Answer: none"
    (first), "\\boxed{2}" (last), "the earliest error is in step 2" (first), a lone "2" / "Step 2" / "-1" on the
    first line, a lone "None" / "All steps are correct." on the first line (-1). Stray numbers elsewhere in the text
    are not answers. Returns the step in 0..n_steps-1, -1 for no error, None when nothing matches or the answer
    is out of range. Never raises on model output."""
    if not isinstance(text, str):
        return None
    clean = strip_markup(text).replace("−", "-")  # Unicode minus, as some models write "−1"
    matches = (
        _ANSWER.search(clean),
        next(reversed(list(_BOXED.finditer(clean))), None),
        _PHRASE.search(clean),
        _LONE.match(clean),
    )
    match = next((m for m in matches if m is not None), None)
    if match is not None:
        value = _value(match)
    elif _LONE_ALL_CORRECT.match(clean):
        value = -1
    else:
        return None
    return value if -1 <= value < n_steps else None
