"""The README is an entry point and docs/ the reference; both stay true. The README is short, every relative link
resolves (file and heading), and every `dvc`, `rewardmill`, `make` and `pytest` line quoted in a shell block is one
the suite runs: a `first-hour` block (tests/e2e/test_first_hour.py runs those as written), an argv a test spells out
(a subprocess argv, or the argv of the CLI's, a subcommand's or a stage's `main`: the same arguments in order, see
`runs`), or an entry of ELSEWHERE saying what checks it instead. Every
quoted command must also exist: a real `rewardmill` subcommand and stage, a Makefile target, a pytest path and
test, a script or module (a claim in the README is a test)."""

import ast
import contextlib
import io
import re
import shlex
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=indent)(?P=fence)[ \t]*$", re.M | re.S
)
SHELL = {"bash", "sh", "shell", "console"}
TOOLS = {"dvc", "rewardmill", "make", "pytest"}
PROGRAMS = {
    ".venv/bin/pytest": "pytest",
    ".venv/bin/python": "python",
    "python3": "python",
    ".venv/bin/dvc": "dvc",
    ".venv/bin/rewardmill": "rewardmill",
}
FIRST_HOUR = re.compile(r"<!-- first-hour: (\w+) -->\n```\w+\n(.*?)```", re.S)  # tests/e2e/test_first_hour.py's

# Quoted commands no test spells out as an argv, each with what checks it instead (or that it is run by hand, as the
# page quoting it says). Keep it short: a new quoted command belongs in a test.
ELSEWHERE = {
    "make repro": "its recipe is `make install` then `rewardmill repro`: tests/e2e/test_first_hour.py runs `make "
    "install` (test_make_install_alone_imports_every_module), tests/e2e/test_targets.py `rewardmill repro` with and "
    "without targets on the demo project",
    "make test": "its recipe is `ruff check .` and `pytest -q -ra`: this suite, as CI runs it",
    "make bench": "runs `python bench/sampling.py`, a bench of minutes the suite does not run; docs/performance.md "
    "quotes its figures with the command",
    "make test-fast": "its recipe is `ruff check .` and `pytest -m 'not (model or server or browser or cluster or "
    "e2e or slow)'`: this suite less the marked tests (pyproject.toml registers the markers, tests/conftest.py "
    "applies them)",
    "dvc exp run -S rollouts.backend=openai -S rollouts.openai.model=models/policy": "tests/pipelines/"
    "test_rollouts_openai.py::test_vllm_serve_as_the_policy runs the rollouts stage with those params against `vllm "
    "serve` (CPU build)",
    "rewardmill label --labeler math_answer --config": "tests/pipelines/test_label_file.py runs it as a subprocess "
    "with `--config '{\"timeout_seconds\": 2}' --input FILE --output FILE`",
    "rewardmill audit --labeler appeal --output": "tests/pipelines/test_audit.py runs `--labeler appeal` and "
    "`--output FILE`, each on fixture packs",
    "rewardmill --params exp.yaml run": "tests/pipelines/test_cli.py runs `--params FILE run prompts` and "
    "`--params FILE stages`",
    "rewardmill view data/datasets --out": "tests/pipelines/test_view.py runs `view data/datasets --out FILE "
    "--max-rows 1`",
    # docs/releases.md: "The S3, GCS and SSH lines were run by hand in a scratch repo" (no store is reachable here)
    "dvc remote add -d storage s3://bucket/path": "by hand (docs/releases.md)",
    "dvc remote modify --local storage profile myprofile": "by hand (docs/releases.md)",
    "dvc remote modify --local storage access_key_id AKIA...": "by hand (docs/releases.md)",
    "dvc remote modify --local storage secret_access_key ...": "by hand (docs/releases.md)",
    "dvc remote add -d storage gs://bucket/path": "by hand (docs/releases.md)",
    "dvc remote modify --local storage credentialpath /path/to/key.json": "by hand (docs/releases.md)",
    "dvc remote add -d storage ssh://user@host/srv/dvc-remote": "by hand (docs/releases.md)",
    "dvc remote modify --local storage keyfile ~/.ssh/id_ed25519": "by hand (docs/releases.md)",
}


def prose(text: str) -> str:
    """The page without its fenced blocks (links and headings in code are not links or headings)."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", lambda m: m[1] or "", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def anchors(page: Path) -> set[str]:
    found, seen = set(), {}
    for heading in re.findall(r"^#{1,6} (.+)$", prose(page.read_text()), re.M):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(page: Path) -> list[str]:
    text = re.sub(r"`[^`\n]*`", "", prose(page.read_text()))  # a link inside a code span is text
    return re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", text)


def test_the_readme_is_an_entry_point():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines: move reference material to docs/"
    index = (REPO / "docs/README.md").read_text()
    assert [p.name for p in PAGES[1:] if p.name != "README.md" and f"({p.name})" not in index] == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (file.suffix != ".md" or anchor not in anchors(file)):
            broken.append(f"{target}: no heading #{anchor} in {file.relative_to(REPO)}")
    assert broken == [], f"{page.relative_to(REPO)}: {broken}"


def shell_lines(text: str) -> list[str]:
    """Each command line of the page's shell blocks: continuations joined, `$ ` prompts and comments dropped."""
    found = []
    for block in FENCE.finditer(text):
        if block["info"].strip().split(" ")[0] not in SHELL:
            continue
        body = "\n".join(line.removeprefix(block["indent"]) for line in block["body"].splitlines())
        for line in body.replace("\\\n", " ").splitlines():
            line = line.strip().removeprefix("$ ")
            if line and not line.startswith("#"):
                found.append(line)
    return found


def argv(line: str) -> list[str]:
    """The line as argv: comments dropped, leading VAR=value assignments dropped, `[optional]` usage parts dropped,
    the program named by its tool (`.venv/bin/pytest` is pytest)."""
    words = shlex.split(re.sub(r"\s\[[^\]]*\]", "", line), comments=True)
    while words and re.match(r"^\w+=", words[0]):
        words = words[1:]
    if words:
        words[0] = PROGRAMS.get(words[0], words[0])
    return words


@cache
def quoted() -> dict[tuple[str, ...], list[str]]:
    """argv -> the pages quoting it, for every dvc/rewardmill/make/pytest/python line of a shell block."""
    found: dict[tuple[str, ...], list[str]] = {}
    for page in PAGES:
        for line in shell_lines(page.read_text()):
            words = tuple(argv(line))
            if words and words[0] in {*TOOLS, "python"}:
                found.setdefault(words, []).append(str(page.relative_to(REPO)))
    return found


@cache
def first_hour() -> set[tuple[str, ...]]:
    """The commands of the README's first-hour blocks, which tests/e2e/test_first_hour.py runs as written."""
    blocks = FIRST_HOUR.findall((REPO / "README.md").read_text())
    return {tuple(argv(line)) for _, body in blocks for line in shell_lines(f"```bash\n{body}```\n")}


def elsewhere(words: tuple[str, ...]) -> str | None:
    """What ELSEWHERE says checks this argv (an entry matches the argv it starts)."""
    return next(
        (why for known, why in ELSEWHERE.items() if words[: len(shlex.split(known))] == tuple(shlex.split(known))),
        None,
    )


Matcher = str | re.Pattern | None


def matcher(node: ast.expr) -> Matcher:
    """A string literal as itself, an f-string as a pattern (its values match anything), else None (computed)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = [re.escape(v.value) if isinstance(v, ast.Constant) else ".+" for v in node.values]
        return re.compile("".join(parts))
    return None


def main_of(call: ast.Call, text: str) -> str | None:
    """The module of `rewardmill.pipelines` whose `main` a call runs (`cli.main(...)`, or `main`/an alias of it
    imported from the module), if any."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "main" and isinstance(func.value, ast.Name):
        return func.value.id if re.search(rf"from rewardmill\.pipelines import .*\b{func.value.id}\b", text) else None
    if isinstance(func, ast.Name):
        for module, alias in re.findall(r"from rewardmill\.pipelines\.(\w+) import .*?\bmain\b(?: as (\w+))?", text):
            if func.id == (alias or "main"):
                return module
    return None


def list_elements(node: ast.expr) -> list[ast.expr]:
    """The elements of a list literal, or of list literals joined with `+`."""
    if isinstance(node, ast.List):
        return node.elts
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = list_elements(node.left), list_elements(node.right)
        return [*left, *right] if left and right else []
    return []


def segment(lines: list[str], node: ast.expr) -> str:
    """The source text of `node` (what ast.get_source_segment gives, from lines split once: that function splits the
    whole file on every call)."""
    if node.lineno == node.end_lineno:
        return lines[node.lineno - 1].encode()[node.col_offset : node.end_col_offset].decode()
    first, *middle, last = lines[node.lineno - 1 : node.end_lineno]
    head, tail = first.encode()[node.col_offset :].decode(), last.encode()[: node.end_col_offset].decode()
    return "\n".join([head, *middle, tail])


@cache
def spelled_out() -> list[tuple[str, list[Matcher]]]:
    """Every argv a test runs, as (program, matchers of its arguments): a list or tuple literal whose first element
    names a tool (`"dvc"`, `str(BIN / "rewardmill")`, a variable `dvc`), and a list handed to the CLI's `main` (the
    `rewardmill` argv), to a subcommand's `main` (its arguments) or to a stage's `main` (`rewardmill run STAGE`)."""
    subcommands = {
        "label_file": "label",
        "audit": "audit",
        "scaffold": "new-labeler",
        "push": "push",
        "plan": "plan",
        "doctor": "doctor",
        "view": "view",
    }
    stages = choices(rewardmill_help("run"))
    found = []
    for source in (REPO / "tests").rglob("*.py"):
        if source == Path(__file__):
            continue
        text = source.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.List | ast.Tuple) and node.elts:
                first = segment(lines, node.elts[0])
                program = next(
                    (
                        tool
                        for tool in TOOLS
                        if re.fullmatch(rf"""["']?{tool}["']?|.*\b{tool}\b.*\)""", first) or first == tool
                    ),
                    None,
                )
                if program:
                    found.append((program, [matcher(e) for e in node.elts[1:]]))
            elif isinstance(node, ast.Call) and node.args and (elements := list_elements(node.args[0])):
                module, items = main_of(node, text), [matcher(e) for e in elements]
                if module == "cli":
                    found.append(("rewardmill", items))
                elif module in subcommands:
                    found.append(("rewardmill", [subcommands[module], *items]))
                elif module in stages:
                    found.append(("rewardmill", ["run", module, *items]))
    return found


def matches(item: Matcher, arg: str) -> bool:
    if isinstance(item, str):
        return item == arg
    if isinstance(item, re.Pattern):
        return bool(item.fullmatch(arg))
    return not arg.startswith("-") and "://" not in arg  # a computed path or value stands for a quoted one


def runs(words: list[str]) -> bool:
    """A test runs this argv: the same program, its first argument literally, and every further argument in order
    (a test may add its own, such as a fixture's folder); a value the test computes stands for a quoted local path or
    value, an f-string for what it spells (`f"{bucket}/rollouts"` for `s3://my-bucket/data/rollouts`)."""
    program, args = words[0], words[1:]
    for named, items in spelled_out():
        if named != program or not args or not items or items[0] != args[0]:
            continue
        j = 0
        for item in items:
            if j < len(args) and matches(item, args[j]):
                j += 1
        if j == len(args):
            return True
    return False


@cache
def rewardmill_help(*args: str) -> str:
    from rewardmill.pipelines.cli import dispatch

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        dispatch([*args, "--help"])
    return out.getvalue()


def choices(help_text: str) -> set[str]:
    return set(re.search(r"\{([^}]+)\}", help_text)[1].split(","))


def makefile_targets() -> set[str]:
    return set(re.findall(r"^([A-Za-z][\w-]*):", (REPO / "Makefile").read_text(), re.M))


def test_the_pages_quote_commands():
    """The collection finds what the pages quote (a parser that found nothing would pass every check below)."""
    assert {("make", "repro"), ("make", "test"), ("rewardmill", "new-labeler", "word_count")} <= quoted().keys()
    assert {("dvc", "repro", "label@judge"), ("rewardmill", "doctor", "--no-endpoints")} <= first_hour()
    assert runs(["dvc", "exp", "show", "--only-changed", "--csv"]) and not runs(["dvc", "exp", "show", "--nope"])


def test_every_quoted_command_is_one_the_suite_runs():
    untested = {
        shlex.join(words): pages
        for words, pages in quoted().items()
        if words[0] in TOOLS and words not in first_hour() and not runs(list(words)) and not elsewhere(words)
    }
    assert untested == {}, "quoted in a doc, run by no test (run it in a test, or say in ELSEWHERE what checks it)"


def test_elsewhere_lists_only_quoted_commands_and_real_tests():
    named = [m for why in ELSEWHERE.values() for m in re.findall(r"(tests/[\w/]+\.py)(?:::(\w+))?", why)]
    assert [f"{path}::{name}" for path, name in named if name and name not in defined_tests(REPO / path)] == []
    assert [path for path, _ in named if not (REPO / path).is_file()] == []
    stale = [
        known
        for known in ELSEWHERE
        if not any(
            elsewhere(words) == ELSEWHERE[known] and words[: len(shlex.split(known))] == tuple(shlex.split(known))
            for words in quoted()
        )
    ]
    assert stale == []


def test_every_quoted_command_exists():
    subcommands, stages, targets = choices(rewardmill_help()), choices(rewardmill_help("run")), makefile_targets()
    wrong = []
    for words in quoted():
        command, (tool, *args) = shlex.join(words), words
        options = [a for a in args if not a.startswith("-")]
        if tool == "rewardmill":
            rest = list(args)
            while rest and rest[0] in ("--params", "--debug"):  # global options, anywhere on the line
                rest = rest[2:] if rest[0] == "--params" else rest[1:]
            if rest and rest[0] != "--version" and rest[0] not in subcommands:
                wrong.append(f"{command}: no subcommand {rest[0]} ({sorted(subcommands)})")
            elif rest[:1] == ["run"] and (len(rest) < 2 or rest[1] not in stages):
                wrong.append(f"{command}: no stage {rest[1:2]} ({sorted(stages)})")
        elif tool == "make":
            wrong += [f"{command}: no Makefile target {t}" for t in options if t not in targets]
        elif tool == "pytest":
            for target in (a for a in args if a.startswith("tests/")):
                wrong += pytest_target_problems(command, target)
        elif tool == "python" and args:
            if args[0] == "-m":
                module = REPO / args[1].replace(".", "/")
                if not (module.with_suffix(".py").is_file() or (module / "__main__.py").is_file()):
                    wrong.append(f"{command}: no module {args[1]}")
            elif args[0].endswith(".py") and not (REPO / args[0]).is_file():
                wrong.append(f"{command}: no script {args[0]}")
    assert wrong == []


def pytest_target_problems(command: str, target: str) -> list[str]:
    """What is wrong with a pytest target `PATH[::TEST]` (a scaffolded file a test runs may not exist yet)."""
    path, _, name = target.partition("::")
    if not (REPO / path).exists():
        return [] if runs(["pytest", target]) else [f"{command}: no {path}"]
    if name and name.split("::")[-1].split("[")[0] not in defined_tests(REPO / path):
        return [f"{command}: no test {name} in {path}"]
    return []


def defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_test_a_page_names_exists(page):
    """A `tests/...py::test_name` a page names in prose (what checks a claim) is a test of that file."""
    wrong = []
    for path, name in re.findall(r"`(tests/[\w/]+\.py)::([\w:\[\]-]+)`", page.read_text()):
        if not (REPO / path).is_file():
            wrong.append(f"{path}: no such file")
        elif name.split("::")[-1].split("[")[0] not in defined_tests(REPO / path):
            wrong.append(f"{path}::{name}: no such test")
    assert wrong == []


SCAFFOLDED = {  # made by the steps a page gives (`rewardmill new-labeler word_count`, `new-environment NAME`)
    "transforms/labelers/word_count.py",
    "tests/transforms/labelers/test_word_count.py",
    "transforms/environments/NAME.py",
    "tests/transforms/environments/test_NAME.py",
}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_code_path_a_page_names_exists(page):
    """A file of the repo a page names (`transforms/io/storage.py`, `transforms/io/threads.ThreadedDoFn`, a folder)
    exists: a module that moves takes its mentions along."""
    missing = []
    for name in re.findall(r"`((?:pipelines|transforms|schemas|tests|bench)/[\w/.-]*)`", page.read_text()):
        path = name.split("::")[0].rstrip(".")
        module = REPO / path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else REPO / path
        candidates = [REPO / path, module, module.with_suffix(".py")]
        if path not in SCAFFOLDED and not any(c.exists() for c in candidates):
            missing.append(name)
    assert missing == []
