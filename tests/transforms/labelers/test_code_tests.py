"""transforms/labelers/code_tests.py + code_harness.py: pass rate over the prompt's tests, run in the sandbox."""

import json
import pickle
import time

import pytest

from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.labelers.code_harness import completion_plan, parse_tests, same_output
from rewardmill.transforms.labelers.code_harness import tests_plan as plan_of  # pytest would collect tests_*
from rewardmill.transforms.labelers.code_tests import CodeTestsConfig, CodeTestsVerifier
from rewardmill.transforms.sandbox import runner as sandbox_mod
from rewardmill.transforms.sandbox.runner import SandboxUnavailable
from rewardmill.transforms.sources import humaneval


@pytest.fixture(scope="module")
def verifier():
    v = CodeTestsVerifier(CodeTestsConfig(timeout_seconds=1.0, workers=4))
    try:
        v.sandbox.mechanism()
    except SandboxUnavailable as exc:
        pytest.fail(f"{exc}: install Debian's bubblewrap (`make install` does, as root)")
    yield v
    v.teardown()


ADD_ASSERTS = json.dumps(
    {"style": "asserts", "asserts": ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(-1, 1) == 0"]}
)


@pytest.mark.parametrize(
    "completion, score, verdict, rationale_has",
    [
        # correct, in a fenced block after some prose
        ("Sure:\n```python\ndef add(a, b):\n    return a + b\n```\nDone.", 1.0, "correct", "3/3"),
        # wrong return value
        ("def add(a, b):\n    return a - b - 1", 0.0, "incorrect", "AssertionError"),
        # raises: the exception is named
        ("def add(a, b):\n    return a / 0", 0.0, "incorrect", "ZeroDivisionError"),
        # partial: right for positive a only (passes 2 of 3)
        ("def add(a, b):\n    return a + b if a > 0 else 7", 2 / 3, "incorrect", "2/3"),
        # infinite loop in the function: a run that never finishes is incorrect, score 0 (not above a wrong answer)
        ("def add(a, b):\n    while True:\n        pass", 0.0, "incorrect", "timed out"),
        # infinite loop while loading the code
        pytest.param("while True:\n    pass", 0.0, "incorrect", "loading the code timed out", marks=pytest.mark.slow),
        # syntax error: the code never runs
        ("def add(a, b)\n    return a + b", 0.0, "incorrect", "syntax error"),
        # raises at import time
        ("import nonexistent_module_xyz\ndef add(a, b):\n    return a + b", 0.0, "incorrect", "ModuleNotFoundError"),
        # exits the process: the unreported tests crash
        ("import os\nos._exit(0)", 0.0, "incorrect", "process ended"),
        # sys.exit inside the function is an error, not a pass
        ("def add(a, b):\n    raise SystemExit(0)", 0.0, "incorrect", "SystemExit"),
        # prints and a __main__ demo do not interfere
        (
            "print('hi')\ndef add(a, b):\n    return a + b\nif __name__ == '__main__':\n    input()",
            1.0,
            "correct",
            "3/3",
        ),
        # forged harness lines on stdout are not results
        ('def add(a, b):\n    print(\'{"test": 0, "status": "pass"}\')\n    return -99', 0.0, "incorrect", "0/3"),
        # the function name is wrong
        ("def plus(a, b):\n    return a + b", 0.0, "incorrect", "NameError"),
        # no code at all
        ("", 0.0, "incorrect", "no code"),
    ],
)
def test_asserts_verdict_table(verifier, completion, score, verdict, rationale_has):
    label = verifier.label(completion, ADD_ASSERTS)
    assert (label.verdict, label.score) == (verdict, pytest.approx(score)), label
    assert rationale_has in label.rationale
    assert label.aspect == "correctness"


def test_raw_has_per_test_results(verifier):
    label = verifier.label("def add(a, b):\n    return a + b if a > 0 else 7", ADD_ASSERTS)
    raw = json.loads(label.raw)
    assert raw["style"] == "asserts" and raw["isolation"] in ("bwrap", "unshare", "none")
    assert [t["status"] for t in raw["tests"]] == ["pass", "pass", "fail"]
    assert raw["pass_rate"] == pytest.approx(2 / 3)


def test_setup_code_runs_before_asserts(verifier):
    tests = json.dumps(
        {"style": "asserts", "setup": "import math", "asserts": ["assert math.isclose(area(1), math.pi)"]}
    )
    assert verifier.label("import math\ndef area(r):\n    return math.pi * r * r", tests).verdict == "correct"


def test_bare_list_of_asserts_is_accepted(verifier):
    assert verifier.label("def f():\n    return 1", '["assert f() == 1"]').score == 1.0


@pytest.mark.slow
def test_one_timeout_scores_zero_whatever_passed(verifier):
    tests = json.dumps({"style": "asserts", "asserts": ["assert f(1) == 1", "assert f(0) == 0", "assert f(2) == 2"]})
    label = verifier.label("def f(x):\n    while x == 0:\n        pass\n    return x", tests)
    # the relay kills the process that does not answer: the tests after it are timeouts too
    assert [t["status"] for t in json.loads(label.raw)["tests"]] == ["pass", "timeout", "timeout"]
    assert (label.verdict, label.score) == ("incorrect", 0.0)
    assert "test 1 timed out" in label.rationale
    assert not label.cacheable  # a loaded machine can time out correct code: a rerun tries again


def test_a_crash_is_incorrect_and_cached(verifier):
    label = verifier.label("import os\ndef f():\n    os._exit(3)", '["assert f() == 1"]')
    assert (label.verdict, label.score, label.cacheable) == ("incorrect", 0.0, True)


HE_TEST = "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(-3) == 9\n"
HE_PROMPT = 'import math\n\n\ndef sq(x: int) -> int:\n    """Return x squared."""\n'
HE_TESTS = json.dumps({"style": "humaneval", "test": HE_TEST, "entry_point": "sq", "prompt": HE_PROMPT})


@pytest.mark.parametrize(
    "completion, score, verdict",
    [
        ("    return x * x\n", 1.0, "correct"),  # a body continuing the prompt
        ("```python\ndef sq(x):\n    return x ** 2\n```", 1.0, "correct"),  # a whole function
        ("```python\ndef sq(x):\n    return int(math.pow(x, 2))\n```", 1.0, "correct"),  # uses the prompt's import
        ("    return x * 2\n", 0.0, "incorrect"),  # wrong value
        ("    return None\n", 0.0, "incorrect"),  # returns nothing
        ("    raise ValueError('no')\n", 0.0, "incorrect"),  # raises
        ("  return x *\n", 0.0, "incorrect"),  # does not compile
        ("```python\nreturn x * x\n```", 1.0, "correct"),  # a body written at column 0: indented under the def
        ("y = x * x\nif y:\n    return y\nreturn 0\n", 1.0, "correct"),  # a longer one keeps its structure
        ("print(x * x)\n", 0.0, "incorrect"),  # no top-level return: not a body, runs as a statement
        ("<think>\n    return x * x\n", 0.0, "incorrect"),  # unclosed reasoning: no answer
    ],
)
def test_humaneval_style(verifier, completion, score, verdict):
    label = verifier.label(completion, HE_TESTS)
    assert (label.verdict, label.score) == (verdict, score), label


STDIO = json.dumps(
    {
        "style": "stdio",
        "cases": [
            {"input": "1 2\n", "output": "3\n"},
            {"input": "10 -4\n", "output": "6"},  # expected without the final newline
            {"input": "0 0\n", "output": "0\n\n"},  # expected with a trailing blank line
        ],
    }
)


@pytest.mark.parametrize(
    "completion, score, verdict, rationale_has",
    [
        ("a, b = map(int, input().split())\nprint(a + b)", 1.0, "correct", "3/3"),  # correct
        ("a, b = map(int, input().split())\nprint(a + b, ' ')", 1.0, "correct", "3/3"),  # trailing space is fine
        ("a, b = map(int, input().split())\nprint(a + b if a else 5)", 2 / 3, "incorrect", "expected"),  # partial
        ("a, b = map(int, input().split())\nprint(a // 0)", 0.0, "incorrect", "ZeroDivisionError"),  # raises
        ("print(", 0.0, "incorrect", "SyntaxError"),  # does not compile
        pytest.param(  # never ends: incorrect, score 0
            "while True:\n    pass", 0.0, "incorrect", "timed out", marks=pytest.mark.slow
        ),
        ("a, b = map(int, input().split())\nprint(a + b)\nexit()", 1.0, "correct", "3/3"),  # site's exit()
        ("a, b = map(int, input().split())\nprint(a + b)\nquit(0)", 1.0, "correct", "3/3"),  # and quit()
        ("print(1)\nexit(2)", 0.0, "incorrect", "test 0 error"),  # a nonzero exit status is an error
        ("<think>\na, b = map(int, input().split())\nprint(a + b)", 0.0, "incorrect", "no finished answer"),
    ],
)
def test_stdio_style(verifier, completion, score, verdict, rationale_has):
    label = verifier.label(completion, STDIO)
    assert (label.verdict, label.score) == (verdict, pytest.approx(score)), label
    assert rationale_has in label.rationale


@pytest.mark.slow
def test_stdio_cases_run_in_parallel(verifier):
    start = time.monotonic()
    label = verifier.label("while True:\n    pass", STDIO)  # 3 cases x ~3 s each if run one after another
    assert label.verdict == "incorrect" and time.monotonic() - start < 7


@pytest.mark.parametrize(
    "tests, verdict, rationale_has",
    [
        (None, "abstain", "no tests"),  # a prompt without tests
        ("{not json", "error", "not JSON"),  # malformed JSON
        ('{"style": "pytest"}', "error", "style"),  # unknown style
        ('{"style": "asserts", "asserts": []}', "error", "non-empty"),  # no asserts
        ('{"style": "humaneval", "test": "def check(c): pass"}', "error", "entry_point"),  # no entry point
        ('{"style": "stdio", "cases": [{"input": "1"}]}', "error", "case 0"),  # a case without output
        ('["assert f(1) =="]', "error", "does not compile"),  # the test itself is broken
        ('{"style": "asserts", "setup": "import nope_xyz", "asserts": ["assert 1"]}', "error", "tests' own code"),
    ],
)
def test_malformed_tests_cannot_label(verifier, tests, verdict, rationale_has):
    label = verifier.label("def f(x):\n    return x", tests)
    assert (label.verdict, label.score) == (verdict, None)
    assert rationale_has in label.rationale


def test_sandbox_unavailable_is_a_distinct_error(monkeypatch):
    monkeypatch.setattr(sandbox_mod, "_working", set())
    monkeypatch.setattr(sandbox_mod.shutil, "which", lambda name, *a, **k: None)
    label = CodeTestsVerifier().label("def add(a, b):\n    return a + b", ADD_ASSERTS)
    assert (label.verdict, label.score) == ("error", None)
    assert label.rationale.startswith("sandbox:") and "unavailable" in label.rationale


@pytest.mark.parametrize(
    "expected, actual, same",
    [
        ("3\n", "3\n", True),  # identical
        ("3", "3\n", True),  # final newline
        ("1 2\n", "1 2   \n", True),  # trailing spaces
        ("a\nb\n", "a\r\nb\r\n", True),  # CRLF
        ("3\n", "3\n\n\n", True),  # trailing blank lines
        ("3\n", "4\n", False),  # different value
        ("a\nb\n", "a\n\nb\n", False),  # a blank line in the middle matters
        (" 3\n", "3\n", False),  # leading space matters
    ],
)
def test_same_output(expected, actual, same):
    assert same_output(expected, actual) is same


def test_parse_tests_reads_each_style():
    assert parse_tests(ADD_ASSERTS).n_tests == 3
    he = parse_tests(HE_TESTS)
    assert (he.style, he.entry_point, he.asserts) == ("humaneval", "sq", ("check(sq)",))
    assert parse_tests(STDIO).cases[1] == ("10 -4\n", "6")


def test_config_from_params():
    cfg = from_dict(CodeTestsConfig, {"timeout_seconds": 2, "workers": 2, "allow_unisolated_network": False}, "x")
    assert cfg.timeout_seconds == 2.0 and cfg.workers == 2
    with pytest.raises(ConfigError, match="timeout"):
        from_dict(CodeTestsConfig, {"timeuot_seconds": 2}, "x")  # typo
    with pytest.raises(ConfigError, match="allow_unisolated_network"):
        from_dict(CodeTestsConfig, {"isolation": "none"}, "x")  # no namespaces needs the explicit flag
    with pytest.raises(ConfigError, match="workers"):
        from_dict(CodeTestsConfig, {"workers": 0}, "x")


def test_class_attributes():
    assert CodeTestsVerifier.name == "code_tests"
    assert CodeTestsVerifier.reads == ("completion", "tests")
    assert CodeTestsVerifier.tasks == ("code",)
    assert isinstance(CodeTestsVerifier.version, str)


def test_pickles_before_and_after_use(verifier):
    verifier.label("a, b = map(int, input().split())\nprint(a + b)", STDIO)  # creates the pool and semaphore
    copy = pickle.loads(pickle.dumps(verifier))
    assert copy.config == verifier.config
    assert copy.label("def add(a, b):\n    return a + b", ADD_ASSERTS).score == 1.0
    copy.teardown()


def test_label_many_keeps_order(verifier):
    rows = [(f"def add(a, b):\n    return a + b + {k}", ADD_ASSERTS) for k in (0, 1, 0, 5)]
    assert [lab.score for lab in verifier.label_many(rows)] == [1.0, 0.0, 1.0, 0.0]


# HumanEval acceptance: every canonical solution scores 1.0; wrong or raising solutions score 0.


@pytest.mark.slow
def test_humaneval_all_canonical_solutions_pass():
    verifier = CodeTestsVerifier(CodeTestsConfig(workers=4))
    try:
        verifier.sandbox.mechanism()
    except SandboxUnavailable as exc:
        pytest.fail(f"{exc}: install Debian's bubblewrap (`make install` does, as root)")
    problems = humaneval.problems()
    assert len(problems) == 164
    rows = [(p["canonical_solution"], json.loads(humaneval.to_record(p)["tests"])) for p in problems]
    labels = verifier.label_many([(code, json.dumps(tests)) for code, tests in rows])
    failed = {p["task_id"]: lab.rationale for p, lab in zip(problems, labels, strict=True) if lab.score != 1.0}
    assert failed == {}
    assert {lab.verdict for lab in labels} == {"correct"}


@pytest.mark.parametrize("index", [0, 13, 53, 100, 163])
@pytest.mark.parametrize(
    "body, rationale_has",
    [
        ("    return None\n", "AssertionError"),  # wrong value
        ("    raise RuntimeError('broken')\n", "RuntimeError"),  # raises: named in the rationale
    ],
)
def test_humaneval_wrong_solutions_score_zero(verifier, index, body, rationale_has):
    record = humaneval.generate()[index]
    label = verifier.label(body, record["tests"])
    assert (label.verdict, label.score) == ("incorrect", 0.0), label
    assert rationale_has in label.rationale


@pytest.mark.parametrize(
    "tests, modules, declared, standalone",
    [
        # a module the tests use by name is the real one; the function is the completion's
        ({"asserts": ["assert math.isclose(area(2), 12.566, rel_tol=1e-3)"]}, ["math"], ["area"], [True]),
        # builtins are never taken from the completion
        ({"asserts": ["assert sorted(f([2, 1])) == sorted([1, 2])", "assert abs(f([1])[0]) == 1"]}, [], ["f"],
         [True, True]),
        # what the setup imports or the tests bind is theirs
        ({"setup": "import math\nK = 2", "asserts": ["assert math.isclose(area(K), 12.566)"]}, [], ["area"], [True]),
        # a class the tests build from the completion is declared too
        ({"asserts": ["assert longest([Pair(1, 2)], 1) == 1"]}, [], ["Pair", "longest"], [True]),
        # a test reading what an earlier test bound cannot be dry-run alone
        ({"asserts": ["x = f(1)", "assert x == 2", "assert f(2) == 4"]}, [], ["f"], [True, False, True]),
    ],
)  # fmt: skip
def test_tests_plan_declares_only_what_the_tests_take_from_the_completion(tests, modules, declared, standalone):
    plan = plan_of(parse_tests({"style": "asserts", **tests}))
    assert (plan["modules"], plan["declared"], plan["standalone"]) == (modules, declared, standalone)


def test_tests_plan_for_humaneval_declares_the_entry_point_and_keeps_the_prompt():
    plan = plan_of(parse_tests(HE_TESTS))
    assert (plan["declared"], plan["modules"], plan["prompt"]) == (["sq"], [], HE_PROMPT)


@pytest.mark.parametrize(
    "code, export, imported",
    [
        # defs and classes come from the completion; what it imports, the tests import themselves
        ("from math import pi\nimport numpy as np\ndef f(): pass\nclass K: pass", ["f", "K"],
         {"pi": ["math", "pi"], "np": ["numpy", None]}),
        # any other binding reaches the tests as nothing (a NameError there)
        ("pi = 3\nCounter = lambda x: 0\ndef f():\n    global K\n    K = 1\n[np := 1]", ["f"], {}),
        # an import the completion rebinds is still the real import; a renaming import is nothing
        ("from math import pi\npi = 3\nfrom builtins import max as np\ndef f(): pass", ["f"], {}),
        # a fallback def for an import: the real import
        ("try:\n    from math import pi\nexcept ImportError:\n    def pi(): pass\ndef f(): pass", ["f"],
         {"pi": ["math", "pi"]}),
        ("import os.path as np\nimport os.path\ndef f(): pass", ["f"], {"np": ["os.path", None]}),
    ],
)  # fmt: skip
def test_completion_plan_takes_only_defs_from_the_completion(code, export, imported):
    plan = completion_plan({"declared": ["f", "K", "pi", "np", "Counter"]}, code)
    assert (plan["export"], plan["imported"]) == (export, imported)


@pytest.mark.parametrize(
    "completion, tests, verdict, score, rationale_has",
    [
        # the test raises before it uses the completion: its own fault, whatever the completion
        ("def f(x):\n    return x", ["assert int('x') == f(1)"], "error", None, "before using the completion"),
        # the completion binds the tested name by assignment, not def: it never reaches the tests, its fault
        ("f = 5", ["assert f(1) == 1"], "incorrect", 0.0, "NameError"),
        # a test that reads an earlier test's result is never blamed on the tests
        ("def f(x):\n    return None", ["x = f(1)", "assert x + 1 == 2"], "incorrect", 0.5, "TypeError"),
    ],
)
def test_who_is_to_blame_for_an_error(verifier, completion, tests, verdict, score, rationale_has):
    label = verifier.label(completion, json.dumps(tests))
    assert (label.verdict, label.score) == (verdict, score), label
    assert rationale_has in label.rationale


def test_rationale_names_the_blocks_that_ran(verifier):
    completion = "```python\ndef add(a, b):\n    return a + b\n```\nDemo:\n```python\nprint(add(1, 2))\n```"
    label = verifier.label(completion, ADD_ASSERTS)
    assert (label.verdict, label.score) == ("correct", 1.0)
    assert label.rationale.endswith("(ran code block 1 of 2)")


def test_the_sandboxed_programs_are_bundled_whole():
    from rewardmill.transforms.sandbox.scripts import candidate_script, tests_script

    for script in (
        candidate_script("x = 1", ["x"]),
        tests_script("", ["assert x"], plan_of(parse_tests(ADD_ASSERTS)), 1, 1),
    ):
        compile(script, "<bundled>", "exec")
        assert "from .codec import" not in script and 'SPEC = "{}"' not in script and "def _enc(" in script


def test_a_setup_that_fails_through_the_completion_is_the_completions_fault(verifier):
    tests = json.dumps({"style": "asserts", "setup": "BASE = f(0)", "asserts": ["assert f(1) == BASE + 1"]})
    label = verifier.label("def f(x):\n    raise ValueError('no')", tests)
    assert (label.verdict, label.score) == ("incorrect", 0.0), label
    assert "the tests' setup" in label.rationale and "ValueError" in label.rationale
