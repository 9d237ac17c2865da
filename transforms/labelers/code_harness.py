"""The pieces of code verification that need no sandbox: the tests spec, the tests' namespace plan and stdout
comparison. Pure functions. (Code extraction is in code_extract.py; the programs that run the code and the tests
are in transforms/sandbox/programs, bundled by transforms/sandbox/scripts.py.)

Tests arrive as JSON in one of three styles:
  {"style": "asserts", "asserts": ["assert f(1) == 2", ...], "setup": "optional code run before them"}
  {"style": "humaneval", "test": "def check(candidate): ...", "entry_point": "f", "prompt": "optional prefix"}
  {"style": "stdio", "cases": [{"input": "1 2\\n", "output": "3\\n"}, ...]}
A bare JSON list of assert strings is read as the asserts style (MBPP's `test_list`).
"""

import ast
import builtins
import json
import re
import sys
import textwrap
from dataclasses import dataclass

STYLES = ("asserts", "humaneval", "stdio")


@dataclass(frozen=True)
class TestsSpec:
    style: str
    asserts: tuple[str, ...] = ()
    setup: str = ""
    entry_point: str = ""
    prompt: str = ""
    cases: tuple[tuple[str, str], ...] = ()  # (stdin, expected stdout)

    @property
    def n_tests(self) -> int:
        return len(self.cases) if self.style == "stdio" else len(self.asserts)


def parse_tests(tests) -> TestsSpec:
    """JSON text (or already-parsed value) -> TestsSpec; ValueError naming what is wrong."""
    if isinstance(tests, str):
        try:
            tests = json.loads(tests)
        except json.JSONDecodeError as exc:
            raise ValueError(f"tests are not JSON: {exc}") from exc
    if isinstance(tests, list):
        tests = {"style": "asserts", "asserts": tests}
    if not isinstance(tests, dict):
        raise ValueError(f"tests must be a JSON object, got {type(tests).__name__}")
    style = tests.get("style")
    if style not in STYLES:
        raise ValueError(f"tests style {style!r} is not one of {STYLES}")
    if style == "asserts":
        asserts = tests.get("asserts")
        if not isinstance(asserts, list) or not asserts or not all(isinstance(a, str) for a in asserts):
            raise ValueError("asserts style needs a non-empty list of strings in 'asserts'")
        return TestsSpec("asserts", tuple(asserts), setup=_text(tests, "setup"))
    if style == "humaneval":
        test, entry = _text(tests, "test"), _text(tests, "entry_point")
        if not test or not entry.isidentifier():
            raise ValueError("humaneval style needs 'test' code and an identifier 'entry_point'")
        return TestsSpec(
            "humaneval", (f"check({entry})",), setup=test, entry_point=entry, prompt=_text(tests, "prompt")
        )
    cases = tests.get("cases")
    if not isinstance(cases, list) or not cases:
        raise ValueError("stdio style needs a non-empty list of {input, output} in 'cases'")
    parsed = []
    for i, case in enumerate(cases):
        if not isinstance(case, dict) or not isinstance(case.get("output"), str):
            raise ValueError(f"stdio case {i} must be {{input: str, output: str}}")
        if not isinstance(case.get("input", ""), str):
            raise ValueError(f"stdio case {i}: input must be a string")
        parsed.append((case.get("input", ""), case["output"]))
    return TestsSpec("stdio", cases=tuple(parsed))


def _text(tests: dict, key: str) -> str:
    value = tests.get(key) or ""
    if not isinstance(value, str):
        raise ValueError(f"'{key}' must be a string")
    return value


def humaneval_program(code: str, spec: TestsSpec) -> str:
    """HumanEval completions are either a body continuing the prompt or a whole function. The prompt always
    goes first: it carries the imports and helper functions (e.g. is_palindrome for make_palindrome). A body
    written without its indentation (it returns at the top level) is indented under the prompt's `def`."""
    if not spec.prompt:
        return code
    if re.search(rf"^\s*def\s+{re.escape(spec.entry_point)}\s*\(", code, re.M) and not code[:1].isspace():
        return spec.prompt.rstrip() + "\n\n\n" + code
    if _returns_outside_a_function(code):
        last = next((line for line in reversed(spec.prompt.splitlines()) if line.strip()), "")
        indent = last[: len(last) - len(last.lstrip())] or "    "
        return spec.prompt.rstrip("\n") + "\n" + textwrap.indent(code, indent)
    return spec.prompt + code


def _returns_outside_a_function(code: str) -> bool:
    """Whether `code` parses on its own and has a `return` or `yield` outside any def, class or lambda."""
    try:
        stack = list(ast.parse(code).body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return False


def same_output(expected: str, actual: str) -> bool:
    """Line by line, ignoring trailing whitespace on each line and blank lines at the end (judges' usual rule)."""

    def lines(text: str) -> list[str]:
        out = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
        while out and not out[-1]:
            out.pop()
        return out

    return lines(expected) == lines(actual)


def tests_plan(spec: TestsSpec) -> dict:
    """What the tests' namespace holds besides the real builtins, derived from the tests and the prompt (never from
    the completion): `modules`, the stdlib modules the tests use by name without importing them (the real module,
    whatever the completion binds to that name); `prompt`, the prompt's own code (its helpers); `declared`, the
    names taken from the completion: the entry point, and the names the tests use that are not builtins, modules,
    the prompt's, or bound by the tests themselves; `standalone[i]`, whether test i uses no name an earlier test
    binds (only then can a dry run of it alone show that it is broken by itself). A completion's `abs`, `math` or
    `poly` is not declared, so it never reaches the tests; completion_plan says which declared names the completion
    may supply (only its defs and classes)."""
    tests = [_parse(code) for code in (spec.setup, *spec.asserts)]
    bound = set().union(*(_bound(tree) for tree in tests))
    prompt = _parse(spec.prompt)
    helpers = _bound(prompt) - {spec.entry_point}
    loaded = set().union(*(_loaded(tree) for tree in tests))
    attr_only = set().union(*(_modules_used(tree) for tree in tests))
    builtin = set(dir(builtins))
    free = loaded - bound - helpers - builtin - {spec.entry_point}
    modules = sorted(name for name in free if name in attr_only and name in sys.stdlib_module_names)
    declared = sorted(free - set(modules))
    if spec.entry_point:
        declared = [spec.entry_point, *declared]
    earlier: set[str] = set()
    standalone = []
    for tree in tests[1:]:
        standalone.append(not (_loaded(tree) & earlier))
        earlier |= _bound(tree)
    return {"modules": modules, "prompt": spec.prompt, "declared": declared, "standalone": standalone}


def completion_plan(plan: dict, code: str, entry_point: str = "") -> dict:
    """`plan` with where each declared name comes from, read with `ast` from the completion's code that runs (never
    from its values): `export`, the names the completion's process sends: the entry point and the names its
    module-level statements bind only by `def` or `class` (its functions and classes); `imported`, name -> [module,
    attribute or null]: a name the completion binds only by an import that keeps the name (`from math import pi`,
    `import numpy as np`, `import os.path`), which the tests' process imports itself (the real object, never the
    completion's value). A declared name bound any other way (assignment, lambda, `global`, walrus, loop target, a
    renaming `from m import x as y`, a star or relative import, two different imports, or an import and anything
    but a `def`) reaches the tests
    as nothing: a NameError there, so `pi = 3` or `Counter = lambda x: 0` cannot stand in for the tests' oracle. An
    honest `pi = math.pi` fails the same way."""
    kinds = _module_bindings(_parse(code))
    export, imported = [], {}
    for name in plan["declared"]:
        found = kinds.get(name, [])
        if name == entry_point or (found and all(kind == "def" for kind in found)):
            export.append(name)
        elif "other" not in found and len(imports := {kind for kind in found if type(kind) is tuple}) == 1:
            imported[name] = list(imports.pop())  # also `try: from math import isqrt` / `except: def isqrt`
    return {**plan, "export": export, "imported": imported}


def _module_bindings(tree: ast.Module) -> dict[str, list]:
    """name -> how the module's own statements bind it: "def" (def, class), (module, attribute or None) for an
    import that keeps the name, "other" for anything else (assignment, `global` in a function, walrus, ...)."""
    kinds: dict[str, list] = {}

    def note(name, kind):
        kinds.setdefault(name, []).append(kind)

    def visit(stmts):
        for node in stmts:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                note(node.name, "def")
                for part in (*node.decorator_list, *getattr(node, "bases", ()), *getattr(node, "keywords", ())):
                    other(part)
                if not isinstance(node, ast.ClassDef):  # defaults run at module level (a walrus there binds)
                    for default in (*node.args.defaults, *node.args.kw_defaults):
                        if default is not None:
                            other(default)
                for inner in ast.walk(node):  # `global x` inside it binds x at module level
                    if isinstance(inner, ast.Global):
                        for name in inner.names:
                            note(name, "other")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        note(alias.asname, (alias.name, None))
                    else:
                        note(alias.name.split(".")[0], (alias.name, "." if "." in alias.name else None))
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if node.level == 0 and node.module and alias.name != "*" and alias.asname in (None, alias.name):
                        note(alias.name, (node.module, alias.name))
                    elif alias.name != "*":
                        note(alias.asname or alias.name, "other")
            elif isinstance(node, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)) or (
                type(node).__name__ == "TryStar"
            ):
                for field, value in ast.iter_fields(node):
                    if field in ("body", "orelse", "finalbody"):
                        visit(value)
                    elif field == "handlers":
                        for handler in value:
                            if handler.name:
                                note(handler.name, "other")
                            if handler.type is not None:
                                other(handler.type)
                            visit(handler.body)
                    elif isinstance(value, ast.AST):
                        other(value)
                    elif isinstance(value, list):
                        for item in value:
                            other(item)
            else:
                other(node)

    def other(node):
        for name in _bound(node):
            note(name, "other")
        for inner in ast.walk(node):
            if isinstance(inner, ast.Global):
                for name in inner.names:
                    note(name, "other")

    visit(tree.body)
    return kinds


def _parse(code: str) -> ast.Module:
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError):  # a test that does not compile is reported by the tests' program
        return ast.Module(body=[], type_ignores=[])


def _loaded(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _bound(tree: ast.AST) -> set[str]:
    """Every name the code binds anywhere: assignments, loop and comprehension targets, functions, classes and
    their parameters, imports, `except ... as`, `with ... as`, match captures."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
    return names


def _modules_used(tree: ast.AST) -> set[str]:
    """Names used only as `name.attribute` (how a module is used; a function the tests call is not)."""
    as_value = {n.value.id for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
    other = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
    elsewhere = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in other}
    return as_value - elsewhere
