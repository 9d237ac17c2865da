import json
import pickle

import pytest

from rewardmill.pipelines.config import ConfigError, from_dict
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


@pytest.mark.parametrize(
    ("instruction_id", "kwargs"),
    [
        ("length_constraints:number_sentences", {"num_sentences": 2, "relation": "at least"}),  # punkt sentences
        ("change_case:capital_word_frequency", {"capital_frequency": 1, "capital_relation": "at least"}),  # words
    ],
)
def test_checks_needing_nltk_data_cannot_verify_without_it(instruction_id, kwargs):
    import nltk

    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
        pytest.skip("NLTK punkt_tab is installed here")
    except LookupError:
        pass
    label = STRICT.label("HELLO there. How ARE you?", c((instruction_id, kwargs), (NO_COMMA, {})))
    assert (label.verdict, label.score) == ("error", None)
    assert "punkt_tab" in label.rationale and instruction_id in label.rationale


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
# does not. NLTK_DATA: the checks that need punkt_tab (not on any package registry these machines reach).
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
NLTK_DATA = {"length_constraints:number_sentences", "change_case:capital_word_frequency"}


def test_the_table_covers_the_registry():
    from if_verifiable.ifeval.instructions_registry import INSTRUCTION_DICT

    assert set(REGISTRY_ROWS) == set(INSTRUCTION_DICT)


@pytest.mark.parametrize("instruction_id", sorted(REGISTRY_ROWS))
def test_every_instruction_labels_a_follower_and_a_breaker_the_same_every_time(instruction_id):
    import nltk

    kwargs, follows, breaks = REGISTRY_ROWS[instruction_id]
    constraints = one(instruction_id, **kwargs)
    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
        has_punkt = True
    except LookupError:
        has_punkt = False
    labels = [STRICT.label(text, constraints) for text in (follows, breaks) for _ in range(3)]
    if instruction_id in NLTK_DATA and not has_punkt:
        assert {(lab.verdict, lab.score) for lab in labels} == {("error", None)}  # named, never a guess
        return
    assert [lab.score for lab in labels] == [1.0] * 3 + [0.0] * 3, [lab.rationale for lab in labels]


@pytest.mark.parametrize(
    ("instruction_id", "kwargs", "bad"),
    [
        ("keywords:letter_frequency", {"letter": "#", "let_frequency": 1, "let_relation": "at least"}, "letter"),
        ("keywords:letter_frequency", {"letter": "ab", "let_frequency": 1, "let_relation": "at least"}, "letter"),
    ],
)
def test_a_value_the_checker_would_replace_at_random_is_an_error(instruction_id, kwargs, bad):
    label = STRICT.label("anything", one(instruction_id, **kwargs))
    assert (label.verdict, label.score) == ("error", None) and f"{bad}=" in label.rationale
