"""Where a completion's reasoning ends and its answer begins: one rule for every verifier and judge.

A completion has reasoning only when it *starts* (after whitespace) with a `<think>` (or `<thinking>`) block. The
answer is what follows that block's matching close tag. A close tag with no leading open tag is text like any other:
it hides nothing written before it (a stray `</think>` must not let a policy tuck a violation out of sight). A leading
open tag that is never closed is all reasoning and no answer: credit needs a finished answer.
"""

import re
from dataclasses import dataclass

_OPEN = re.compile(r"\A\s*<(think|thinking)>", re.IGNORECASE)


@dataclass(frozen=True)
class Split:
    """`reasoning` is None when the completion has no leading block; `finished` is False for an unclosed one."""

    reasoning: str | None
    answer: str
    finished: bool = True


def split_reasoning(completion: str) -> Split:
    """The completion's leading reasoning block and the answer after it (see the module docstring)."""
    opened = _OPEN.match(completion)
    if opened is None:
        return Split(None, completion)
    close = re.compile(rf"</{opened.group(1)}>", re.IGNORECASE).search(completion, opened.end())
    if close is None:
        return Split(completion[opened.end() :], "", finished=False)
    return Split(completion[opened.end() : close.start()], completion[close.end() :])


def answer_text(completion: str) -> str:
    """The part of the completion a verifier or judge reads: everything after a leading reasoning block ("" when
    that block is never closed)."""
    return split_reasoning(completion).answer
