"""FormatVerifier: does the completion have the required shape (regex, ordered tags, JSON schema)?"""

import json
import re
from dataclasses import dataclass

from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.markdown_code import fenced_blocks, mask_code
from rewardmill.transforms.labelers.reasoning import answer_text

MODES = ("search", "fullmatch")
DEFAULT_TAGS = ("think", "answer")
TAG_NAME = re.compile(r"[A-Za-z][\w.-]*")
JSON_FENCES = ("json", "")  # the info strings of a fence that can hold the JSON answer


@dataclass(frozen=True)
class FormatConfig:
    """Every configured check must pass. With none configured, the check is the DeepSeek-R1 think/answer format."""

    pattern: str | None = None  # `regex` module syntax (a superset of `re`); inline flags such as (?s) work
    mode: str = "search"  # search: the pattern occurs somewhere | fullmatch: the whole completion matches it
    # [think, answer]: <think>..</think> then <answer>..</answer>, each once, non-empty. None: [think, answer] when
    # neither pattern nor json_schema is set, else no tags.
    required_tags: tuple[str, ...] | None = None
    tags_only: bool = False  # with required_tags: only whitespace outside the tag blocks (DeepSeek-R1 style)
    # The answer (after a leading <think> block) must validate: its last ```json (or bare ```) block, else all of it.
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


def check_tags(text: str, tags: tuple[str, ...], tags_only: bool) -> str | None:
    """None when each tag occurs once, in order, non-empty and not overlapping; else the reason it fails. Only real
    markup counts: a tag inside a code fence, a code span or an HTML comment is quoted text (markdown_code.py)."""
    markup = mask_code(text)  # same offsets as `text`: positions come from it, contents from `text`
    end, outside = 0, []
    for tag in tags:
        opening, closing = f"<{tag}>", f"</{tag}>"
        if markup.count(opening) != 1 or markup.count(closing) != 1:
            return f"{opening}...{closing} must occur exactly once outside code"
        start, stop = markup.find(opening), markup.find(closing)
        if start < end or stop < start:
            return f"{opening}...{closing} is out of order or overlaps the previous tag"
        if not text[start + len(opening) : stop].strip():
            return f"{opening}...{closing} is empty"
        outside.append(text[end:start])
        end = stop + len(closing)
    outside.append(text[end:])
    if tags_only and any(part.strip() for part in outside):
        return "text outside the required tags"
    return None


def json_answer(text: str) -> str:
    """The JSON the completion commits to: in its answer (what follows a leading reasoning block; "" when that block
    is never closed), the last ```json or bare ``` block, else the whole answer. The last block, not the first: an
    earlier block is a draft or a decoy that the answer went on to replace."""
    answer = answer_text(text)
    blocks = [b for b in fenced_blocks(answer) if b.info.lower() in JSON_FENCES]
    if not blocks:
        return answer
    body = blocks[-1].body
    # An unclosed fence runs to the end: a closing ``` written at the end of the JSON's own line is still a fence.
    return body if blocks[-1].closed else body.rstrip().removesuffix("```")


def check_json(text: str, validator) -> str | None:
    """None when the completion's JSON answer (json_answer) parses and validates; else the reason."""
    try:
        value = json.loads(json_answer(text))
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
    # after a leading think block (a decoy block before an invalid answer passed).
    version = "2"
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
            failures["json_schema"] = check_json(completion, self._json_validator())
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
