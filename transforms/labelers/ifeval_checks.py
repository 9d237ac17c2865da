"""IFEval's instruction checkers as google-research's instruction_following_eval has them today.

if-verifiable 0.1.2 copies google-research's checkers; compared with instruction_following_eval/instructions.py
as of 2025 (its registry, instructions_util.py and evaluation_lib.py too) one checker differs and is replaced here:

- keywords:letter_frequency: upstream counts any single character it is given ("#", "!", "é"); if-verifiable keeps
  an older rule that swaps anything but a-z for a random letter. Ours counts the given character, like upstream,
  and refuses a value that is not one non-space character (upstream would pick a random letter for "ab" and count
  nothing for " ": neither is a constraint a label can rest on).

Everything else (check_following of the 25 registered checkers, sentence and word splitting, the loose variants)
is the same code. Our labeler adds what upstream leaves out on purpose (see instruction_following.py): a missing
or invalid kwarg is an error instead of a random value, langdetect is seeded, a leading reasoning block is not
judged, and a check that forbids something also reads the text as a reader sees it (`reads_as_seen`).
"""

from if_verifiable.ifeval import instructions
from if_verifiable.ifeval.instructions_registry import INSTRUCTION_DICT

from rewardmill.transforms.labelers.text_normalize import fold_lookalikes

LETTER_FREQUENCY = "keywords:letter_frequency"


class LetterFrequencyChecker(instructions.LetterFrequencyChecker):
    """keywords:letter_frequency counting whatever single character it is given (case-insensitive), as upstream."""

    def build_description(self, *, letter=None, let_frequency=None, let_relation=None):
        if not isinstance(letter, str) or len(letter) != 1 or letter.isspace():
            raise ValueError(f"letter must be one non-space character, got {letter!r}")
        # The parent checks frequency and relation; its letter rule is the one replaced, so it gets a stand-in.
        description = super().build_description(letter="a", let_frequency=let_frequency, let_relation=let_relation)
        self._letter = letter.lower()
        return description.replace("letter a ", f"letter {self._letter} ", 1)


REGISTRY = {**INSTRUCTION_DICT, LETTER_FREQUENCY: LetterFrequencyChecker}


# Checks that forbid something: a word, a comma, more than N of a word, a letter or capital words. A policy can hide a
# violation from them in characters a reader cannot tell apart: "bаd" with a Cyrillic а, "b\u200bad" with a
# zero-width space, a fullwidth comma. Those checks must also hold on the text with look-alikes folded
# (text_normalize.py). Checks that must find something read the text as written, as IFEval does: folding there could
# only credit more.
FORBIDS = ("keywords:forbidden_words", "punctuation:no_comma")
RELATIONS = ("relation", "let_relation", "capital_relation")


def reads_as_seen(instruction_id: str, kwargs: dict) -> bool:
    """True when the instruction forbids something, so a look-alike could disguise a violation."""
    return instruction_id in FORBIDS or any(kwargs.get(key) == "less than" for key in RELATIONS)


def follows(checker, text: str, as_seen: bool) -> bool:
    """The checker's verdict on `text`; with `as_seen`, on the folded text too (both must hold)."""
    if not checker.check_following(text):
        return False
    if not as_seen:
        return True
    folded = fold_lookalikes(text)
    return folded == text or bool(checker.check_following(folded))
