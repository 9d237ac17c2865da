"""IFEval's instruction checkers as google-research's instruction_following_eval has them today, hardened.

if-verifiable 0.1.2 copies google-research's checkers; compared with instruction_following_eval/instructions.py
as of 2025 (its registry, instructions_util.py and evaluation_lib.py too) one checker differs and is replaced here:

- keywords:letter_frequency: upstream counts any single character it is given ("#", "!", "é"); if-verifiable keeps
  an older rule that swaps anything but a-z for a random letter. Ours counts the given character, like upstream,
  and refuses a value that is not one non-space character (upstream would pick a random letter for "ab" and count
  nothing for " ": neither is a constraint a label can rest on).

Deliberate hardenings (a policy trained on upstream's rules learns their holes; each is a pack row in
evaluation/packs/ifeval.jsonl):

- Every check reads the text a reader sees (`reader_view`, `follows`): HTML comments outside code dropped,
  invisible characters dropped, blank-looking letters (a Hangul filler) as spaces. A zero-width space inside a word
  no longer makes it twenty words, and a keyword, a capital word or a "P.S." inside <!-- --> is not there.
- A check that forbids something also holds on the text's skeleton (`follows`): how it looks, with Unicode's
  confusables, marks, HTML character references and emphasis inside a word (b**a**d) folded (text_normalize.py),
  HTML tags and Markdown links outside code rendered (b<wbr>ad, b<span></span>ad and b[](x)ad show "bad"), and
  every punctuation character Unicode names a comma (after NFKC: the halfwidth ideographic comma) read as ",".
- detectable_format:constrained_response: upstream credits a response containing any option, so "My answer is yes.
  My answer is no." is credited. Ours needs exactly one of the options, given as a statement (opening its line or
  after a sentence's end; "it is wrong to say 'My answer is yes.'" mentions an option, it does not give it).
- detectable_content:postscript: upstream's pattern has no start, so "the top. S. Smith" is a "P.S."; ours needs the
  marker not to follow a letter or digit.
- language:response_language: upstream counts a text in which langdetect finds no language ("42 !!! 17", emoji)
  as followed; ours as not followed.
- Placeholders, bullets, titles and highlights count only with content ("[]" and "* " are not), and the two
  responses of combination:two_responses must differ in more than case, spacing or punctuation.
- startend:quotation also takes the typographic pairs “...”, „...“, «...» and »...« (double quotation marks in
  English, German and French typography; upstream wants the ASCII ").
"""

import re

import langdetect
from if_verifiable.ifeval import instructions
from if_verifiable.ifeval.instructions_registry import INSTRUCTION_DICT

from rewardmill.transforms.labelers.markdown_code import html_comments, without_markup
from rewardmill.transforms.labelers.text_normalize import skeleton, visible_text

LETTER_FREQUENCY = "keywords:letter_frequency"
NUMBER_WORDS = "length_constraints:number_words"


class LetterFrequencyChecker(instructions.LetterFrequencyChecker):
    """keywords:letter_frequency counting whatever single character it is given (case-insensitive), as upstream."""

    def build_description(self, *, letter=None, let_frequency=None, let_relation=None):
        if not isinstance(letter, str) or len(letter) != 1 or letter.isspace():
            raise ValueError(f"letter must be one non-space character, got {letter!r}")
        # The parent checks frequency and relation; its letter rule is the one replaced, so it gets a stand-in.
        description = super().build_description(letter="a", let_frequency=let_frequency, let_relation=let_relation)
        self._letter = letter.lower()
        return description.replace("letter a ", f"letter {self._letter} ", 1)


_MARKUP = "'\"“‘«»„‚*_>#-` \t"


class ConstrainedResponseChecker(instructions.ConstrainedResponseChecker):
    """Exactly one of the options, given as a statement: listing every option is a hedge, not an answer, and an option
    inside someone's sentence ("it is wrong to say 'My answer is yes.'") is mentioned, not given. An option is given
    when it opens its line or follows the end of a sentence (or a colon), quotes and emphasis around it allowed."""

    def check_following(self, value):
        given = set()
        for option in self._constrained_responses:
            for found in re.finditer(re.escape(option), value):
                before = value[value.rfind("\n", 0, found.start()) + 1 : found.start()].rstrip(_MARKUP)
                if not before or before.endswith((".", "!", "?", ":")):
                    given.add(option)
        return len(given) == 1


class PostscriptChecker(instructions.PostscriptChecker):
    """Upstream's patterns, but the marker must not follow a letter or digit ("top. S." is no "P.S.")."""

    def check_following(self, value):
        if self._postscript_marker == "P.P.S":
            pattern = r"p\.\s?p\.\s?s.*$"
        elif self._postscript_marker == "P.S.":
            pattern = r"p\.\s?s\..*$"
        else:
            pattern = re.escape(self._postscript_marker.lower()) + r".*$"
        return re.search(r"(?<![^\W_])" + pattern, value.lower(), flags=re.MULTILINE) is not None


class PlaceholderChecker(instructions.PlaceholderChecker):
    """Upstream's [...] placeholders, counting only those with something inside ("[]" is not a placeholder)."""

    def check_following(self, value):
        placeholders = [p for p in re.findall(r"\[(.*?)\]", value) if p.strip()]
        return len(placeholders) >= self._num_placeholders


class BulletListChecker(instructions.BulletListChecker):
    """Upstream's "* " and "- " bullets, counting only those with something after the marker."""

    def check_following(self, value):
        stars = re.findall(r"^\s*\*([^\*].*)$", value, flags=re.MULTILINE)
        dashes = re.findall(r"^\s*-(.*)$", value, flags=re.MULTILINE)
        return sum(1 for item in stars + dashes if item.strip()) == self._num_bullets


class ResponseLanguageChecker(instructions.ResponseLanguageChecker):
    """A text in which no language can be detected (digits, emoji, punctuation) is in no language: not followed."""

    def check_following(self, value):
        try:
            return langdetect.detect(value) == self._language
        except langdetect.LangDetectException:
            return False


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", skeleton(text).casefold())


class TwoResponsesChecker(instructions.TwoResponsesChecker):
    """Two responses that differ in their words, not only in case, spacing, punctuation or look-alike characters."""

    def check_following(self, value):
        if not super().check_following(value):
            return False
        first, second = [part for part in value.split("******") if part.strip()]
        return _words(first) != _words(second)


_QUOTE_PAIRS = ('""', "“”", "„“", "«»", "»«")


class QuotationChecker(instructions.QuotationChecker):
    """The whole response in double quotation marks: ASCII or a typographic pair."""

    def check_following(self, value):
        value = value.strip()
        return len(value) > 1 and value[0] + value[-1] in _QUOTE_PAIRS


REGISTRY = {
    **INSTRUCTION_DICT,
    LETTER_FREQUENCY: LetterFrequencyChecker,
    "detectable_format:constrained_response": ConstrainedResponseChecker,
    "detectable_content:postscript": PostscriptChecker,
    "detectable_content:number_placeholders": PlaceholderChecker,
    "detectable_format:number_bullet_lists": BulletListChecker,
    "language:response_language": ResponseLanguageChecker,
    "combination:two_responses": TwoResponsesChecker,
    "startend:quotation": QuotationChecker,
}


def reader_view(text: str) -> str:
    """`text` without its HTML comments outside code: a comment is not shown to a reader. `follows` then drops what is
    invisible (text_normalize.visible_text)."""
    for start, end in reversed(html_comments(text)):
        text = text[:start] + text[end:]
    return text


# Markdown emphasis inside a word ("b**a**d", "u*n*d*e*r") renders as one word.
_INWORD_EMPHASIS = re.compile(r"(?<=[^\W_])(?:\*+|_+)(?=[^\W_])")

# Checks that forbid something: a word, a comma, capitals or lower case, more than N of a word, a letter, a sentence or
# capital words. A policy can hide a violation from them in characters a reader cannot tell apart: "bаd" with a
# Cyrillic а, "b**a**d", a Lisu letter that looks like "H", a "‚" for a comma. Those checks must also hold on the
# text's skeleton (text_normalize.py). Checks that must find something read the reader's view only: a skeleton there
# could only credit more.
FORBIDS = (
    "keywords:forbidden_words",
    "punctuation:no_comma",
    "change_case:english_lowercase",
    "change_case:english_capital",
)
RELATIONS = ("relation", "let_relation", "capital_relation")


def reads_as_seen(instruction_id: str, kwargs: dict) -> bool:
    """True when the instruction forbids something, so a look-alike could disguise a violation."""
    return instruction_id in FORBIDS or any(kwargs.get(key) == "less than" for key in RELATIONS)


def follows(checker, instruction_id: str, text: str, as_seen: bool) -> bool:
    """The checker's verdict on what a reader sees of `text` (visible_text: no invisible characters, a blank-looking
    letter as a space); with `as_seen`, on the skeleton too (both must hold), read as rendered: HTML tags and empty
    Markdown links outside code draw nothing ("b<wbr>ad", "b[](x)ad" show "bad"). A word count reads emphasis inside
    a word as one word."""
    seen = visible_text(text)
    if instruction_id == NUMBER_WORDS:
        seen = _INWORD_EMPHASIS.sub("", seen)
    if not checker.check_following(seen):
        return False
    if not as_seen:
        return True
    folded = skeleton(_INWORD_EMPHASIS.sub("", without_markup(text)))
    return folded == seen or bool(checker.check_following(folded))
