"""The IFEval figures in docs/labelers.md are what `python bench/ifeval_gpt4.py` prints (a quoted figure is a
test)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
ROW = re.compile(r"\| ((?:prompt|instruction)-level (?:strict|loose)) \| ([\d.]+) \| ([\d.]+) \| ([+-][\d.]+) \|")


@pytest.mark.slow
def test_readme_quotes_what_the_bench_prints():
    readme = (REPO / "docs/labelers.md").read_text()
    assert "`python bench/ifeval_gpt4.py` prints" in readme
    quoted = {m.group(1): m.groups()[1:] for m in ROW.finditer(readme)}
    assert len(quoted) == 4
    out = subprocess.run(
        [sys.executable, "bench/ifeval_gpt4.py"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    printed = {}
    for line in out.splitlines():
        parts = re.split(r"\s{2,}", line.strip())
        if parts[0] in quoted:
            printed[parts[0]] = tuple(parts[1:])
    assert printed == quoted, out
    assert "unlabeled=0" in out  # every prompt labeled: no error hides behind the figures
