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
- `has_substance(answer, question)`: an answer with nothing in it beyond punctuation, symbols, markup (any LaTeX
  command name, HTML tags, a fence's info string), placeholders (`[insert answer here]`, `N/A`) and lead-in words in
  any script ("Solution", "Let's solve this step by step.", `解`, `答案：`, "Respuesta:"), or that is only a short
  frame with no digit ("I know the answer.") or the question restated, is no answer: the judges give it score 0.0
  without a call, so a "master key" can never be credited nor outrank a sincere wrong answer. One-word answers
  ("Yes", "A", "x", "是") stay answers.
"""

import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

# Marker shapes of the common chat templates, whatever the tokenizer: ChatML / Llama 3 / Phi (`<|...|>`), DeepSeek's
# full-width bars (`<｜...｜>`), Llama 2 / Mistral (`[INST]`, `<<SYS>>`, `<s>`, `</s>`), and, broadly, the two shapes
# tokenizers give their control tokens: a bracketed ALL-CAPS name (`[SYSTEM_PROMPT]`, `[/INST]`, `[THINK]`, `[gMASK]`)
# and a bare lower-case tag without attributes (`<start_of_turn>`, `<file_sep>`, `<tool_response>`, `<sop>`,
# `<seed:eos>`, `<end_of_utterance>`). The tag shape also catches plain HTML such as `<p>` or `<br>` in an honest
# answer: breaking it only swaps `<` for a look-alike, which the judge reads the same, so broad is the safe side.
# `[RESULT]` is spared: the rubric judge's own Prometheus format asks for it (rubric.py), and no tokenizer has it.
GENERIC_MARKERS = re.compile(
    r"<\|[^<>|\s]{0,64}\|>"
    r"|<｜[^<>｜\s]{0,64}｜>"
    r"|\[/?(?:INST|SYS|AVAILABLE_TOOLS|TOOL_CALLS|TOOL_RESULTS)\]"
    r"|(?-i:\[/?[a-z]?(?!RESULT\])[A-Z][A-Z0-9_]{1,63}\])"
    r"|<</?SYS>>"
    r"|</?[a-z_][a-z0-9_]{0,63}(?::[a-z0-9_]{1,32})?>",
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


def neutralize_specials(text: str, specials: Iterable[str]) -> str:
    """`text` with only `specials` broken (a known tokenizer's own control strings), not the generic marker shapes:
    for text on its way into a local policy, whose conversation may hold tags a protocol needs (`<tool_call>`)."""
    ordered = tuple(sorted({s for s in specials if s and s.strip()}, key=len, reverse=True))
    if not isinstance(text, str) or not ordered:
        return text
    pattern = _exact_pattern(ordered)
    for _ in range(8):
        broken = pattern.sub(lambda m: _break(m.group(0)), text)
        if broken == text:
            return text
        text = broken
    return text


def neutral_message(message: dict[str, Any], specials: Iterable[str]) -> dict[str, Any]:
    """A chat message with `specials` broken in every string it holds: content, tool calls' names, arguments (keys
    and values alike: an argument's name is the policy's text too); its own keys and role as they are."""
    specials = tuple(specials)

    def clean(value):
        if isinstance(value, str):
            return neutralize_specials(value, specials)
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return {k: (v if k == "role" else clean(v)) for k, v in message.items()}


@lru_cache(maxsize=16)
def _exact_pattern(specials: tuple[str, ...]) -> re.Pattern:
    return re.compile("|".join(re.escape(s) for s in specials))


def tokenizer_specials(tokenizer) -> tuple[str, ...]:
    """A Hugging Face tokenizer's special strings: its named special tokens and every added token marked special
    (ChatML's `<|im_start|>`, `<|im_end|>`, StarCoder's `<file_sep>`, ...)."""
    found = set(getattr(tokenizer, "all_special_tokens", ()) or ())
    for token in (getattr(tokenizer, "added_tokens_decoder", None) or {}).values():
        if getattr(token, "special", False):
            found.add(str(token.content))
    return tuple(sorted(s for s in found if s and s.strip()))


def has_local_tokenizer(model: str | None) -> bool:
    """Whether `model` names a local folder with a tokenizer: an endpoint serving it (vLLM/TGI serving
    `models/policy`) tokenizes with exactly that tokenizer, so its own specials (`<file_sep>`, ...) are known here."""
    if not model:
        return False
    folder = Path(model)
    return folder.is_dir() and any((folder / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json"))


@lru_cache(maxsize=8)
def local_specials(model: str) -> tuple[str, ...]:
    """The special strings of a local model folder's tokenizer (loaded once per process; the tokenizer only)."""
    from transformers import AutoTokenizer

    return tokenizer_specials(AutoTokenizer.from_pretrained(model))


# Words that open or frame an answer without being one: what the "master key" replies are made of, in the languages
# the master keys come in ("One Token to Fool LLM-as-a-Judge" lists 解 and 答案). An answer made only of these (plus
# punctuation, symbols, markup and numbered "Step 1" headers) has no substance. Words that can be an answer on their
# own ("A", "I", "first", "right", "above", "work", "none") are deliberately absent.
LEAD_IN_WORDS = frozenset(
    """
    the this that these it its here is are be will we me my us our you let let's lets so now then ok okay sure
    alright hmm
    solve solving solved solution solutions answer answers answered final result results conclusion
    problem problems question questions task exercise
    step steps by step-by-step following as follows
    thought thoughts thinking think process reasoning reason explanation explain explained analysis analyze
    approach method calculation calculations compute computing calculating calculate working analyzing
    to do need needs find finding start begin carefully
    therefore hence thus consequently so
    respuesta solución solucion paso pasos por lo tanto réponse reponse solution étape etape donc lösung losung
    antwort schritt also daher risposta soluzione passo quindi resposta solução solucao portanto antwoord oplossing
    ответ решение шаг итак значит
    解 答案 答 解答 回答 步骤 解题 解析 思路 过程 结果 最终 所以 因此 如下 答え 解き方 정답 답 풀이 해설
    """.split()
)
# Words that frame a sentence ("I know the answer.", "Let me work through this.", "La respuesta es"): a short answer
# of these and lead-ins alone, with no digit, says nothing checkable. They are not removed anywhere else, and a
# one-word answer is never screened by them ("I", "A", "Here" stay answers).
FRAME_WORDS = frozenset(
    """
    i i'm im a an of for in on at with about through down up over out into can could would should shall may might
    must have has had am was were been being get got give gives given know knew see look looking go going try trying
    tackle break work figure out show tell write provide below above just first next now well there what which how
    la el es los las le les est il c'est die der das ist ein eine
    """.split()
)
FRAME_MAX_WORDS = 6  # longer answers are sentences that say something, or will be judged as such
# Markup the judge never needs to count as words: fence lines (with their info string: "```python"), HTML/XML tags,
# and LaTeX command names (`\frac`, `\hspace`, `\cdots`) except those that name a value on their own.
_FENCE_LINE = re.compile(r"^[ \t]*(?:`{3,}|~{3,}).*$", re.MULTILINE)
_TAG = re.compile(r"</?[A-Za-z][\w:.-]*(?:\s[^<>]*)?/?>")
_VALUE_COMMANDS = frozenset(
    """
    alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi varpi rho sigma
    tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega infty emptyset
    varnothing hbar ell aleph top bot
    """.split()
)
_COMMAND = re.compile(r"\\([a-zA-Z]+)")
_LAYOUT = re.compile(
    r"\\(?:[hv]space|[hv]?phantom|label|color|textcolor|colorbox|rule|kern|vskip|hskip)\*?(?:\{[^{}]*\})*"
)
_STEP_NUMBER = re.compile(r"\b(?:step|part|case)\s*\d+\b", re.IGNORECASE)
# A template slot left unfilled ("[insert answer here]", "<your answer>", "{answer}") or a declared non-answer.
_PLACEHOLDER = re.compile(
    r"[\[<{(][^\[\]<>{}()\d]*\b(?:insert|placeholder|your|fill|blank|tbd|todo)\b[^\[\]<>{}()\d]*[\]>})]"
    r"|(?<!\w)(?:n/a|tbd|todo|xxx+|\?{2,})(?!\w)",
    re.IGNORECASE,
)
# Letters and digits in any script, and the few symbols that are a whole answer on their own (a limit of ∞, the ∅ set).
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?|[∞∅]")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_CJK_LEAD_INS = tuple(sorted((w for w in LEAD_IN_WORDS if _CJK.fullmatch(w)), key=len, reverse=True))
_CJK_LINKS = ("是", "为", "為", "は", "이")  # "is" after a lead-in ("答案是"); alone, 是 is the answer "yes"


def _strip_markup(text: str) -> str:
    text = _LAYOUT.sub(" ", _TAG.sub(" ", _FENCE_LINE.sub(" ", text)))  # layout arguments are no answer either
    return _COMMAND.sub(lambda m: f" {m.group(1)} " if m.group(1) in _VALUE_COMMANDS else " ", text)


def _cjk_rest(word: str) -> str:
    """A CJK run (no spaces between words) with its leading lead-ins peeled off: "答案是" -> "", "答案是五" -> "五"."""
    peeled, any_peeled = True, False
    while word and peeled:
        peeled = False
        for lead in _CJK_LEAD_INS + (_CJK_LINKS if any_peeled else ()):
            if word.startswith(lead):
                word, peeled, any_peeled = word[len(lead) :], True, True
                break
    return word


def _words(text: str) -> list[str]:
    text = _PLACEHOLDER.sub(" ", _STEP_NUMBER.sub(" ", _strip_markup(text.replace("’", "'"))))
    return _WORD.findall(text)


def _content(words: list[str]) -> list[str]:
    out = []
    for word in words:
        folded = word.casefold()
        if folded in LEAD_IN_WORDS or folded.endswith("'s") and folded[:-2] in LEAD_IN_WORDS | FRAME_WORDS:
            continue
        if _CJK.fullmatch(word):
            word = _cjk_rest(word)
        if word:
            out.append(word)
    return out


def substance(answer: str, question: str = "") -> str:
    """What is left of `answer` once markup, placeholders, lead-in words, step numbers, punctuation and symbols are
    removed: "" for an answer with no substance. Also "" for a short frame with no digit ("I know the answer.") and,
    given the `question`, for an answer that only restates the question or one of its sentences."""
    if not isinstance(answer, str):
        return ""
    words = _words(answer)
    content = _content(words)
    if not content:
        return ""
    if (
        len(words) >= 2
        and len(words) <= FRAME_MAX_WORDS
        and not any(c.isdigit() for c in answer)
        and all(w.casefold() in FRAME_WORDS for w in content)
    ):
        return ""
    if isinstance(question, str) and question and _restates(answer, question):
        return ""
    return " ".join(content)


def _restates(answer: str, question: str) -> bool:
    """Whether `answer` is the whole question or one of its sentences or lines, word for word ("Is Paris the capital?"
    restated is no answer; "Paris is the capital" is one)."""
    said = [w.casefold() for w in _words(answer)]
    parts = [question, *re.split(r"(?<=[.?!。？！])\s*|\n+", question)]
    return any(said == [w.casefold() for w in _words(part)] for part in parts if part.strip())


def has_substance(answer: str, question: str = "") -> bool:
    """Whether an answer (the completion after its reasoning) says anything: a letter or digit beyond markup,
    placeholders, lead-ins and short frames, and beyond a restatement of `question` when it is given."""
    return substance(answer, question) != ""


NO_SUBSTANCE = "no substantive answer"
