"""transforms/labelers/code_digest.py: the code_tests labeler's digest covers the sandbox it runs code in and the
programs that run inside it (read as files by the sandbox, found through scripts.py's imports)."""

from pathlib import Path

import pytest

from rewardmill.transforms.labelers import code_digest
from rewardmill.transforms.labelers.code_tests import CodeTestsVerifier

PROGRAMS = code_digest.ROOT / "transforms" / "sandbox" / "programs"


def runs() -> set[Path]:
    return code_digest.closure(code_digest.source_file(CodeTestsVerifier))


def test_the_code_tests_labeler_runs_the_whole_sandbox_package():
    sandbox = {p for p in (code_digest.ROOT / "transforms" / "sandbox").rglob("*.py") if p.name != "__init__.py"}
    assert sandbox and sandbox <= runs()


@pytest.mark.parametrize("program", sorted(p.name for p in PROGRAMS.glob("*.py") if p.name != "__init__.py"))
def test_a_change_to_a_program_file_changes_the_digest(monkeypatch, program):
    path = PROGRAMS / program
    before = code_digest.code_digest(CodeTestsVerifier)
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda p: real(p) + (b"# edited" if p == path else b""))
    assert code_digest.code_digest(CodeTestsVerifier) != before


def test_a_judge_digest_covers_the_local_generation_it_calls():
    """A local judge generates through transforms/sampling: a change there must not be answered by cached labels."""
    from rewardmill.transforms.labelers.code_digest import ROOT, closure, source_file
    from rewardmill.transforms.labelers.pointwise_judge import PointwiseJudge

    files = {p.relative_to(ROOT).as_posix() for p in closure(source_file(PointwiseJudge))}
    assert "transforms/sampling/transformers_generate.py" in files
