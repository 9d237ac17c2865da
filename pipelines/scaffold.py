"""`rewardmill new-labeler NAME`: scaffold a labeler in one file, its test, its registry entry and params entry.

Creates transforms/labelers/NAME.py and tests/transforms/labelers/test_NAME.py, registers the class in
transforms/labelers/__init__.py and adds `labelers.NAME` to params.yaml. Nothing existing is overwritten.
"""

import argparse
import dataclasses
import importlib.util
import json
import re
import sys
from pathlib import Path

from rewardmill.transforms.errors import UserError

LABELER_TEMPLATE = '''"""{cls}: TODO one line on what it checks and why it is a useful reward signal."""

from dataclasses import dataclass

from rewardmill.transforms.labelers.base import Label


@dataclass(frozen=True)
class {cls}Config:
    min_chars: int = 1  # TODO: your settings; params.yaml `labelers.{name}.config` is checked against them


class {cls}:
    """Score 1.0 when TODO, else 0.0.

    Input columns: completion.   Output: score (None = cannot label), verdict, rationale.
    """

    name = "{name}"
    version = "1"  # bump when the labels it gives change: cached labels of other versions are not reused
    reads = ("completion",)  # rollout columns passed to label(), in order
    tasks = None  # e.g. ("math",) to label only those prompts; None = every task
    Config = {cls}Config

    def __init__(self, config: {cls}Config | None = None):
        self.config = config or {cls}Config()

    def label(self, completion: str) -> Label:
        if completion is None:
            return Label(None, 0.0, "abstain", "no completion")
        ok = len(completion.strip()) >= self.config.min_chars
        return Label(1.0 if ok else 0.0, 1.0, "correct" if ok else "incorrect", f"{{len(completion)}} chars")
'''

TEST_TEMPLATE = """import pickle

import pytest

from rewardmill.transforms.labelers import LABELERS
from rewardmill.transforms.labelers.{name} import {cls}


@pytest.mark.parametrize(
    ("completion", "verdict", "score"),
    [
        ("some answer", "correct", 1.0),  # TODO: the case your labeler rewards
        ("   ", "incorrect", 0.0),  # TODO: the case it rejects
        (None, "abstain", None),  # malformed input: cannot label, never a silent 0
    ],
)
def test_verdict_table(completion, verdict, score):
    label = {cls}().label(completion)
    assert (label.verdict, label.score) == (verdict, score)


def test_registered_and_picklable():
    assert LABELERS["{name}"] is {cls}
    assert pickle.loads(pickle.dumps({cls}())).label("x").verdict == "correct"
"""


def class_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_")) + "Labeler"


def add_to_registry(
    init: Path,
    name: str,
    cls: str,
    package: str = "labelers",
    registry: str = "LABELERS",
    command: str = "new-labeler",
) -> None:
    """The import among the registry's imports and the entry among `registry`'s entries, each in sorted order, so
    `ruff check` (isort) passes on the result as it did before."""
    lines = init.read_text().splitlines(keepends=True)
    prefix = f"from rewardmill.transforms.{package}."
    import_line = f"{prefix}{name} import {cls}\n"
    marker = f"# `rewardmill {command} NAME` adds its import above and its entry below.\n"
    if marker not in lines or f"{registry} = {{\n" not in lines:
        raise UserError(f"{init}: registry markers not found; add {cls} to {registry} by hand")
    imports = [i for i, line in enumerate(lines) if line.startswith(prefix)]
    if import_line not in lines:
        at = next((i for i in imports if lines[i] > import_line), imports[-1] + 1 if imports else lines.index(marker))
        lines.insert(at, import_line)
    start = lines.index(f"{registry} = {{\n") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("}"))
    entry = f'    "{name}": {cls},\n'
    at = next((i for i in range(start, end) if lines[i] > entry), end)
    lines.insert(at, entry)
    init.write_text("".join(lines))


def config_defaults(source: Path, cls: str) -> dict:
    """The generated labeler's Config defaults (what params must list so `dvc exp run -S` can set each one)."""
    spec = importlib.util.spec_from_file_location(f"_scaffold_{source.stem}", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    config = getattr(module, cls).Config
    return {f.name: f.default for f in dataclasses.fields(config) if f.default is not dataclasses.MISSING}


def add_to_params(params: Path, name: str, defaults: dict | None = None) -> None:
    """`labelers.NAME` at the end of the labelers section, with the config's defaults written out: `dvc exp run -S
    labelers.NAME.config.KEY=...` can only set a key params already has."""
    lines = params.read_text().splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if re.match(r"^labelers:\s*(#.*)?$", line)), None)
    if start is None:
        raise UserError(f"{params}: no top-level `labelers:` section")
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"^\S", lines[i])), len(lines))
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    entry = [f"  {name}:\n", f"    labeler: {name}\n"]
    if defaults:
        entry.append(f"    config:                  # defaults of transforms/labelers/{name}.py's Config\n")
        entry += [f"      {key}: {json.dumps(value)}\n" for key, value in defaults.items()]
    else:
        entry.append("    config: {}\n")
    params.write_text("".join(lines[:end] + entry + lines[end:]))


def scaffold_args(argv: list[str] | None, command: str, kind: str, doc: str) -> tuple[str, Path]:
    """(NAME, --root) of `rewardmill <command> NAME`; a NAME that is not snake_case is a UserError."""
    parser = argparse.ArgumentParser(prog=f"rewardmill {command}", description=doc)
    parser.add_argument("name", help="snake_case registry key, also the file name")
    parser.add_argument("--root", type=Path, default=Path("."), help="project root (default: current folder)")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[a-z][a-z0-9_]*", args.name):
        raise UserError(f"{kind} name {args.name!r} must be snake_case (a-z, 0-9, _), starting with a letter")
    return args.name, args.root


def main(argv: list[str] | None = None) -> None:
    name, root = scaffold_args(argv, "new-labeler", "labeler", __doc__)
    cls = class_name(name)
    source = root / "transforms/labelers" / f"{name}.py"
    test = root / "tests/transforms/labelers" / f"test_{name}.py"
    params = root / "params.yaml"
    for path in (source, test):
        if path.exists():
            raise UserError(f"{path} exists already; nothing was changed")
    if re.search(rf"^  {re.escape(name)}:", params.read_text(), flags=re.M):
        raise UserError(f"{params}: labelers.{name} exists already; nothing was changed")
    source.write_text(LABELER_TEMPLATE.format(name=name, cls=cls))
    test.parent.mkdir(parents=True, exist_ok=True)
    test.write_text(TEST_TEMPLATE.format(name=name, cls=cls))
    add_to_registry(root / "transforms/labelers/__init__.py", name, cls)
    add_to_params(params, name, config_defaults(source, cls))
    print(f"created {source}\ncreated {test}\nregistered {cls} as '{name}' in transforms/labelers/__init__.py")
    print(f"added labelers.{name} to {params}")
    print("\n".join(next_steps(source, test)))


def next_steps(source: Path, test: Path) -> list[str]:
    """The commands that come next, as they run in this install: pytest comes with `make dev`, not `make install`,
    so where it is missing the first command installs it (the locked version) into the same venv."""
    bindir = Path(sys.executable).parent
    try:
        bindir = bindir.relative_to(Path.cwd())
    except ValueError:
        pass
    pytest = f"{bindir}/pytest {test}"
    if importlib.util.find_spec("pytest") is None:
        pytest = f"{bindir}/pip install -q -c requirements.lock pytest && {pytest}   # pytest comes with `make dev`"
    return [
        "next:",
        f"  1. edit label() in {source}, and the table in {test}",
        f"  2. {pytest}",
        "  3. dvc repro",
    ]
