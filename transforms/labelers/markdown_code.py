"""Where a completion's Markdown code is: fenced blocks, inline code spans and HTML comments.

Format checks read structure (the think/answer tags, the JSON answer) only where it is real structure: a tag
written inside a code fence, a code span or a comment is quoted text, not the completion's own markup. The rules
follow CommonMark where it matters here: a fence is a line of 3+ backticks or tildes (up to 3 spaces indented) and
closes at a line of at least as many of the same character; an unclosed fence runs to the end of the text; a code
span closes at the next run of exactly as many backticks within its paragraph; an unclosed comment runs to the end.
An indented code block (4 spaces) is recognised after a blank line outside a list (`indented_code`); nested lists and
block quotes are not followed, so an indented line inside a quoted list item can still be misread.
"""

import re
from dataclasses import dataclass

_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_INLINE = re.compile(r"`+|<!--")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


@dataclass(frozen=True)
class Fence:
    """A fenced code block: `info` is the word after the opening fence ("json", "" when none); `start`:`end` spans
    the whole block, fences included, in the text it was found in."""

    info: str
    body: str
    start: int
    end: int
    closed: bool


def fenced_blocks(text: str) -> list[Fence]:
    """The fenced code blocks of `text`, in order."""
    blocks, lines, offset = [], text.splitlines(keepends=True), 0
    i = 0
    while i < len(lines):
        opened = _FENCE_OPEN.fullmatch(lines[i].rstrip("\r\n"))
        if opened is None or (opened.group(1)[0] == "`" and "`" in opened.group(2)):
            offset += len(lines[i])
            i += 1
            continue
        marker, start = opened.group(1), offset
        closing = re.compile(rf" {{0,3}}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*")
        body_start = offset + len(lines[i])
        offset, i = body_start, i + 1
        while i < len(lines) and not closing.fullmatch(lines[i].rstrip("\r\n")):
            offset += len(lines[i])
            i += 1
        closed = i < len(lines)
        body = text[body_start:offset]
        if closed:
            offset += len(lines[i])
            i += 1
        info = opened.group(2).strip().split(maxsplit=1)
        blocks.append(Fence(info[0] if info else "", body, start, offset, closed))
    return blocks


def _inline_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of each code span ("code") and HTML comment ("comment") of `text` outside fenced blocks."""
    chars = list(text)
    for block in fenced_blocks(text):
        for k in range(block.start, block.end):
            if chars[k] != "\n":
                chars[k] = " "
    rest, spans, pos = "".join(chars), [], 0
    while (found := _INLINE.search(rest, pos)) is not None:
        start = found.start()
        if found.group() == "<!--":
            end = rest.find("-->", found.end())
            end = len(rest) if end < 0 else end + 3
            spans.append((start, end, "comment"))
        else:
            run = len(found.group())
            close = re.compile(rf"(?<!`)`{{{run}}}(?!`)").search(rest, found.end())
            if close is None or _BLANK_LINE.search(rest, found.end(), close.start()):
                pos = found.end()  # a backtick run with no partner is plain text
                continue
            end = close.end()
            spans.append((start, end, "code"))
        pos = end
    return spans


def html_comments(text: str) -> list[tuple[int, int]]:
    """(start, end) of each HTML comment outside code, in order: text a reader of the rendered answer never sees."""
    return [(start, end) for start, end, kind in _inline_spans(text) if kind == "comment"]


def code_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each inline code span outside fenced blocks, backticks included, in order."""
    return [(start, end) for start, end, kind in _inline_spans(text) if kind == "code"]


def mask_code(text: str) -> str:
    """`text` with every fenced block, indented code block, code span and HTML comment blanked (newlines kept): the
    same length, so an offset found in the result points at the same place in `text`."""
    chars = list(text)

    def blank(start: int, end: int) -> None:
        for k in range(start, end):
            if chars[k] != "\n":
                chars[k] = " "

    for block in fenced_blocks(text):
        blank(block.start, block.end)
    for start, end in indented_code(text):
        blank(start, end)
    for start, end, _ in _inline_spans(text):
        blank(start, end)
    return "".join(chars)


_INDENTED = re.compile(r"(?: {4}|\t)[ \t]*\S")
_LIST_ITEM = re.compile(r" {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")


def indented_code(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line of an indented code block: a line indented 4+ spaces (or a tab) after a blank line
    or another such line, where the last unindented text before it is not a list item (there, CommonMark reads the
    indent as the item's continuation). Lines inside fenced blocks are not looked at. An approximation of
    CommonMark's block grammar: nested lists and block quotes are not followed."""
    fenced = [(b.start, b.end) for b in fenced_blocks(text)]
    spans, offset, previous, in_list, in_code = [], 0, "", False, False
    for line in text.splitlines(keepends=True):
        start, offset = offset, offset + len(line)
        if any(a <= start < b for a, b in fenced):
            previous, in_code = "x", False
            continue
        body = line.rstrip("\r\n")
        if not body.strip():
            previous = ""
            continue
        if _INDENTED.match(body) and not in_list and (in_code or not previous.strip()):
            spans.append((start, start + len(body)))
            in_code = True
        elif not _INDENTED.match(body):
            in_list, in_code = bool(_LIST_ITEM.match(body)), False
        else:
            in_code = False
        previous = body
    return spans


# Raw HTML as CommonMark reads it: an open tag (a name, attributes, an optional "/") or a closing tag. A renderer
# draws none of it, only the text between tags ("b<wbr>ad", "b<span></span>ad" and "b<x/>ad" all show "bad").
_ATTRIBUTE = r"""\s+[A-Za-z_:][\w.:-]*(?:\s*=\s*(?:[^\s"'=<>`]+|'[^']*'|"[^"]*"))?"""
_HTML_TAG = re.compile(rf"<[A-Za-z][A-Za-z0-9-]*(?:{_ATTRIBUTE})*\s*/?>|</[A-Za-z][A-Za-z0-9-]*\s*>")
# A Markdown link or image, [text](destination "title") or ![alt](...): a reader sees its text only ("" when empty).
_LINK_TITLE = r"""(?:\s+(?:"[^"\n]*"|'[^'\n]*'|\([^()\n]*\)))?"""
_LINK = re.compile(rf"!?\[([^\[\]]*)\]\(\s*(?:<[^<>\n]*>|[^\s()]*){_LINK_TITLE}\s*\)")


def markup_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, shown) of each piece of inline markup outside code: an HTML tag (shows "") and a Markdown link or
    image (shows its text), in order, not overlapping."""
    masked = mask_code(text)  # same offsets; code and comments blanked, so nothing inside them is markup
    found = [(m.start(), m.end(), "") for m in _HTML_TAG.finditer(masked)]
    found += [(m.start(), m.end(), m.group(1)) for m in _LINK.finditer(masked)]
    spans, end = [], 0
    for start, stop, shown in sorted(found):
        if start >= end:
            spans.append((start, stop, shown))
            end = stop
    return spans


def without_markup(text: str) -> str:
    """`text` as rendered inline: HTML comments and tags outside code removed (the text between tags kept) and each
    Markdown link or image replaced by its text, so an empty one ("b[](x)ad") shows nothing."""
    pieces = [(start, end, "") for start, end in html_comments(text)] + markup_spans(text)
    for start, end, shown in sorted(pieces, reverse=True):
        text = text[:start] + shown + text[end:]
    return text
