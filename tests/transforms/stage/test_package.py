"""The worker wheel: built from the checkout, reused while the source is unchanged, rebuilt after a change."""

import shutil

import pytest

from rewardmill.transforms.stage.package import SOURCE, source_digest, worker_wheel


@pytest.mark.slow
def test_the_wheel_is_reused_until_the_source_changes(tmp_path):
    root = tmp_path / "src"
    root.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(SOURCE / name, root / name)
    for name in ("pipelines", "transforms", "schemas"):
        shutil.copytree(SOURCE / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    first = worker_wheel(tmp_path / "dist", root)
    assert first.name.startswith("rewardmill-") and worker_wheel(tmp_path / "dist", root) == first
    before = source_digest(root)
    (root / "pipelines" / "cli.py").write_text((root / "pipelines" / "cli.py").read_text() + "\n# changed\n")
    assert source_digest(root) != before
    second = worker_wheel(tmp_path / "dist", root)
    assert second != first and second.parent.name == source_digest(root)


def test_no_checkout_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"not a source checkout with pyproject.toml"):
        worker_wheel(tmp_path / "dist", tmp_path)
