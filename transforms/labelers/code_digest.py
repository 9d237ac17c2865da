"""Which source files a labeler runs, and one digest of them: the label cache keys on it, so a change to any of them
(the labeler's own file, the helpers it imports, a judge's prompt) can never be answered by labels the old code made,
whether or not someone remembered to bump the labeler's `version`. (tests/test_dvc_deps.py checks the stages' DVC deps
with a walk of its own over every project module.)

The closure follows imports (anywhere in a module's body, function bodies included) of the labelers', judges',
sandbox's and sampling modules (a local judge generates through transforms/sampling), starting from the file that
defines the labeler class. The programs that run inside the sandbox are files the sandbox reads, never run here:
transforms/sandbox/scripts.py imports them, so this walk finds them.
The packages themselves are not followed: the labelers package is the registry, which imports every labeler to look
one up by name (so import from the modules, not the package); inner labelers a config names (an appeal's rule, a
tier) are added by the caller.
"""

import ast
import hashlib
import inspect
from functools import cache
from pathlib import Path

FOLLOWED = (
    "rewardmill.transforms.labelers",
    "rewardmill.transforms.judges",
    "rewardmill.transforms.sandbox",
    "rewardmill.transforms.sampling",
)
ROOT = Path(__file__).resolve().parents[2]  # the folder the `rewardmill` package maps to


# pyproject.toml's package-dir: `rewardmill.<folder>` is ROOT/<folder>, except these.
PACKAGE_DIRS = {"rewardmill.rewards": ("transforms", "rewards")}


def module_path(module: str) -> Path | None:
    """The source file of a `rewardmill.` module, or None when it is no file of this package."""
    package = next((p for p in PACKAGE_DIRS if module == p or module.startswith(f"{p}.")), None)
    if package is not None:
        parts = [*PACKAGE_DIRS[package], *module.removeprefix(package).split(".")[1:]]
    else:
        parts = module.removeprefix("rewardmill.").split(".")
    for candidate in (ROOT.joinpath(*parts).with_suffix(".py"), ROOT.joinpath(*parts, "__init__.py")):
        if candidate.is_file():
            return candidate
    return None


@cache
def imported(path: Path) -> frozenset[Path]:
    """The followed modules `path` imports anywhere in its body (`from pkg import module` included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        for name in names:
            if name.startswith(FOLLOWED) and name not in FOLLOWED and (target := module_path(name)) is not None:
                found.add(target)
    return frozenset(found)


def closure(*start: Path) -> set[Path]:
    """`start` and every followed module they import, transitively."""
    seen, todo = set(), list(start)
    while todo:
        path = todo.pop()
        if path not in seen:
            seen.add(path)
            todo += imported(path) - seen
    return seen


def source_file(cls: type) -> Path | None:
    """The file that defines `cls` (None for a class with no source file)."""
    try:
        found = inspect.getsourcefile(cls)
    except TypeError:
        return None
    return Path(found).resolve() if found else None


def code_digest(*classes: type) -> str:
    """sha256 over the relative names and bytes of every file the labeler classes run (see the module docstring)."""
    files = closure(*(path for path in map(source_file, classes) if path is not None))
    digest = hashlib.sha256()
    for path in sorted(files):
        name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
        digest.update(name.encode() + b"\x00" + path.read_bytes() + b"\x00")
    return digest.hexdigest()
