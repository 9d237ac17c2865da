"""transforms/labelers/math_final.py: where the final answer is, and whether it commits to one value."""

import pytest

from rewardmill.transforms.labelers.math_final import committed_text, empty, final_site, site_snippet, unevaluated


@pytest.mark.parametrize(
    "completion, text",
    [
        ("<think>5</think>The answer is 7", "The answer is 7"),  # reasoning is not the answer
        ("<think>5", ""),  # unclosed: no answer
        ("5</think>7", "5 7"),  # a stray close tag hides nothing (tags are markup)
        ("<answer>5</answer>", " 5 "),
        ("5 \u043er 6", "5 or 6"),  # look-alikes folded
    ],
)
def test_committed_text(completion, text):
    assert committed_text(completion) == text


@pytest.mark.parametrize(
    "text, where, snippet",
    [
        ("\\boxed{6} is wrong, the answer is \\boxed{5}", "boxed", "$\\boxed{5}$"),  # the last box
        ("So \\boxed{5}. The answer is 6.", "answer_is", "answer is 6"),  # the later statement
        ("The answer is \\boxed{12}", "boxed", "$\\boxed{12}$"),  # a box inside the sentence is the answer
        ("7 + 5 = 12\nHope this helps!", "last_line", "7 + 5 = 12"),  # the last line that holds math
        ("x = 6\n\nChecked with 5 test cases", "last_line", "x = 6"),  # the last line that states a result
        ("There are 5 apples.\n\n— Page 6", "last_line", "There are 5 apples."),  # not a trailing page number
        ("no math here", None, None),
    ],
)
def test_final_site(text, where, snippet):
    site = final_site(text)
    assert (site and site.where, site and site_snippet(text, site)) == (where, snippet)


@pytest.mark.parametrize(
    "value, undone",
    [
        ("77 - 45", True),
        ("2^{10}", True),
        ("3 \\times 4", True),
        ("5!", True),
        ("x = 3 + 4", True),  # the right-hand side is what is stated
        ("32", False),
        ("-5", False),
        ("5.0", False),
        ("\\frac{10}{2}", False),  # a fraction of integers is a literal
        ("-1/3", False),
        ("1,000", False),
        ("\\binom{5}{2}", True),
        ("\\sqrt{1024}", True),  # the root of a perfect square is a computation left undone
        ("\\sqrt{8}", False),  # the root of any other number is a closed form
        ("3\\sqrt{2}", False),  # a closed form
        ("2\\pi", False),
        ("x + 1", False),  # an expression in a variable
    ],
)
def test_unevaluated(value, undone):
    assert unevaluated(value) is undone


@pytest.mark.parametrize(
    "value, nothing",
    [
        ("", True),
        (" ", True),
        ("\\text{}", True),
        ("?", True),  # a placeholder
        ("\\quad", True),
        ("\\ldots", True),
        ("0", False),
        ("x", False),
    ],
)
def test_empty(value, nothing):
    assert empty(value) is nothing


def test_a_long_statement_is_read_in_a_bounded_window():
    """Thousands of numbers on one line cost no more than a few: the statement is read WINDOW characters around the
    answer."""
    from rewardmill.transforms.labelers.math_final import WINDOW, sentence

    text = ", ".join(str(i) for i in range(5000)) + ". The answer is 5."
    text_line = "x " * 5000 + "\\boxed{5}" + " y" * 5000
    site = final_site(text_line)
    lo, hi = sentence(text_line, site)
    assert site_snippet(text, final_site(text)) == "answer is 5"
    assert site.outer_start - lo == WINDOW and hi - site.outer_end == WINDOW


@pytest.mark.parametrize(
    "text, where, value",
    [
        ("The answer is a math problem. 70 + 81 equals 151.", "last_line", "70 + 81 equals 151."),
        ("The answer is below.\n\n70 + 81 = 151", "last_line", "70 + 81 = 151"),
        # a value, or the lack of one, keeps the statement: "unknown", "x", a number word
        ("The answer is unknown. 4 + 4 is 8.", "answer_is", "unknown"),
        ("The answer is x. 8", "answer_is", "x"),
        ("The answer is eight. 4 + 4 is 8.", "answer_is", "eight"),
        # no later statement of a result: the valueless one stays (and finds no answer)
        ("The answer is a number. 8 or 9.", "answer_is", "a number"),
    ],
)
def test_an_answer_statement_without_a_value_gives_way(text, where, value):
    site = final_site(text)
    assert (site.where, text[site.start : site.end]) == (where, value)


@pytest.mark.parametrize(
    "completion, expected",
    [
        ("The answer is negative five.", "The answer is -5."),
        ("The answer is minus 5.", "The answer is -5."),
        ("The answer is 5 thousand.", "The answer is 5000."),
        ("The answer is 5k.", "The answer is 5000."),
        ("\\boxed{\\text{five}}", "\\boxed{\\text{5}}"),
        ("The answer is 101_2.", "The answer is 5."),
        ("\\boxed{12_{3}}", "\\boxed{5}"),
        ("\\boxed{⅓}", "\\boxed{1/3}"),
        ("\\boxed{0.\\overline{3}}", "\\boxed{\\frac{1}{3}}"),
        ("The answer is 5 × 10^3.", "The answer is $5 \\times 10^{3}$."),
        ("I have one apple and it is one of many.", "I have one apple and it is one of many."),  # a pronoun
        ("x = 6  # the answer is 5", "x = 6  # the aside is 5"),  # a comment is no answer statement
        ("6 (the answer is 5)", "6 (the aside is 5)"),
        ("The answer is 6 <!-- \\boxed{5} -->", "The answer is 6 <!-- aside{5} -->"),
    ],
)
def test_committed_text_reads_value_phrases_and_masks_asides(completion, expected):
    assert committed_text(completion) == expected


def test_a_struck_out_digit_is_withdrawn():
    assert "[struck out]" in committed_text("The answer is 5\u0338.")
