import pytest

from rewardmill.transforms.labelers.markdown_code import (
    code_spans,
    fenced_blocks,
    html_comments,
    indented_code,
    mask_code,
)


@pytest.mark.parametrize(
    ("text", "blocks"),
    [
        ("```json\n{}\n```", [("json", "{}\n", True)]),  # one block
        ("a\n```\nx\n```\nb\n```py run\ny\n```", [("", "x\n", True), ("py", "y\n", True)]),  # two, info word only
        ("````\n```\nstill in\n````", [("", "```\nstill in\n", True)]),  # a shorter fence does not close
        ("~~~\na\n```\n~~~", [("", "a\n```\n", True)]),  # backticks do not close a tilde fence
        ("```\nnever closed", [("", "never closed", False)]),  # runs to the end
        ("x ```json\n{}\n```", [("", "", False)]),  # not at a line start: the later ``` opens one
        ("``` a`b\nx", []),  # a backtick in the info string: not a fence (CommonMark)
        ("    ```\nx\n```", [("", "", False)]),  # 4 spaces: indented, the later ``` opens one
    ],
)
def test_fenced_blocks(text, blocks):
    assert [(b.info, b.body, b.closed) for b in fenced_blocks(text)] == blocks


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("<a>\n```\n<b>\n```\n<c>", "<a><c>"),  # fenced block blanked
        ("<a> `<b>` ``<c>`d`` <e>", "<a><e>"),  # code spans, double backticks holding one
        ("<a> <!-- <b> --> <c>", "<a><c>"),  # HTML comment
        ("<a> <!-- <b>", "<a>"),  # an unclosed comment runs to the end
        ("<a> ` <b>", "<a>`<b>"),  # a lone backtick is text
        ("<a> `x\n\n<b>` <c>", "<a>`x<b>`<c>"),  # a code span does not cross a blank line
        ("`<!--` <a>", "<a>"),  # a comment opener inside a code span is code
        ("<a>\n\n    <b>\n<c>", "<a><c>"),  # an indented code block after a blank line
        ("<a>\n    <b>", "<a><b>"),  # an indented line continuing a paragraph is text
        ("1. <a>\n\n    <b>", "1.<a><b>"),  # indented under a list item: the item's continuation
    ],
)
def test_mask_code_keeps_only_markup_and_offsets(text, kept):
    masked = mask_code(text)
    assert len(masked) == len(text) and masked.count("\n") == text.count("\n")
    assert "".join(masked.split()) == kept


@pytest.mark.parametrize(
    ("text", "indented"),
    [
        ("    code", ["    code"]),  # at the start of the text
        ("para\n\n    code\n    more\n\nafter", ["    code", "    more"]),  # a block of two lines
        ("para\n    continued", []),  # a paragraph's continuation line
        ("- item\n\n    continued", []),  # a list item's continuation
        ("- item\n\nback out\n\n    code", ["    code"]),  # after the list has ended
        ("```\n\n    fenced\n```", []),  # inside a fence: the fence's
    ],
)
def test_indented_code(text, indented):
    assert [text[a:b] for a, b in indented_code(text)] == indented


def test_comments_and_code_spans_outside_fences():
    text = "a <!-- c --> `s` ```\n```\n<!-- f -->\n```\n<!-- open"
    assert [text[a:b] for a, b in html_comments(text)] == ["<!-- c -->", "<!-- open"]
    assert [text[a:b] for a, b in code_spans(text)] == ["`s`"]


@pytest.mark.parametrize(
    "text, shown",
    [
        ("b<wbr>ad", "bad"),  # an element that draws nothing
        ("b<span></span>ad b<x/>ad", "bad bad"),  # an empty element, a self-closing unknown one
        ('<a href="x">link</a>', "link"),  # the text between tags stays
        ("b[](x)ad", "bad"),  # an empty Markdown link
        ('[the docs](https://x.org "t")', "the docs"),  # a link shows its text
        ("`b<wbr>ad` and\n```\n<br>\n```", "`b<wbr>ad` and\n```\n<br>\n```"),  # code is kept as written
        ("a<!-- c -->b", "ab"),  # comments too
        ("[x] task [1]", "[x] task [1]"),  # brackets without a destination are text
    ],
)
def test_without_markup_is_what_renders(text, shown):
    from rewardmill.transforms.labelers.markdown_code import without_markup

    assert without_markup(text) == shown
