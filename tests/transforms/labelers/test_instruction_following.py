import json
import pickle

import pytest

from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.labelers.instruction_following import (
    InstructionFollowingConfig,
    InstructionFollowingVerifier,
)

STRICT = InstructionFollowingVerifier()
LOOSE = InstructionFollowingVerifier(InstructionFollowingConfig(mode="loose"))


def c(*pairs) -> str:
    """IFEval constraints JSON from (instruction_id, kwargs) pairs."""
    return json.dumps({"instruction_id_list": [i for i, _ in pairs], "kwargs": [kw for _, kw in pairs]})


def one(instruction_id: str, **kwargs) -> str:
    return c((instruction_id, kwargs))


def check(verifier, completion, constraints, expected):
    """`expected`: a score (verdict correct at 1.0, else incorrect) or the verdict of a None score."""
    label = verifier.label(completion, constraints)
    if isinstance(expected, str):
        assert (label.verdict, label.score) == (expected, None)
    else:
        assert (label.verdict, label.score) == ("correct" if expected == 1.0 else "incorrect", expected)
    assert label.aspect == "instruction_following" and label.rationale


FENCED_JSON = 'Here it is:\n```json\n{"a": 1}\n```'
KW = "keywords:existence"
WORDS = "length_constraints:number_words"
LANG = "language:response_language"
NO_COMMA = "punctuation:no_comma"
LOWER = "change_case:english_lowercase"
LETTERS = "keywords:letter_frequency"
FORBIDDEN = "keywords:forbidden_words"
BAD = {"forbidden_words": ["bad"]}
SENTENCES = "length_constraints:number_sentences"
CAPITALS = "change_case:capital_word_frequency"


@pytest.mark.parametrize(
    ("completion", "constraints", "expected"),
    [
        ("I like apple and pear.", one(KW, keywords=["apple", "pear"]), 1.0),  # both keywords present
        ("I like apple.", one(KW, keywords=["apple", "pear"]), 0.0),  # one keyword missing
        ("cat cat dog", one("keywords:frequency", keyword="cat", frequency=2, relation="at least"), 1.0),  # frequency
        ("this is bad", one("keywords:forbidden_words", forbidden_words=["bad"]), 0.0),  # forbidden word used
        ("zebra", one(LETTERS, letter="z", let_frequency=2, let_relation="less than"), 1.0),  # letter count
        ("Das Wetter ist heute sehr schön und warm.", one(LANG, language="de"), 1.0),  # German, as asked
        ("The weather is very nice and warm today.", one(LANG, language="de"), 0.0),  # English, not German
        ("one two three", one(WORDS, num_words=5, relation="less than"), 1.0),  # word count
        ("First.\n***\nSecond.", one("length_constraints:number_paragraphs", num_paragraphs=2), 1.0),  # *** splits
        ("Dear [name], hi.", one("detectable_content:number_placeholders", num_placeholders=1), 1.0),  # placeholder
        ("Hi.\nP.S. bye", one("detectable_content:postscript", postscript_marker="P.S."), 1.0),  # postscript
        ("* a\n* b", one("detectable_format:number_bullet_lists", num_bullets=2), 1.0),  # two bullets
        ("<<My Title>>\ntext", one("detectable_format:title"), 1.0),  # title in << >>
        ("Say hi. hi", one("combination:repeat_prompt", prompt_to_repeat="Say hi"), 1.0),  # repeats the prompt
        ("Bye. Anything else?", one("startend:end_checker", end_phrase="Anything else?"), 1.0),  # ends with phrase
        ("a, b", one(NO_COMMA), 0.0),  # comma used
        ("hello, there", c((LOWER, {}), (NO_COMMA, {})), 0.5),  # one of two followed
        ("<think>I, think</think>no commas here", one(NO_COMMA), 1.0),  # the think block is not judged
        ("", one(NO_COMMA), 0.0),  # an empty completion follows nothing
        ("<think>only, thinking</think>", one(NO_COMMA), 0.0),  # nothing after the thinking
        ("bad, worse</think> good", c((FORBIDDEN, BAD), (NO_COMMA, {})), 0.0),  # a stray </think> hides nothing
        ("<think>I, think. All good here", one(NO_COMMA), 0.0),  # an unclosed think block leaves no answer
        (" <THINK>bad, bad</THINK>\n\nAll good.", c((FORBIDDEN, BAD), (NO_COMMA, {})), 1.0),  # a leading block
        ("All good.\n<think>bad, bad</think>", c((FORBIDDEN, BAD), (NO_COMMA, {})), 0.0),  # not leading: judged
        ("This is b\u0430d.", one(FORBIDDEN, **BAD), 0.0),  # homoglyph: a Cyrillic a still spells the word
        ("This is b\u200bad.", one(FORBIDDEN, **BAD), 0.0),  # ...and so does a zero-width space inside it
        ("One\uff0c two", one(NO_COMMA), 0.0),  # a fullwidth comma is a comma
        ("the th\u0435", one("keywords:frequency", keyword="the", frequency=2, relation="less than"), 0.0),  # 2x
        ("\u0414\u0430 \u043d\u0435\u0442 \u0432\u043e\u0442 \u0442\u0430\u043a.", one(NO_COMMA), 1.0),  # Russian
        ("c\u0430t", one(KW, keywords=["cat"]), 0.0),  # a check that must find a word reads the text as written
        ("a#b#", one(LETTERS, letter="#", let_frequency=2, let_relation="at least"), 1.0),  # any one character
        ("a#b", one(LETTERS, letter="#", let_frequency=2, let_relation="at least"), 0.0),  # ...is counted
        ("ZZ", one(LETTERS, letter="Z", let_frequency=2, let_relation="at least"), 1.0),  # case-insensitive
        ("One. Two. Three.", one(SENTENCES, num_sentences=3, relation="at least"), 1.0),  # punkt: 3 sentences
        ("Mr. Smith left. Bye.", one(SENTENCES, num_sentences=3, relation="less than"), 1.0),  # Mr. ends none
        ("HELLO there. How ARE you?", one(CAPITALS, capital_frequency=2, capital_relation="at least"), 1.0),  # 2
        ("Hello there. How ARE you?", one(CAPITALS, capital_frequency=2, capital_relation="at least"), 0.0),  # 1
        (FENCED_JSON, one("detectable_format:json_format"), 0.0),  # strict: the preamble line breaks the JSON
        ("Sure!\nhello there", one(LOWER), 0.0),  # strict: "Sure!" has a capital
        ("no commas", json.dumps({"instruction_id_list": [NO_COMMA]}), 1.0),  # kwargs omitted: none needed
        ("cat", one(KW, keywords=["cat"], num_words=None), 1.0),  # HF-style rows: unused kwargs are null
        ("x", None, "abstain"),  # no constraints for this prompt
        ("x", "", "abstain"),  # empty constraints
        (None, one(NO_COMMA), "abstain"),  # no completion text
        ("x", "{bad json", "error"),  # constraints are not JSON
        ("x", json.dumps([NO_COMMA]), "error"),  # a list, not IFEval's mapping
        ("x", json.dumps({"instruction_id_list": [NO_COMMA], "kwargs": [{}, {}]}), "error"),  # kwargs length differs
        ("x", json.dumps({"instruction_id_list": [3], "kwargs": [{}]}), "error"),  # id is not a string
        ("x", c(), "abstain"),  # no instructions at all
        ("x", one("keywords:nonexistent"), "abstain"),  # unknown instruction id
        ("x", one("count:word_count_range", min_words=1, max_words=9), "abstain"),  # an IFBench id
        ("x", one(KW), "error"),  # required kwarg missing: never a random one
        ("x", one(NO_COMMA, bogus=1), "error"),  # unexpected kwarg
        ("x", one(WORDS, num_words=5, relation="about"), "error"),  # relation IFEval does not know
    ],
)
def test_strict_table(completion, constraints, expected):
    check(STRICT, completion, constraints, expected)


@pytest.mark.parametrize(
    ("completion", "constraints", "expected"),
    [
        (FENCED_JSON, one("detectable_format:json_format"), 1.0),  # first line and ``` fences dropped
        ("Sure!\nhello there", one(LOWER), 1.0),  # first line dropped
        ("hello there\nThanks!", one(LOWER), 1.0),  # last line dropped
        ('*"hi"*', one("startend:quotation"), 1.0),  # markdown * stripped
        ("Sure!\nhello there\nBye!", c((LOWER, {}), (NO_COMMA, {})), 1.0),  # both lines dropped
        ("Sure, ok.\nHello, there", one(NO_COMMA), 0.0),  # no variant is free of commas
        ("x", "{bad json", "error"),  # malformed constraints are malformed in any mode
    ],
)
def test_loose_table(completion, constraints, expected):
    check(LOOSE, completion, constraints, expected)


def test_raw_keeps_strict_and_loose_per_instruction():
    label = STRICT.label("Sure!\nhello there", c((LOWER, {}), (NO_COMMA, {})))
    assert json.loads(label.raw) == {
        "mode": "strict",
        "instructions": [
            {"id": LOWER, "strict": False, "loose": True},
            {"id": NO_COMMA, "strict": True, "loose": True},
        ],
    }


NLTK_CHECKS = [
    ("length_constraints:number_sentences", {"num_sentences": 2, "relation": "at least"}),  # punkt sentences
    ("change_case:capital_word_frequency", {"capital_frequency": 1, "capital_relation": "at least"}),  # words
]


@pytest.mark.parametrize(("instruction_id", "kwargs"), NLTK_CHECKS)
def test_checks_needing_nltk_data_score_offline_from_the_bundled_punkt_tab(instruction_id, kwargs):
    from rewardmill.transforms.labelers.nltk_data import PUNKT_TAB, bundled_nltk_data

    folder = bundled_nltk_data()
    assert folder is not None and folder.endswith("llama_index/core/_static/nltk_cache"), "run `make install`"
    label = STRICT.label("HELLO there. How ARE you?", c((instruction_id, kwargs), (NO_COMMA, {})))
    assert (label.verdict, label.score) == ("correct", 1.0), label.rationale
    import nltk

    assert nltk.data.find(PUNKT_TAB).path.startswith(folder)  # found in the wheel's folder, not downloaded


def test_the_bundled_folder_is_found_without_importing_llama_index():
    import subprocess
    import sys

    code = (
        "import sys; from rewardmill.transforms.labelers.nltk_data import use_bundled_nltk_data as u; "
        "assert u(); assert not [m for m in sys.modules if m.startswith('llama_index.')], sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_no_bundled_folder_when_llama_index_core_is_not_installed(monkeypatch, tmp_path):
    import importlib.machinery
    import importlib.util

    from rewardmill.transforms.labelers import nltk_data

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert nltk_data.bundled_nltk_data() is None and nltk_data.use_bundled_nltk_data() is None
    spec = importlib.machinery.ModuleSpec("llama_index", None, is_package=True)
    spec.submodule_search_locations = [str(tmp_path)]  # installed, but without the data folder
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec)
    assert nltk_data.bundled_nltk_data() is None


@pytest.fixture
def no_punkt_tab(monkeypatch):
    """NLTK as it is without llama-index-core: no bundled folder, nothing on the path, no tokenizer cached."""
    import nltk
    from if_verifiable.ifeval import instructions_util

    from rewardmill.transforms.labelers import instruction_following, nltk_data

    folder = nltk_data.bundled_nltk_data()
    monkeypatch.setattr(nltk.data, "path", [p for p in nltk.data.path if p != folder])
    monkeypatch.setattr(instruction_following, "use_bundled_nltk_data", lambda: None)
    caches = [instructions_util._get_sentence_tokenizer, nltk.tokenize._get_punkt_tokenizer]
    for cache in caches:
        cache.cache_clear()
    yield
    for cache in caches:  # the next test loads the real one again
        cache.cache_clear()


@pytest.mark.parametrize(("instruction_id", "kwargs"), NLTK_CHECKS)
def test_without_the_nltk_data_the_check_is_a_named_error_not_a_guess(no_punkt_tab, instruction_id, kwargs):
    label = STRICT.label("HELLO there. How ARE you?", c((instruction_id, kwargs), (NO_COMMA, {})))
    assert (label.verdict, label.score) == ("error", None)
    assert "punkt_tab" in label.rationale and instruction_id in label.rationale and "make install" in label.rationale


def test_routed_to_instruction_prompts_and_config_checked():
    assert InstructionFollowingVerifier.tasks == ("instruction",)
    assert InstructionFollowingVerifier.reads == ("completion", "constraints")
    assert from_dict(InstructionFollowingConfig, {"mode": "loose"}, "x").mode == "loose"
    with pytest.raises(ConfigError):
        from_dict(InstructionFollowingConfig, {"mode": "lenient"}, "x")


def test_pickle_round_trip():
    copy = pickle.loads(pickle.dumps(LOOSE))
    assert copy.config.mode == "loose"
    assert copy.label(FENCED_JSON, one("detectable_format:json_format")).score == 1.0


# One IFEval-style row per instruction id of the registry: valid kwargs, a completion that follows it, and one that
# does not.
REGISTRY_ROWS = {
    "keywords:existence": ({"keywords": ["apple", "pear"]}, "An apple and a pear.", "Only plums."),
    "keywords:frequency": ({"keyword": "cat", "frequency": 2, "relation": "at least"}, "cat cat", "one cat"),
    "keywords:forbidden_words": ({"forbidden_words": ["bad"]}, "All good.", "This is bad."),
    "keywords:letter_frequency": ({"letter": "z", "let_frequency": 2, "let_relation": "at least"}, "zoo zebra", "no"),
    "language:response_language": ({"language": "en"}, "This is plainly an English sentence.", "Ceci est français."),
    "length_constraints:number_sentences": ({"num_sentences": 2, "relation": "at least"}, "One. Two.", "One."),
    "length_constraints:number_paragraphs": ({"num_paragraphs": 2}, "a\n***\nb", "a"),
    "length_constraints:number_words": ({"num_words": 3, "relation": "less than"}, "two words", "one two three four"),
    "length_constraints:nth_paragraph_first_word": (
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"},
        "first\n\nthen more",
        "first\n\nnow more",
    ),
    "detectable_content:number_placeholders": ({"num_placeholders": 1}, "Dear [name],", "Dear you,"),
    "detectable_content:postscript": ({"postscript_marker": "P.S."}, "Hi.\nP.S. bye", "Hi."),
    "detectable_format:number_bullet_lists": ({"num_bullets": 2}, "* a\n* b", "* a"),
    "detectable_format:constrained_response": ({}, "My answer is yes.", "Sure thing."),
    "detectable_format:number_highlighted_sections": ({"num_highlights": 1}, "*very* nice", "plain"),
    "detectable_format:multiple_sections": (
        {"section_spliter": "Section", "num_sections": 2},
        "Section 1\na\nSection 2\nb",
        "Section 1\na",
    ),
    "detectable_format:json_format": ({}, '{"a": 1}', "not json"),
    "detectable_format:title": ({}, "<<My Title>>\ntext", "no title"),
    "combination:two_responses": ({}, "first answer\n******\nsecond answer", "one answer"),
    "combination:repeat_prompt": ({"prompt_to_repeat": "Say hi"}, "Say hi then hi", "hi"),
    "startend:end_checker": ({"end_phrase": "Is there anything else?"}, "Done. Is there anything else?", "Done."),
    "change_case:capital_word_frequency": ({"capital_frequency": 2, "capital_relation": "at least"}, "THE CAT", "x"),
    "change_case:english_capital": ({}, "ALL CAPITAL ENGLISH TEXT HERE", "Mixed case text"),
    "change_case:english_lowercase": ({}, "all lowercase english text here", "Not Lowercase"),
    "punctuation:no_comma": ({}, "no commas here", "a, b"),
    "startend:quotation": ({}, '"quoted"', "bare"),
}


def test_the_table_covers_the_registry():
    from if_verifiable.ifeval.instructions_registry import INSTRUCTION_DICT

    assert set(REGISTRY_ROWS) == set(INSTRUCTION_DICT)


@pytest.mark.parametrize("instruction_id", sorted(REGISTRY_ROWS))
def test_every_instruction_labels_a_follower_and_a_breaker_the_same_every_time(instruction_id):
    kwargs, follows, breaks = REGISTRY_ROWS[instruction_id]
    constraints = one(instruction_id, **kwargs)
    labels = [STRICT.label(text, constraints) for text in (follows, breaks) for _ in range(3)]
    assert [lab.score for lab in labels] == [1.0] * 3 + [0.0] * 3, [lab.rationale for lab in labels]


@pytest.mark.parametrize(
    ("kwargs", "bad"),
    [
        ({"letter": "ab", "let_frequency": 1, "let_relation": "at least"}, "letter must be one"),  # two letters
        ({"letter": " ", "let_frequency": 1, "let_relation": "at least"}, "letter must be one"),  # upstream counts 0
        ({"letter": "", "let_frequency": 1, "let_relation": "at least"}, "letter must be one"),  # upstream: random
        ({"letter": "a", "let_frequency": -1, "let_relation": "at least"}, "let_frequency="),  # random count
    ],
)
def test_a_value_the_checker_cannot_count_is_an_error(kwargs, bad):
    label = STRICT.label("anything", one(LETTERS, **kwargs))
    assert (label.verdict, label.score) == ("error", None) and bad in label.rationale


def test_letter_frequency_counts_the_given_character_like_upstream():
    """google-research's instructions.py (2025) takes any single character; if-verifiable 0.1.2 swaps "#" for a
    random letter, so the same constraint gave a different label from run to run before it was refused."""
    constraints = one(LETTERS, letter="#", let_frequency=3, let_relation="less than")
    labels = {(lab.verdict, lab.score) for lab in (STRICT.label("#a#b#", constraints) for _ in range(5))}
    assert labels == {("incorrect", 0.0)}  # three "#": not fewer than three, every time
