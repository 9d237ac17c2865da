"""transforms/steps/segment.py: every strategy's cuts, and spans that always reproduce the step texts."""

import pickle
import random
import re

import pytest

from rewardmill.transforms.steps.segment import STRATEGIES, Step, join_prefix, segment


def texts(completion: str, strategy: str, **kwargs) -> list[str]:
    return [step.text for step in segment(completion, strategy, **kwargs)]


@pytest.mark.parametrize(
    "completion, expected",
    [
        # two paragraphs
        ("First, 2 + 2 = 4.\n\nSo the answer is 4.", ["First, 2 + 2 = 4.", "So the answer is 4."]),
        # a single newline does not split a paragraph
        ("line one\nline two\n\nnext", ["line one\nline two", "next"]),
        # several blank lines, and a "blank" line holding spaces and tabs, are one separator
        ("a\n\n\n\nb\n \t \nc", ["a", "b", "c"]),
        # Windows line endings
        ("a\r\n\r\nb", ["a", "b"]),
        # leading and trailing whitespace never becomes a step
        ("\n\n  a  \n\n", ["a"]),
        # no blank line: one step
        ("just one paragraph", ["just one paragraph"]),
        # empty completion
        ("", []),
        # whitespace only
        (" \n\n\t\n ", []),
    ],
)
def test_paragraphs(completion, expected):
    assert texts(completion, "paragraphs") == expected


def test_paragraphs_is_the_default():
    assert segment("a\n\nb") == segment("a\n\nb", "paragraphs")


@pytest.mark.parametrize(
    "completion, expected",
    [
        # one step per line
        ("a\nb\nc", ["a", "b", "c"]),
        # empty and whitespace-only lines are skipped
        ("a\n\n   \nb", ["a", "b"]),
        # \r\n and a lone \r are line breaks too
        ("a\r\nb\rc", ["a", "b", "c"]),
        # indentation is stripped from the text (the span moves with it)
        ("  a\n\tb", ["a", "b"]),
        # nothing but newlines
        ("\n\n\n", []),
    ],
)
def test_lines(completion, expected):
    assert texts(completion, "lines") == expected


@pytest.mark.parametrize(
    "completion, expected",
    [
        # "Step N:" markers
        ("Step 1: add.\nStep 2: divide.", ["Step 1: add.", "Step 2: divide."]),
        # text before the first marker is its own step
        ("Let's solve it.\nStep 1: add.\nStep 2: done.", ["Let's solve it.", "Step 1: add.", "Step 2: done."]),
        # "Step N." and bold "**Step N**" and markdown headings, case-insensitive
        ("**Step 1** a\n## Step 2. b\nstep 3 c", ["**Step 1** a", "## Step 2. b", "step 3 c"]),
        # a step runs over several lines until the next marker
        ("Step 1: x = 2\nso y = 3\nStep 2: z", ["Step 1: x = 2\nso y = 3", "Step 2: z"]),
        # "Step" markers win: a numbered list inside a step stays in it
        ("Step 1: two parts\n1. a\n2. b\nStep 2: c", ["Step 1: two parts\n1. a\n2. b", "Step 2: c"]),
        # without "Step" markers, numbered-list lines are markers
        ("Plan:\n1. add\n2) divide", ["Plan:", "1. add", "2) divide"]),
        # a decimal number at a line start is not a list marker
        ("1. compute\n3.14 is pi", ["1. compute\n3.14 is pi"]),
        # "step" in the middle of a line is not a marker
        ("Take one step 1 at a time.\nStep 1: go", ["Take one step 1 at a time.", "Step 1: go"]),
        # malformed: "Step" without a number is not a marker
        ("Step: a\nStep two: b", ["Step: a\nStep two: b"]),
        # malformed: a marker with nothing after it is still a (short) step
        ("Step 1:\nStep 2: b", ["Step 1:", "Step 2: b"]),
        # no marker at all: the whole completion is one step
        ("The answer is 4.", ["The answer is 4."]),
        # empty
        ("", []),
    ],
)
def test_markers(completion, expected):
    assert texts(completion, "markers") == expected


@pytest.mark.parametrize(
    "completion, expected",
    [
        # three sentence ends
        ("It is 4. Check it! Done? Yes.", ["It is 4.", "Check it!", "Done?", "Yes."]),
        # a decimal number does not end a sentence
        ("Pi is 3.14 roughly. Next", ["Pi is 3.14 roughly.", "Next"]),
        # a number ending a sentence does
        ("The value is 3.14. Next", ["The value is 3.14.", "Next"]),
        # common abbreviations, in any case, do not end a sentence
        ("Use a prime, e.g. 7, i.e. odd. E.g. this.", ["Use a prime, e.g. 7, i.e. odd.", "E.g. this."]),
        # an abbreviation inside brackets
        ("See (cf. Fig. 2) here. Then", ["See (cf. Fig. 2) here.", "Then"]),
        # closing quotes and brackets stay with their sentence
        ('He said "stop." Then (he left.) Fine', ['He said "stop."', "Then (he left.)", "Fine"]),
        # repeated punctuation is one end
        ("Really?! Yes...", ["Really?!", "Yes..."]),
        # no whitespace after the period: not an end (a file name, a URL)
        ("Open main.py now", ["Open main.py now"]),
        # a list number opening a line is not a sentence
        ("Steps:\n1. Add. 2. Divide.", ["Steps:\n1. Add.", "2.", "Divide."]),
        # blank lines always end a sentence, even without punctuation
        ("Solution\n\nWe add", ["Solution", "We add"]),
        # a final sentence without punctuation
        ("Add. Then divide", ["Add.", "Then divide"]),
        # whitespace only
        ("  \n ", []),
    ],
)
def test_sentences(completion, expected):
    assert texts(completion, "sentences") == expected


@pytest.mark.parametrize(
    "completion, pattern, expected",
    [
        # a literal separator
        ("a;b;;c", ";", ["a", "b", "c"]),
        # a separator with whitespace around it
        ("a --- b---c", r"\s*---\s*", ["a", "b", "c"]),
        # a zero-width lookahead: split before each "Step", keeping the marker in the step
        ("x Step 1 a Step 2 b", r"(?=Step)", ["x", "Step 1 a", "Step 2 b"]),
        # capturing groups do not leak into the steps (unlike re.split)
        ("a1b2c", r"(\d)", ["a", "b", "c"]),
        # inline flags work
        ("aXbxc", r"(?i)x", ["a", "b", "c"]),
        # a pattern that never matches: one step
        ("abc", r"\d", ["abc"]),
        # separators only
        (";;;", ";", []),
    ],
)
def test_regex(completion, pattern, expected):
    assert texts(completion, "regex", pattern=pattern) == expected


@pytest.mark.parametrize(
    "completion, max_steps, expected",
    [
        # fewer steps than the cap: unchanged
        ("a\n\nb", 3, ["a", "b"]),
        # exactly the cap: unchanged
        ("a\n\nb", 2, ["a", "b"]),
        # over the cap: the tail is merged into the last kept step, separators included
        ("a\n\nb\n\nc\n\nd", 2, ["a", "b\n\nc\n\nd"]),
        # a cap of one: the whole stripped completion
        ("  a\n\nb  ", 1, ["a\n\nb"]),
        # no cap
        ("a\n\nb\n\nc", None, ["a", "b", "c"]),
    ],
)
def test_max_steps(completion, max_steps, expected):
    steps = segment(completion, max_steps=max_steps)
    assert [s.text for s in steps] == expected
    assert [s.index for s in steps] == list(range(len(expected)))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        # unknown strategy: the message names it and the allowed ones
        ({"strategy": "words"}, r"'words'.*paragraphs, lines, markers, sentences, regex"),
        # regex without a pattern
        ({"strategy": "regex"}, r"'regex' needs a separator `pattern`"),
        # regex with an empty pattern (would split between every character)
        ({"strategy": "regex", "pattern": ""}, r"'regex' needs a separator `pattern`"),
        # a pattern that does not compile: the message names it
        ({"strategy": "regex", "pattern": "(unclosed"}, r"invalid separator pattern '\(unclosed'"),
        # a pattern for a strategy that would silently ignore it
        ({"strategy": "lines", "pattern": ";"}, r"only used by strategy 'regex', not 'lines'"),
        # a cap of zero
        ({"max_steps": 0}, r"max_steps must be a positive integer"),
        # a negative cap
        ({"max_steps": -2}, r"max_steps must be a positive integer"),
        # a bool is not a cap
        ({"max_steps": True}, r"max_steps must be a positive integer"),
    ],
)
def test_invalid_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        segment("a\n\nb", **kwargs)


@pytest.mark.parametrize("completion", [None, b"bytes", 42])
def test_completion_must_be_text(completion):
    with pytest.raises(TypeError, match="completion must be a str"):
        segment(completion)


def test_spans_and_indices():
    completion = "  Step 1: a\n\n\tStep 2: b  \n"
    assert segment(completion) == [Step(0, "Step 1: a", 2, 11), Step(1, "Step 2: b", 14, 23)]


@pytest.mark.parametrize(
    "upto, expected",
    [
        # through the first step: no trailing separator
        (0, "Step 1: a"),
        # through the second step
        (1, "Step 1: a\n\nStep 2: b"),
        # through the last step: the completion without its trailing whitespace
        (2, "Step 1: a\n\nStep 2: b\n\nStep 3: c"),
    ],
)
def test_join_prefix(upto, expected):
    completion = "Step 1: a\n\nStep 2: b\n\nStep 3: c\n"
    assert join_prefix(completion, segment(completion), upto) == expected


@pytest.mark.parametrize("upto", [3, -1])
def test_join_prefix_out_of_range(upto):
    completion = "a\n\nb\n\nc"
    with pytest.raises(IndexError, match="out of range for 3 step"):
        join_prefix(completion, segment(completion), upto)


def test_join_prefix_rejects_steps_of_another_completion():
    with pytest.raises(ValueError, match="does not hold its text"):
        join_prefix("xxxxxxxx", segment("a\n\nb"), 1)


def test_step_is_frozen_and_pickles():
    step = Step(0, "a", 0, 1)
    with pytest.raises(AttributeError):
        step.text = "b"
    assert pickle.loads(pickle.dumps(step)) == step


ALPHABET = list("ab3.,!?;:") + [" ", " ", "\n", "\n\n", "\t", "\r\n", "Step 1:", "**Step 2**", "1. ", "e.g. ", "3.14"]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("max_steps", [None, 1, 3])
def test_spans_reproduce_texts_on_random_strings(strategy, max_steps):
    rng = random.Random(f"{strategy}-{max_steps}")
    pattern = r"[;:]" if strategy == "regex" else None
    for _ in range(300):
        completion = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 40)))
        steps = segment(completion, strategy, pattern=pattern, max_steps=max_steps)
        assert [s.index for s in steps] == list(range(len(steps)))
        if max_steps is not None:
            assert len(steps) <= max_steps
        if not completion.strip():
            assert steps == []
        previous_end = 0
        for step in steps:
            assert completion[step.start : step.end] == step.text
            assert step.text and step.text == step.text.strip()
            assert previous_end <= step.start < step.end
            previous_end = step.end
        # nothing but whitespace (and, for regex, separators) lies outside the steps: no text is lost
        bounds = [0, *(x for step in steps for x in (step.start, step.end)), len(completion)]
        outside = [completion[a:b] for a, b in zip(bounds[::2], bounds[1::2], strict=True)]
        assert all(not (re.sub(pattern, "", gap) if pattern else gap).strip() for gap in outside)
        if steps and strategy != "regex":
            # the prefix through the last step is the whole completion but its trailing whitespace
            assert join_prefix(completion, steps, len(steps) - 1) == completion.rstrip()
            if max_steps == 1:
                assert steps[0].text == completion.strip()
