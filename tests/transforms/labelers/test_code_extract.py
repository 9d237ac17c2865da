"""transforms/labelers/code_extract.py: the code a completion means to submit, and which part of it ran."""

import pytest

from rewardmill.transforms.labelers.code_extract import extract, extract_code


@pytest.mark.parametrize(
    "completion, expected",
    [
        ("```python\nx = 1\n```", "x = 1"),  # one python block
        ("```python\nx = 1\n```\ntext\n```python\nx = 2\n```", "x = 2"),  # the last python block wins
        ("```py\nx = 1\n```", "x = 1"),  # short tag
        ("```\nx = 3\n```", "x = 3"),  # an untagged block when there is no python one
        ("```python\nx = 1\n```\n```\nnot code\n```", "x = 1"),  # a python block beats an untagged one
        ("```python\ndef f():\n    return 1", "def f():\n    return 1"),  # unclosed fence (cut at max tokens)
        ("def f():\n    return 1\n\n", "def f():\n    return 1"),  # no fence: the whole text
        ("\n\n    return x\n", "    return x"),  # a bare body keeps its indentation
        ("```bash\nls\n```", "```bash\nls\n```"),  # only a non-python block: the whole text
        ("", ""),  # empty
    ],
)
def test_extract_code(completion, expected):
    assert extract_code(completion) == expected


def block(code: str, tag: str = "python") -> str:
    return f"```{tag}\n{code}\n```"


ADD = "def add(a, b):\n    return a + b"
USES_H = "def add(a, b):\n    return h(a, b)"


@pytest.mark.parametrize(
    "completion, wanted, code, source",
    [
        # the function in an earlier block, a usage demo in the last: the demo does not run
        (block("def rev(s):\n    return s[::-1]") + "\nUsage:\n" + block("print(rev('ab'))"), ("rev",),
         "def rev(s):\n    return s[::-1]", "code block 1 of 2"),
        # a helper in a block of its own is run with the block that uses it, in text order
        (block("def _h(x):\n    return x") + "\n" + block("def f(x):\n    return _h(x)"), ("f",),
         "def _h(x):\n    return x\n\ndef f(x):\n    return _h(x)", "code blocks 1, 2 of 2"),
        # an import in its own block, used by the function
        (block("import math") + "\n" + block("def f(x):\n    return math.sqrt(x)"), ("f",),
         "import math\n\ndef f(x):\n    return math.sqrt(x)", "code blocks 1, 2 of 2"),
        # a later corrected definition wins over the first attempt
        (block("def add(a, b):\n    return a - b") + "\nFixed:\n" + block(ADD), ("add",), ADD, "code block 2 of 2"),
        # the opening fence is missing
        (ADD + "\n```\n", ("add",), ADD, "the code outside the fences"),
        # prose around unfenced code and a stray closing fence
        ("Sure! Here it is:\n" + ADD + "\n```\nHope this helps.", ("add",), ADD, "the code outside the fences"),
        # no fences at all, prose before and after
        ("My answer:\n" + ADD + "\nIt adds.", ("add",), ADD, "the code outside the fences"),
        # the closing fence is missing (cut at max tokens)
        ("```python\n" + ADD, ("add",), ADD, "code block 1 of 1"),
        # an untagged block is code too
        (block(ADD, ""), ("add",), ADD, "code block 1 of 1"),
        # a bash block is never run, whatever it defines
        (block("add=1", "bash") + "\n" + block(ADD), ("add",), ADD, "code block 2 of 2"),
        # nothing defines the name: the last python block, as without names (its NameError is the answer)
        (block("def plus(a, b): return a + b"), ("add",), "def plus(a, b): return a + b", "code block 1 of 1"),
        # a HumanEval body continuing the prompt is not parsed alone: the whole text runs
        ("    return x * x\n", ("sq",), "    return x * x", "the whole text"),
    ],
)  # fmt: skip
def test_extract_runs_what_defines_the_tested_names(completion, wanted, code, source):
    result = extract(completion, wanted)
    assert (result.code, result.source) == (code, source)


def test_prose_search_is_bounded():
    text = "\n".join(f"x{i} = (" for i in range(2000))  # many starts, none parses
    assert extract(text, ("f",)).source == "the whole text"


def test_without_names_the_last_block_takes_the_helpers_it_uses():
    completion = (
        block("def solve(a, b):\n    return a + b") + "\nMain:\n" + block("print(solve(*map(int, input().split())))")
    )
    result = extract(completion)
    assert result.code.startswith("def solve") and result.code.endswith("split())))")
    assert result.source == "code blocks 1, 2 of 2"


@pytest.mark.parametrize(
    "completion, code, source",
    [
        ("```py3\nx = 1\n```", "x = 1", "code block 1 of 1"),  # py3 is python
        ("```Python3.11\nx = 1\n```", "x = 1", "code block 1 of 1"),  # case and a version
        ('```python title="a.py"\nx = 1\n```', "x = 1", "code block 1 of 1"),  # attributes after the tag
        ("```{.python}\nx = 1\n```\n```\ny = 2\n```", "x = 1", "code block 1 of 2"),  # pandoc braces: python
        ("````python\nx = 1\n````", "x = 1", "code block 1 of 1"),  # four backticks
        ("```python:main.py\nx = 1\n```", "x = 1", "code block 1 of 1"),  # a file name after the tag
        ("```bash\nls\n```\n```\nx = 3\n```", "x = 3", "code block 2 of 2"),  # another language is a block too
        ("1. Code:\n\n   ```python\n   def f():\n       return 1\n   ```\n", "def f():\n    return 1",
         "code block 1 of 1"),  # fence indented in a list item: the block loses the fence's indentation only
        ("- x:\n  ```python\n      return x\n  ```", "    return x", "code block 1 of 1"),  # a body stays indented
        ("Use ```x = 1``` here", "Use ```x = 1``` here", "the whole text"),  # inline code is not a fence
    ],
)  # fmt: skip
def test_any_fence_info_string_and_indented_fences(completion, code, source):
    result = extract(completion)
    assert (result.code, result.source) == (code, source)


@pytest.mark.parametrize(
    "completion, wanted, code, finished",
    [
        ("<think>\n" + block(ADD), ("add",), "", False),  # never closed: no answer at all
        ("<think>\n" + block(ADD) + "\n</think>\nI could not solve it.", ("add",), "I could not solve it.", True),
        # a draft while thinking, the answer after it
        ("<think>" + block("def add(a, b):\n    return 0") + "</think>\n" + block(ADD), ("add",), ADD, True),
        # a helper defined only in the reasoning is not taken into the answer's code
        ("<think>" + block("def h(a, b):\n    return a + b") + "</think>\n" + block(USES_H), ("add",), USES_H, True),
        ("Not reasoning: </think>\n" + block(ADD), ("add",), ADD, True),  # a stray close tag hides nothing
    ],
)  # fmt: skip
def test_only_the_answer_after_the_reasoning_is_code(completion, wanted, code, finished):
    result = extract(completion, wanted)
    assert (result.code, result.finished) == (code, finished)
