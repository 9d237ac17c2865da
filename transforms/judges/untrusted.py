"""Untrusted text on its way into a judge: special-token strings neutralized, answers with no substance screened out.

Everything a judge reads besides its own instructions (the completion, the prompt, the reference, a rubric) comes
from outside. Two defenses, both by mechanism:

- `neutralize(text, specials)`: a chat-template marker written as text (`<|im_end|>`, `[INST]`, `<eos>`, ...) must not
  reach a tokenizer that would parse it as the real control token, or a completion can close its own turn and
  write the judge's reply ("One Token to Fool LLM-as-a-Judge"; the Pitfalls paper). Every occurrence of the judge
  tokenizer's own special strings, and of the generic marker shapes (`<|...|>`, `<｜...｜>`, `[INST]`, `<<SYS>>`,
  `<s>`, `<start_of_turn>`, ...) for endpoints whose tokenizer is not local, gets its first character replaced by
  a look-alike (`<` -> `‹`, `[` -> `⁅`) or, for any other first character, a zero-width space after it. The text
  still reads the same to the judge; the tokenizer sees ordinary characters.
- `has_substance(answer)`: an answer with nothing in it beyond punctuation, symbols, markup and lead-in words
  ("Solution", "Thought process:", "Let's solve this problem step by step.", `{`) is no answer: the judges give it
  score 0.0 without a call, so a "master key" can never be credited nor outrank a sincere wrong answer.
"""

import re
from collections.abc import Iterable
from functools import lru_cache

# Marker shapes of the common chat templates, whatever the tokenizer: ChatML / Llama 3 / Phi (`<|...|>`), DeepSeek's
# full-width bars (`<｜...｜>`), Llama 2 / Mistral (`[INST]`, `<<SYS>>`, `<s>`, `</s>`), Gemma (`<start_of_turn>`),
# and the bare names tokenizers give their control tokens.
GENERIC_MARKERS = re.compile(
    r"<\|[^<>|\s]{0,64}\|>"
    r"|<｜[^<>｜\s]{0,64}｜>"
    r"|\[/?(?:INST|SYS|AVAILABLE_TOOLS|TOOL_CALLS|TOOL_RESULTS)\]"
    r"|<</?SYS>>"
    r"|</?(?:s|bos|eos|pad|unk|mask|start_of_turn|end_of_turn|start_of_image|end_of_image|think|tool_call)>",
    re.IGNORECASE,
)
_LOOKALIKE = {"<": "‹", "[": "⁅", "＜": "‹"}  # none of them folds back under NFKC normalization
_ZERO_WIDTH = "\u200b"


def _break(marker: str) -> str:
    first = marker[0]
    if first in _LOOKALIKE:
        return _LOOKALIKE[first] + marker[1:]
    return first + _ZERO_WIDTH + marker[1:]


def marker_pattern(specials: Iterable[str] = ()) -> re.Pattern:
    """One pattern for a tokenizer's special strings (longest first, so `<|im_end|>` wins over a prefix of it) and
    the generic marker shapes."""
    return _pattern(tuple(sorted({s for s in specials if s and s.strip()}, key=len, reverse=True)))


@lru_cache(maxsize=16)
def _pattern(specials: tuple[str, ...]) -> re.Pattern:
    own = "|".join(re.escape(s) for s in specials)
    return re.compile(f"{own}|{GENERIC_MARKERS.pattern}" if own else GENERIC_MARKERS.pattern, re.IGNORECASE)


def neutralize(text: str, specials: Iterable[str] = ()) -> str:
    """`text` with every special-token string broken so no tokenizer parses it as a control token. Repeats until
    nothing matches: breaking one marker can never assemble another (`<|im_<|im_end|>end|>`)."""
    if not isinstance(text, str):
        return text
    pattern = marker_pattern(specials)
    for _ in range(8):  # each pass removes at least one match; nested constructions unwind in a few
        broken = pattern.sub(lambda m: _break(m.group(0)), text)
        if broken == text:
            return text
        text = broken
    return text


def tokenizer_specials(tokenizer) -> tuple[str, ...]:
    """A Hugging Face tokenizer's special strings: its named special tokens and every added token marked special
    (ChatML's `<|im_start|>`, `<|im_end|>`, StarCoder's `<file_sep>`, ...)."""
    found = set(getattr(tokenizer, "all_special_tokens", ()) or ())
    for token in (getattr(tokenizer, "added_tokens_decoder", None) or {}).values():
        if getattr(token, "special", False):
            found.add(str(token.content))
    return tuple(sorted(s for s in found if s and s.strip()))


@lru_cache(maxsize=8)
def local_specials(model: str) -> tuple[str, ...]:
    """The special strings of a local model folder's tokenizer (loaded once per process; the tokenizer only)."""
    from transformers import AutoTokenizer

    return tokenizer_specials(AutoTokenizer.from_pretrained(model))


# Words that open or frame an answer without being one: what the "master key" replies are made of. An answer made
# only of these (plus punctuation, symbols, numbered "Step 1" headers and formatting commands) has no substance.
# Words that can be an answer on their own ("A", "I", "first", "right", "above", "work") are deliberately absent.
LEAD_IN_WORDS = frozenset(
    """
    the this that these it its here is are be will we me my us our you let let's lets so now then ok okay sure
    alright hmm
    solve solving solved solution solutions answer answers answered final result results conclusion
    problem problems question questions task exercise
    step steps by step-by-step following as follows
    thought thoughts thinking think process reasoning reason explanation explain explained analysis analyze
    approach method calculation calculations compute computing
    to do need needs find finding start begin carefully
    """.split()
)
_STEP_NUMBER = re.compile(r"\b(?:step|part|case)\s*\d+\b", re.IGNORECASE)
_FORMATTING = re.compile(
    r"\\(?:boxed|fbox|text|textbf|textit|mathrm|mathbf|mathit|displaystyle|left|right|quad|qquad|begin|end|"
    r"\[|\]|\(|\))",
)
# Letters and digits in any script, and the few symbols that are a whole answer on their own (a limit of ∞, the ∅ set).
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?|[∞∅]")


def substance(answer: str) -> str:
    """What is left of `answer` once lead-in words, step numbers, formatting commands, punctuation and symbols are
    removed: "" for an answer with no substance."""
    if not isinstance(answer, str):
        return ""
    text = _FORMATTING.sub(" ", _STEP_NUMBER.sub(" ", answer.replace("’", "'")))
    words = [w for w in _WORD.findall(text) if w.lower() not in LEAD_IN_WORDS]
    return " ".join(words)


def has_substance(answer: str) -> bool:
    """Whether an answer (the completion after its reasoning) says anything: a letter or digit beyond lead-ins."""
    return substance(answer) != ""


NO_SUBSTANCE = "no substantive answer"
