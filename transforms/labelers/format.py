"""FormatVerifier: does the completion have the required shape (regex, ordered tags, JSON schema)?"""

import html
import json
import re
from dataclasses import dataclass

from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.markdown_code import code_spans, fenced_blocks, mask_code, without_markup
from rewardmill.transforms.labelers.reasoning import answer_text
from rewardmill.transforms.labelers.text_normalize import visible_text

MODES = ("search", "fullmatch")
DEFAULT_TAGS = ("think", "answer")
TAG_NAME = re.compile(r"[A-Za-z][\w.-]*")
BLOCKQUOTE = re.compile(r"^ {0,3}>.*$", re.MULTILINE)


@dataclass(frozen=True)
class FormatConfig:
    """Every configured check must pass. With none configured, the check is the DeepSeek-R1 think/answer format."""

    pattern: str | None = None  # `regex` module syntax (a superset of `re`); inline flags such as (?s) work
    mode: str = "search"  # search: the pattern occurs somewhere | fullmatch: the whole completion matches it
    # [think, answer]: <think>..</think> then <answer>..</answer>, each once, non-empty. None: [think, answer] when
    # neither pattern nor json_schema is set, else no tags.
    required_tags: tuple[str, ...] | None = None
    tags_only: bool = False  # with required_tags: only whitespace outside the tag blocks (DeepSeek-R1 style)
    # The answer (after a leading <think> block; inside its <answer> tag when "answer" is a required tag) must
    # validate: the last of its JSON blocks, other code blocks holding JSON-looking text, JSON-looking code spans and
    # prose {...}/[...]; else all of it (json_answer).
    json_schema: dict | None = None
    timeout_seconds: float = 1.0  # per regex match: a pathological pattern gives verdict timeout, not a hang

    def __post_init__(self):
        if self.required_tags is None:
            only_default = self.pattern is None and self.json_schema is None
            object.__setattr__(self, "required_tags", DEFAULT_TAGS if only_default else ())
        if self.pattern is None and not self.required_tags and self.json_schema is None:
            raise ValueError("configure at least one of pattern, required_tags, json_schema")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.pattern is not None:
            import regex

            try:
                regex.compile(self.pattern)
            except regex.error as exc:
                raise ValueError(f"pattern does not compile: {exc}") from exc
        bad = [t for t in self.required_tags if not TAG_NAME.fullmatch(t)]
        if bad or len(set(self.required_tags)) != len(self.required_tags):
            raise ValueError(f"required_tags must be distinct plain tag names, got {list(self.required_tags)}")
        if self.json_schema is not None:
            import jsonschema

            try:
                jsonschema.validators.validator_for(self.json_schema).check_schema(self.json_schema)
            except jsonschema.SchemaError as exc:
                raise ValueError(f"json_schema is not a valid JSON Schema: {exc.message}") from exc
        if self.timeout_seconds <= 0:
            raise ValueError("timeout_seconds must be > 0")


# Markup that draws nothing once nothing is inside it: empty math ($$, $ $, \(\), \[\]), emphasis and strike-through
# markers (**, __, ~~) and code-span backticks.
_EMPTY_MATH = re.compile(r"\$\s*\$|\\\(\s*\\\)|\\\[\s*\\\]")
_MARKERS = str.maketrans(dict.fromkeys("`*_~"))


def visible_content(text: str) -> str:
    """What a reader sees of `text`, stripped: no HTML comments or tags outside code (<wbr>, <span></span> and <br>
    draw nothing; the text between tags stays), Markdown links and images as their text (an empty one is nothing),
    character references decoded (&nbsp; is a space), no invisible or blank-looking characters (a zero-width space, a
    Hangul filler, the braille blank), no empty math and no backticks, emphasis or strike-through markers (an empty
    code span, "**" or "\\(\\)" shows nothing)."""
    text = visible_text(html.unescape(without_markup(text)))
    return _EMPTY_MATH.sub("", text).translate(_MARKERS).strip()


def _tag_positions(markup: str, tag: str) -> list[int]:
    """Where `tag` (an exact opening or closing tag) occurs in `markup`, in any letter case (<THINK> is <think>, as
    reasoning.py reads it)."""
    return [m.start() for m in re.finditer(re.escape(tag), markup, re.IGNORECASE | re.ASCII)]


def check_tags(text: str, tags: tuple[str, ...], tags_only: bool) -> str | None:
    """None when each tag occurs once (in any letter case), in order, with visible content and not overlapping; else
    the reason it fails.
    Only real markup counts: a tag inside a code fence or indented code block, a code span, an HTML comment or a
    block quote is quoted text (markdown_code.py)."""
    markup = BLOCKQUOTE.sub(lambda m: " " * len(m.group()), mask_code(text))  # same offsets as `text`
    end, outside = 0, []
    for tag in tags:
        opening, closing = f"<{tag}>", f"</{tag}>"
        openings, closings = _tag_positions(markup, opening), _tag_positions(markup, closing)
        if len(openings) != 1 or len(closings) != 1:
            return f"{opening}...{closing} must occur exactly once outside code and quotes"
        start, stop = openings[0], closings[0]
        if start < end or stop < start:
            return f"{opening}...{closing} is out of order or overlaps the previous tag"
        if not visible_content(text[start + len(opening) : stop]):
            return f"{opening}...{closing} is empty (nothing visible inside)"
        outside.append(text[end:start])
        end = stop + len(closing)
    outside.append(text[end:])
    if tags_only and any(visible_content(part) for part in outside):
        return "text outside the required tags"
    return None


_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE | re.ASCII)
# The start of a JSON value inside { or [: a string, a number, a literal, a nested value, or a key of a JS-style
# object ({name: ...}): what a reader takes for JSON, valid or not.
_JSON_START = re.compile(r"""[{\[]\s*(?:["\d\-{\[\]}]|true|false|null|[\w'"]+\s*:)""")
# In prose, only an object or an array of strings, objects or arrays: "[1]" is a citation and "[ ]" a task box.
_PROSE_JSON_START = re.compile(r"""\{\s*(?:["{\[]|[\w']+\s*:)|\[\s*["{\[]""")


def _bracket_end(text: str, start: int) -> int | None:
    """The end of the balanced {...} or [...] opening at `start` (brackets inside JSON strings skipped), or None."""
    depth, in_string, k = 0, False, start
    while k < len(text):
        ch = text[k]
        if in_string:
            if ch == "\\":
                k += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return k + 1
        k += 1
    return None


def _prose_json(prose: str) -> list[tuple[int, str]]:
    """(end, text) of each top-level JSON-looking {...}/[...] in `prose` (code already blanked)."""
    found, pos = [], 0
    while (match := _PROSE_JSON_START.search(prose, pos)) is not None:
        end = _bracket_end(prose, match.start())
        if end is None:
            found.append((len(prose), prose[match.start() :]))
            break
        found.append((end, prose[match.start() : end]))
        pos = end
    return found


JSON_FENCES = ("json", "json5", "jsonc", "jsonl", "")  # info strings of a fence meant to hold JSON


def json_answer(text: str, in_answer_tag: bool = False) -> str:
    """The JSON the completion commits to. In its answer (what follows a leading reasoning block, "" when that block
    is never closed; with `in_answer_tag`, the content of its last real <answer> tag when it has one) the last of:
    its fenced blocks meant for JSON (```json, ```json5, bare ```), its other fenced blocks that hold something
    JSON-looking (a final ```python `answer = {...}` is the answer, not an earlier ```json block; a ```python
    `json.loads(s)` after it is not), its code spans and the {...}/[...] of its prose that look like JSON. With none,
    the whole answer. The last, not the first: an earlier one is a draft or a decoy that the answer went on to
    replace."""
    answer = answer_text(text)
    markup = mask_code(answer)
    tagged = list(_ANSWER_TAG.finditer(markup)) if in_answer_tag else []
    if tagged:
        answer = answer[tagged[-1].start(1) : tagged[-1].end(1)]
        markup = mask_code(answer)
    candidates = []
    for block in fenced_blocks(answer):
        # An unclosed fence runs to the end: a closing ``` written at the end of the JSON's own line is still a fence.
        body = block.body if block.closed else block.body.rstrip().removesuffix("```")
        if block.info.lower() in JSON_FENCES or _JSON_START.search(body):
            candidates.append((block.end, body))
    for start, end in code_spans(answer):
        body = answer[start:end].strip("`")
        if _JSON_START.match(body.strip()):
            candidates.append((end, body))
    candidates += _prose_json(markup)
    return max(candidates, key=lambda c: c[0])[1] if candidates else answer


def check_json(text: str, validator, in_answer_tag: bool = False) -> str | None:
    """None when the completion's JSON answer (json_answer) parses and validates; else the reason."""
    try:
        value = json.loads(json_answer(text, in_answer_tag))
    except json.JSONDecodeError as exc:
        return f"not JSON: {exc}"
    import jsonschema

    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        return f"JSON does not match the schema at {where}: {error.message}"[:300]
    return None


class FormatVerifier:
    """Score 1.0 when the completion passes every configured format check, else 0.0.

    Input columns: completion.   Output: score (None = cannot check), verdict, rationale (the failed checks),
    raw (JSON: check name -> passed). Format rewards are cheap shaping signals, so they get their own aspect.
    """

    name = "format"
    # 2: tags inside code fences, code spans or comments do not count; the JSON answer is the last block of the answer
    # after a leading think block (a decoy block before an invalid answer passed). 3: a tag's content must be visible
    # (not a zero-width space, &nbsp;, a comment or an empty code span); tags in an indented code block or a block
    # quote do not count; the JSON answer is the last code block of any language, JSON-looking code span or prose
    # {...}, inside <answer> tags when there are some (a ```json decoy before a ```json5 or prose answer passed).
    # 4: markup with nothing inside is no content (<wbr>, <span></span>, <br>, \(\), $$, **, [](x)); tags match in
    # any letter case (<THINK>, as reasoning.py reads them).
    version = "4"
    reads = ("completion",)
    Config = FormatConfig

    def __init__(self, config: FormatConfig | None = None):
        self.config = config or FormatConfig()
        self._pattern = None
        self._validator = None

    def __getstate__(self):  # jsonschema validators do not pickle; a copy rebuilds both on first use
        return {**self.__dict__, "_pattern": None, "_validator": None}

    def label(self, completion: str | None) -> Label:
        if not isinstance(completion, str):
            return Label(None, 0.0, "abstain", f"completion is {type(completion).__name__}, not text", aspect="format")
        cfg = self.config
        failures: dict[str, str | None] = {}
        if cfg.pattern is not None:
            try:
                failures["pattern"] = self._match(completion)
            except TimeoutError:
                return Label(None, 0.0, "timeout", f"pattern exceeded {cfg.timeout_seconds}s", aspect="format")
        if cfg.required_tags:
            failures["tags"] = check_tags(completion, cfg.required_tags, cfg.tags_only)
        if cfg.json_schema is not None:
            failures["json_schema"] = check_json(completion, self._json_validator(), "answer" in cfg.required_tags)
        raw = json.dumps({check: reason is None for check, reason in failures.items()})
        reasons = [f"{check}: {reason}" for check, reason in failures.items() if reason is not None]
        if reasons:
            return Label(0.0, 1.0, "incorrect", "; ".join(reasons), raw, aspect="format")
        return Label(1.0, 1.0, "correct", f"passes {', '.join(failures)}", raw, aspect="format")

    def _match(self, text: str) -> str | None:
        import regex

        if self._pattern is None:
            self._pattern = regex.compile(self.config.pattern)
        match = getattr(self._pattern, self.config.mode)
        if match(text, timeout=self.config.timeout_seconds) is None:
            return f"does not {self.config.mode} {self.config.pattern!r}"[:300]
        return None

    def _json_validator(self):
        if self._validator is None:
            import jsonschema

            self._validator = jsonschema.validators.validator_for(self.config.json_schema)(self.config.json_schema)
        return self._validator
