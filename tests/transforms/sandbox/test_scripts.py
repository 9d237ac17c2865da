"""transforms/sandbox/scripts.py: each side's script is its program's file with the shared modules inlined and the
run's spec put in; nothing else changes."""

import ast
import json
import re
from pathlib import Path

import pytest

from rewardmill.transforms.sandbox import scripts
from rewardmill.transforms.sandbox.programs import channel, codec, completion_side, tests_side

PLAN = {"modules": ["math"], "prompt": "", "declared": ["f"], "standalone": [True], "export": ["f"], "imported": {}}


def spec_of(script: str) -> dict:
    tree = ast.parse(script)
    (value,) = [n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "SPEC"]
    return json.loads(ast.literal_eval(value))


@pytest.mark.parametrize(
    "script, program, spec",
    [
        (scripts.candidate_script("pass", ["f"]), completion_side, {"code": "pass", "export": ["f"]}),
        (
            scripts.tests_script("K = 1", ["assert f() is None"], PLAN, 5.0, 2.0),
            tests_side,
            {"setup": "K = 1", "tests": ["assert f() is None"], **PLAN, "timeout": 5.0, "startup": 2.0},
        ),
    ],
)
def test_a_script_is_its_program_with_the_shared_modules_and_the_spec(script, program, spec):
    compile(script, "<bundled>", "exec")
    assert spec_of(script) == spec
    rest = script
    for shared in (channel, codec):
        assert script.count(scripts.source(shared)) == 1  # inlined once, whole
        rest = rest.replace(scripts.source(shared) + "\n", "")
    rest = re.sub(r"^SPEC = .*\n", "", rest, flags=re.M)
    kept = [line for line in scripts.source(program).splitlines() if "# bundled:" not in line]
    assert rest == "\n".join(kept) + "\n"  # every other line as the program's file has it
    assert "from ." not in rest and "# bundled:" not in rest


def test_the_sources_are_the_program_files():
    for module in (channel, codec, completion_side, tests_side):
        assert scripts.source(module) == Path(module.__file__).read_text(encoding="utf-8")
        assert Path(module.__file__).parent.name == "programs"
