"""InstructionFollowingVerifier: which IFEval constraints does the completion satisfy? (if-verifiable)."""

import json
import re
from dataclasses import dataclass

from rewardmill.transforms.labelers.base import Label
from rewardmill.transforms.labelers.nltk_data import use_bundled_nltk_data
from rewardmill.transforms.labelers.reasoning import split_reasoning

MODES = ("strict", "loose")
# The checks are rules, but some rest on heuristics (sentence splitting, langdetect), so a score is not certain.
CONFIDENCE = 0.9
ASPECT = "instruction_following"
NLTK_RESOURCE = re.compile(r"Resource '?([\w/.-]+)'? not found")


@dataclass(frozen=True)
class InstructionFollowingConfig:
    mode: str = (
        "strict"  # strict: the completion as is | loose: any of IFEval's 8 variants (drop first/last line, no *)
    )

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")


def parse_constraints(constraints: str) -> tuple[list[str], list[dict]]:
    """IFEval's {"instruction_id_list": [...], "kwargs": [{...}, ...]} -> (ids, kwargs); ValueError if malformed."""
    try:
        data = json.loads(constraints)
    except (TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"constraints are not JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("instruction_id_list"), list):
        raise ValueError("constraints need an 'instruction_id_list' list")
    ids = data["instruction_id_list"]
    kwargs = data.get("kwargs") or [{} for _ in ids]
    if not isinstance(kwargs, list) or len(kwargs) != len(ids):
        raise ValueError(f"'kwargs' must be a list of {len(ids)} mappings, one per instruction")
    kwargs = [{} if kw is None else kw for kw in kwargs]
    if not all(isinstance(i, str) for i in ids) or not all(isinstance(kw, dict) for kw in kwargs):
        raise ValueError("instruction ids must be strings and kwargs mappings")
    # IFEval's HF rows carry every kwarg key with null for the unused ones; the checkers take only the set ones.
    return ids, [{k: v for k, v in kw.items() if v is not None} for kw in kwargs]


def build_checker(registry: dict, instruction_id: str, kwargs: dict):
    """A checker set up with `kwargs`; ValueError when they are missing or invalid. A missing argument is an
    error, not a default: the IFEval checkers would pick a random value, and labels must be reproducible."""
    checker = registry[instruction_id](instruction_id)
    missing = [k for k in checker.get_instruction_args_keys() if k not in kwargs]
    if missing:
        raise ValueError(f"{instruction_id}: missing kwargs {missing}")
    try:
        checker.build_description(**kwargs)
    except Exception as exc:  # unknown keyword, unsupported relation or language, ...
        raise ValueError(f"{instruction_id}: bad kwargs {kwargs}: {type(exc).__name__}: {exc}") from exc
    # A checker given a value it cannot use (a negative count, letter_frequency's letter "ab") silently draws a random
    # one instead: the label would change from run to run. Every given value must be the one the checker kept.
    kept = checker.get_instruction_args() or {}
    for key, value in kwargs.items():
        if key in kept and not _same_arg(value, kept[key]):
            raise ValueError(
                f"{instruction_id}: {key}={value!r} is not a valid value (the checker would use a random one: "
                f"{kept[key]!r}); fix the constraint"
            )
    return checker


def _same_arg(given, kept) -> bool:
    if isinstance(given, str) and isinstance(kept, str):
        return given.strip().lower() == kept.strip().lower()
    if isinstance(given, list | tuple) and isinstance(kept, list | tuple):
        return sorted(map(str, given)) == sorted(map(str, kept))
    return given == kept


class InstructionFollowingVerifier:
    """Score = the fraction of the prompt's IFEval instructions the completion follows (strict or loose).

    Input columns: completion, constraints (IFEval JSON).   Output: score (None = cannot verify: bad or
    unknown constraints, or a check whose NLTK data is not installed), verdict (correct = all followed),
    rationale, raw (JSON: per-instruction strict and loose results). Only the answer is judged: what follows a
    leading <think> block (reasoning.py); a stray </think> hides nothing, an unclosed block leaves no answer.
    The checkers are IFEval's as google-research has them today, with the deliberate hardenings that
    ifeval_checks.py lists; every check reads the answer as a reader sees it (no invisible padding, no HTML comments).
    """

    name = "instruction_following"
    # 2: a constraint value the checker would replace by a random one is an error. 3: only a leading think block is
    # not judged (a stray </think> hid what came before it); letter_frequency counts any one character (upstream);
    # the sentence and capital-word checks score (punkt_tab from llama-index-core) instead of erroring. 4: a check that
    # forbids something also holds on the text with look-alike characters folded (a Cyrillic а hid "bad"). 5: every
    # check reads what a reader sees (no invisible padding, no HTML comments); forbidding checks (now also the case
    # checks) hold on the skeleton (Unicode confusables, marks, entities, emphasis inside a word); constrained_response
    # needs exactly one option, response_language a detectable language, placeholders/bullets content, two_responses
    # different words, a postscript marker not inside a word; quotation takes typographic pairs (ifeval_checks.py).
    # 6: forbidding checks read the text as rendered (HTML tags and empty Markdown links outside code draw nothing:
    # "b<wbr>ad", "b[](x)ad"), and every punctuation character Unicode names a comma is a comma (U+FF64, Vai, Newa).
    version = "6"
    reads = ("completion", "constraints")
    tasks = ("instruction",)
    Config = InstructionFollowingConfig

    def __init__(self, config: InstructionFollowingConfig | None = None):
        self.config = config or InstructionFollowingConfig()
        use_bundled_nltk_data()

    def label(self, completion: str | None, constraints: str | None) -> Label:
        # if-verifiable's IFBench module downloads NLTK data when imported: only the IFEval part is used.
        import langdetect
        from if_verifiable.common import get_loose_transformations

        from rewardmill.transforms.labelers.ifeval_checks import REGISTRY, follows, reader_view, reads_as_seen

        use_bundled_nltk_data()  # again after unpickling in a fresh worker: a no-op once the path is there
        langdetect.DetectorFactory.seed = 0  # langdetect samples randomly; seed it so labels are reproducible

        if not constraints:
            return Label(None, 0.0, "abstain", "no constraints for this prompt", aspect=ASPECT)
        if not isinstance(completion, str):
            return Label(None, 0.0, "abstain", f"completion is {type(completion).__name__}, not text", aspect=ASPECT)
        try:
            ids, kwargs = parse_constraints(constraints)
        except ValueError as exc:
            return Label(None, 0.0, "error", str(exc)[:500], aspect=ASPECT)
        if not ids:
            return Label(None, 0.0, "abstain", "constraints list no instructions", aspect=ASPECT)
        unknown = sorted({i for i in ids if i not in REGISTRY})
        if unknown:
            return Label(None, 0.0, "abstain", f"no IFEval check for instruction ids {unknown}", aspect=ASPECT)
        try:
            checkers = [build_checker(REGISTRY, i, kw) for i, kw in zip(ids, kwargs, strict=True)]
        except ValueError as exc:
            return Label(None, 0.0, "error", str(exc)[:500], aspect=ASPECT)

        split = split_reasoning(completion)
        # After a reasoning block the blank lines that separate it from the answer are the template's, not the
        # answer's; without one the completion is judged exactly as IFEval judges a response.
        response = split.answer.strip() if split.reasoning is not None else split.answer
        response = reader_view(response)  # HTML comments are not shown; follows() drops invisible padding
        variants = [v for v in get_loose_transformations(response) if v.strip()] if response.strip() else []
        results, missing_data = [], {}
        for instruction_id, checker, kw in zip(ids, checkers, kwargs, strict=True):
            as_seen = reads_as_seen(instruction_id, kw)
            try:  # variants[0] is the response itself: strict checks it alone, loose takes any variant
                strict = bool(variants) and follows(checker, instruction_id, variants[0], as_seen)
                loose = strict or any(follows(checker, instruction_id, v, as_seen) for v in variants[1:])
            except LookupError as exc:  # NLTK data (punkt_tab) is not installed; nothing is downloaded here
                found = NLTK_RESOURCE.search(str(exc))
                missing_data[instruction_id] = found.group(1) if found else "unknown"
                continue
            except Exception as exc:
                reason = f"{instruction_id}: check failed: {type(exc).__name__}: {exc}"
                return Label(None, 0.0, "error", reason[:500], aspect=ASPECT)
            results.append({"id": instruction_id, "strict": strict, "loose": loose})
        raw = json.dumps({"mode": self.config.mode, "instructions": results})
        if missing_data:
            reason = (
                f"NLTK data not installed for {missing_data} (instruction id: resource); `make install` puts "
                "punkt_tab in place (llama-index-core, installed --no-deps)"
            )
            return Label(None, 0.0, "error", reason, raw, aspect=ASPECT)

        followed = [r["id"] for r in results if r[self.config.mode]]
        score = len(followed) / len(results)
        missed = [r["id"] for r in results if not r[self.config.mode]]
        rationale = f"{len(followed)}/{len(results)} instructions followed ({self.config.mode})"
        if missed:
            rationale += f"; not followed: {missed}"
        if not split.finished:
            rationale += "; the <think> block is never closed: no answer"
        verdict = "correct" if not missed else "incorrect"
        return Label(score, CONFIDENCE, verdict, rationale[:500], raw, aspect=ASPECT)
