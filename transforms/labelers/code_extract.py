"""Find the code a completion means to submit (pure).

Only the answer is read: a leading `<think>` block is reasoning (reasoning.py), and a completion whose leading
block never closes has no answer (`Extracted.finished` is False) — code drafted while thinking is not submitted.

Completions are prose around fenced blocks, or bare code, and often imperfect: the function in one block and a
usage demo in the next, a helper in a block of its own, an opening fence the model forgot, a closing fence cut off
at max tokens. The text is split at its fence lines into pieces: fenced blocks (a fence opens a block when none is
open; inside one, an untagged fence closes it and a tagged one closes it and opens the next) and the text between
them. Any info string opens a block (```py3, ```Python, ```{python}, ```python title="a.py"); a block whose
opening fence is indented (inside a Markdown list item) loses that much indentation from each line, as CommonMark
reads it. A piece is code when it is a python or untagged block that parses, or text outside the blocks that parses
once prose lines around it are dropped.

With the names the tests call (`wanted`), the code run is the last code piece defining each wanted name plus,
transitively, the last piece defining each name those pieces use (helpers, imports, constants), in their order in
the text: a demo block is not run, and a later corrected definition wins. Otherwise (stdio programs, HumanEval
bodies that continue the prompt, nothing defines a wanted name) it is the last python block, else the last untagged
block, else the code in the text, else the whole text; with the pieces defining what that code uses. Which ran is
in `Extracted.source`, for the rationale.
"""

import ast
import builtins
import re
from dataclasses import dataclass

from rewardmill.transforms.labelers.reasoning import split_reasoning

# A fence line: its indentation, 3+ backticks, an info string holding no backtick (else it is inline code)
FENCE_LINE = re.compile(r"^([ \t]*)`{3,}([^`]*)$")
PYTHON_TAG = re.compile(r"(?:python|py)(?:[23](?:\.\d+)?)?")  # python, py, python3, py3, python3.11, Python
CODE_START = re.compile(r"^(?:async\s+def|def|class|import|from|@)\b|^[A-Za-z_]\w*\s*=[^=]")
MAX_PARSES = 200  # bounds the search for code in prose (each try parses the piece's candidate lines once)
BUILTIN_NAMES = frozenset(dir(builtins))


@dataclass(frozen=True)
class Extracted:
    code: str
    source: str  # which part of the completion ran, e.g. "code blocks 1, 3 of 3"
    finished: bool = True  # False: the completion's leading reasoning block never closes, so it has no answer


@dataclass(frozen=True)
class _Piece:
    block: int  # 1-based number among fenced blocks; 0 = text outside the blocks
    tag: str | None  # the block's language tag ("" = untagged); None = outside the blocks
    body: str


def extract(completion: str, wanted: tuple[str, ...] = ()) -> Extracted:
    split = split_reasoning(completion)
    if not split.finished:
        return Extracted("", "no finished answer (the reasoning block never closes)", finished=False)
    completion = split.answer
    pieces = _split(completion)
    n_blocks = max((p.block for p in pieces), default=0)
    code = [(p, c, tree) for p in pieces for c, tree in [_code_of(p)] if tree is not None]
    defs: dict[str, int] = {}
    for i, (_, _, tree) in enumerate(code):
        for name in _defined(tree):
            defs[name] = i
    chosen = {defs[name] for name in wanted if name in defs}
    fallback, piece = _fallback(pieces, code, completion, n_blocks) if not chosen else (None, None)
    if fallback is not None:  # no piece defines a tested name: the last block, with what it uses from the others
        chosen = {i for i, (p, _, _) in enumerate(code) if p is piece}
    todo = list(chosen)
    while todo:
        i = todo.pop()
        for name in _used(code[i][2]) - _defined(code[i][2]):
            if name in defs and defs[name] not in chosen:
                chosen.add(defs[name])
                todo.append(defs[name])
    if fallback is not None and len(chosen) <= 1:
        return fallback
    parts = [code[i] for i in sorted(chosen)]
    return Extracted("\n\n".join(c for _, c, _ in parts), _describe([p for p, _, _ in parts], n_blocks))


def extract_code(completion: str) -> str:
    """The code to run when the tests' names are unknown: the last python block, else the last untagged block,
    else the code in the text, else the whole text."""
    return extract(completion).code


def _fallback(pieces, code, completion: str, n_blocks: int) -> tuple[Extracted, "_Piece | None"]:
    """What runs when no piece defines a tested name, and the piece it is (None for the whole text)."""
    for python in (True, False):
        tagged = [p for p in pieces if p.tag is not None and (_is_python(p.tag) if python else p.tag == "")]
        if tagged:
            return Extracted(_trim(tagged[-1].body), _describe(tagged[-1:], n_blocks)), tagged[-1]
    whole = _trim(completion)
    if n_blocks == 0 and _parses(whole):
        return Extracted(whole, "the whole text"), None
    text = [(p, c) for p, c, _ in code if p.tag is None]
    if text:
        return Extracted(text[-1][1], "the code outside the fences"), text[-1][0]
    return Extracted(whole, "the whole text"), None


def _split(text: str) -> list[_Piece]:
    pieces, lines, tag, block, indent = [], [], None, 0, 0

    def flush():
        body = "".join(_outdent(line, indent) for line in lines) if tag is not None else "".join(lines)
        if tag is not None or body.strip():
            pieces.append(_Piece(block if tag is not None else 0, tag, body))
        lines.clear()

    for line in text.splitlines(keepends=True):
        fence = FENCE_LINE.match(line)
        if fence is None:
            lines.append(line)
            continue
        new_tag = _tag(fence.group(2))
        if tag is None or new_tag:  # opens a block (a tagged fence inside one closes it first)
            flush()
            block += 1
            tag, indent = new_tag, len(fence.group(1))
        else:  # an untagged fence closes the open block
            flush()
            tag = None
    flush()
    return pieces


def _code_of(piece: _Piece) -> tuple[str, ast.Module | None]:
    body = _trim(piece.body)
    if piece.tag is not None:
        tree = _parse(body) if piece.tag == "" or _is_python(piece.tag) else None
        return body, tree
    tree = _parse(body)
    if tree is not None and _defined(tree):
        return body, tree
    return _code_in_prose(body)


def _tag(info: str) -> str:
    """A fence's language: the info string's first word, lower case, without pandoc's `{.` and what follows a
    `:` or `}` (```python:main.py, ```{.python}, ```py3 title="a.py")."""
    word = info.strip().lstrip("{.")
    return re.match(r"[\w+#.-]*", word).group().rstrip(".").lower()


def _is_python(tag: str) -> bool:
    return PYTHON_TAG.fullmatch(tag) is not None


def _outdent(line: str, indent: int) -> str:
    """The line without up to `indent` leading spaces or tabs (its block's opening fence was indented that much)."""
    stripped = line.lstrip(" \t")
    return line[min(indent, len(line) - len(stripped)) :]


def _code_in_prose(text: str) -> tuple[str, ast.Module | None]:
    """The longest run of lines that parses and defines something, starting at a line that starts code and
    ending at the end or before a line in column 0 (prose before and after the code is dropped)."""
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if CODE_START.match(line)]
    tries = 0
    for start in starts:
        ends = [j for j in range(len(lines), start, -1) if j == len(lines) or (lines[j][:1].strip() and j > start)]
        for end in ends:
            tries += 1
            if tries > MAX_PARSES:
                return "", None
            candidate = _trim("\n".join(lines[start:end]))
            tree = _parse(candidate)
            if tree is not None and _defined(tree):
                return candidate, tree
    return "", None


def _parse(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _parses(code: str) -> bool:
    return _parse(code) is not None


def _defined(tree: ast.Module) -> set[str]:
    """Names a module binds at its top level (also inside top-level if/try/with blocks)."""
    names: set[str] = set()
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                stack.extend(getattr(node, field, []) or [])
        elif isinstance(node, ast.ExceptHandler):
            stack.extend(node.body)
    return names


def _used(tree: ast.Module) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - BUILTIN_NAMES


def _describe(pieces: list[_Piece], n_blocks: int) -> str:
    blocks = [p.block for p in pieces if p.tag is not None]
    text = any(p.tag is None for p in pieces)
    parts = []
    if blocks:
        word = "code block" if len(blocks) == 1 else "code blocks"
        parts.append(f"{word} {', '.join(map(str, blocks))} of {n_blocks}")
    if text:
        parts.append("the code outside the fences")
    return " and ".join(parts)


def _trim(code: str) -> str:
    """Drop blank lines at the start and whitespace at the end; keep indentation (a HumanEval body is indented)."""
    return re.sub(r"\A(?:[ \t]*\n)+", "", code).rstrip()
