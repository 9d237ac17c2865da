import pytest

from rewardmill.transforms.judges.step_critique import build_step_critique, parse_first_error


@pytest.mark.parametrize(
    ("text", "n_steps", "expected"),
    [
        ("Answer: 2", 4, 2),  # the requested format
        ("Answer: 2\nStep 2 adds 3 instead of 4.", 4, 2),  # answer first, then the reason
        ("Answer: -1", 4, -1),  # no error
        ("Answer: -1 (all steps are correct)", 4, -1),  # no error, with a gloss
        ("answer:0", 4, 0),  # lower case, no space, step 0
        ("**Answer:** 3", 4, 3),  # markdown bold
        ("Answer: Step 1", 4, 1),  # labeled with the step word
        ("Final answer: paragraph #2", 4, 2),  # ProcessBench's paragraph wording
        ("Answer: none", 4, -1),  # labeled no-error word
        ("Answer: All correct.", 4, -1),  # labeled no-error phrase
        ("Answer: −1", 4, -1),  # Unicode minus
        ("2", 4, 2),  # the bare number
        ("  2.\nThe sum in step 2 is off.", 4, 2),  # bare number first, then a reason
        ("-1", 4, -1),  # bare no-error index
        ("Step 2", 4, 2),  # bare step
        ("(1)", 4, 1),  # parenthesized
        ("\\boxed{2}", 4, 2),  # ProcessBench's boxed format
        ("Step 0 and 1 are fine; step 3 is wrong.\n\\boxed{3}", 4, 3),  # boxed after reasoning, stray numbers ignored
        ("I first thought \\boxed{1}, but it is \\boxed{2}", 4, 2),  # the last boxed counts
        ("\\boxed{-1}", 4, -1),  # boxed no-error index
        ("Step 0: fine. Step 1: fine.\nAnswer: 3", 4, 3),  # labeled answer beats stray step numbers
        ("\\boxed{1}\nAnswer: 2", 4, 2),  # the requested label beats the box
        ("The earliest error is in step 2.", 4, 2),  # phrased answer
        ("The first wrong step is Step 1.", 4, 1),  # phrased answer, other wording
        ("The first error occurs at step 0, where 3 + 4 = 8.", 4, 0),  # phrased, arithmetic after it is ignored
        ("None", 4, -1),  # lone no-error word
        ("All steps are correct.", 4, -1),  # lone no-error sentence
        ("No errors found", 4, -1),  # lone no-error phrase
        ("Answer: 4", 4, None),  # malformed: out of range (steps are 0-3)
        ("Answer: -2", 4, None),  # malformed: below -1
        ("Answer: 2", 1, None),  # malformed: out of range for a one-step solution
        ("Answer: 0", 1, 0),  # one step, wrong
        ("Answer: 2.5", 4, None),  # malformed: not an index
        ("Answer: 0-3", 4, None),  # malformed: the range echoed back
        ("Answer: 12345678", 4, None),  # malformed: absurdly long number
        ("Step 0 is correct. Step 2 is wrong.", 4, None),  # malformed: stray step numbers, no answer
        ("No errors until step 3, where the sign flips.", 4, None),  # malformed: not a lone no-error phrase
        ("The first error is 2 + 3 = 6.", 4, None),  # malformed: arithmetic, not an index
        ("Answer: <step number>", 4, None),  # malformed: the template echoed
        ("I cannot tell.", 4, None),  # malformed: no answer
        ("", 4, None),  # malformed: empty
        (None, 4, None),  # malformed: no reply
    ],
)
def test_parse_first_error(text, n_steps, expected):
    assert parse_first_error(text, n_steps) == expected


def test_build_step_critique():
    system, user = build_step_critique("What is 2 + 3?", ["2 + 3 = 6\n", "  So the answer is 6."])
    assert (system["role"], user["role"]) == ("system", "user")
    assert "Answer: <step number>" in system["content"] and "Answer: -1" in system["content"]
    assert "from 0 to 1" in system["content"]
    content = user["content"]
    assert content.index("Problem:\nWhat is 2 + 3?") < content.index("Step 0: 2 + 3 = 6\n\nStep 1: So the answer")
    assert content.endswith("Start with 'Answer:'.")


@pytest.mark.parametrize(
    "steps",
    [
        ["only one step"],  # one step: the range reads 0 to 0
        ["Step 0: {x}", "Answer: 1"],  # braces and format words inside steps are kept verbatim
        ["a\n\nb", "c"],  # a multi-paragraph step stays one step
    ],
)
def test_build_step_critique_numbers_every_step(steps):
    _, user = build_step_critique("Q?", steps)
    for i, step in enumerate(steps):
        assert f"Step {i}: {step.strip()}" in user["content"]
    assert f"Step {len(steps)}: " not in user["content"]


def test_build_step_critique_needs_steps():
    with pytest.raises(ValueError, match="at least one step"):
        build_step_critique("Q?", [])
