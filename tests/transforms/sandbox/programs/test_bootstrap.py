"""transforms/sandbox/programs/bootstrap.py: the first code in every sandbox. Importing it runs nothing; run, it leaves
the script nothing of its own (the script shares its __main__ globals)."""

import pytest

from rewardmill.transforms.sandbox import isolation
from rewardmill.transforms.sandbox.programs import bootstrap, source
from rewardmill.transforms.sandbox.runner import Sandbox, SandboxLimits, SandboxUnavailable

# what a script run by `python -I -S main.py` sees (the warnings registry comes from compiling the -c text)
MAIN_GLOBALS = [
    "__annotations__", "__builtins__", "__doc__", "__file__", "__loader__", "__name__", "__package__", "__spec__",
    "__warningregistry__",
]  # fmt: skip


def test_the_sandbox_runs_the_file():
    assert isolation.BOOTSTRAP == source(bootstrap)
    python = isolation.python_args("python", False, None, (1, 2, 3, 4, 5), "main.py")
    assert python[python.index("-c") + 1] == source(bootstrap)


def test_importing_it_runs_nothing():
    """Only its imports are bound: the run (argv, uid, limits, the script) is behind `__name__ == "__main__"`."""
    names = {name for name in vars(bootstrap) if not name.startswith("__")}
    assert names == {"_sitebuiltins", "builtins", "os", "resource", "sys"}


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    sb = Sandbox()
    try:
        sb.mechanism()
    except SandboxUnavailable as exc:
        pytest.skip(f"no sandbox here: {exc}")
    return sb


def test_the_script_sees_no_name_of_the_bootstrap(sandbox):
    code = "import sys\nprint(sorted(globals()))\nprint(__doc__, __file__, sys.argv, __name__)"
    result = sandbox.run(code, "", SandboxLimits(timeout_seconds=10))
    assert result.stdout.splitlines() == [repr([*MAIN_GLOBALS, "sys"]), "None main.py ['main.py'] __main__"]
