"""Writing grown sizes into params.yaml changes those values and nothing else: comments, nulls, order and layout of
the project's own params.yaml stay byte for byte."""

import difflib

from rewardmill.transforms.targets.params_file import write_sizes
from tests.conftest import REPO


def test_only_the_grown_size_changes_in_the_projects_params(tmp_path):
    path = tmp_path / "params.yaml"
    before = (REPO / "params.yaml").read_text()
    path.write_text(before)
    write_sizes(path, {0: {("count",): 96}})
    after = path.read_text()
    changed = [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]  # fmt: skip
    assert len(changed) == 2, changed
    assert (
        changed[0].split("#")[0].strip() == "-      count: 40"
        and changed[1].split("#")[0].strip() == "+      count: 96"
    )
    assert changed[0].split("#")[1] == changed[1].split("#")[1]  # the comment kept
    assert not list(tmp_path.glob(".params.yaml.tmp"))  # written to a temp name, renamed


def test_a_nested_size_is_created_where_params_left_it_out(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(
        "prompts:\n  sources:\n    - name: g\n      kind: reasoning_gym\n      tasks:\n        leg_counting:\n"
    )
    write_sizes(path, {0: {("tasks", "leg_counting", "count"): 16}})
    assert "leg_counting:\n          count: 16" in path.read_text()
