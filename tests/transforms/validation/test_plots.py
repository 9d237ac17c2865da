"""DVC plot data: bins, distribution and points from known rewards and margins, the CSV bytes, and
`dvc plots show` rendering them with the templates of the repository's dvc.yaml."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rewardmill.transforms.validation.dataset_metrics import kept_rewards
from rewardmill.transforms.validation.plots import (
    LENGTH_REWARD,
    MARGINS,
    REWARD_HISTOGRAM,
    length_reward_points,
    margin_distribution,
    reward_histogram,
    to_csv,
    write_plots,
)

REPO = Path(__file__).resolve().parents[3]
DVC = Path(sys.executable).with_name("dvc")


@pytest.mark.parametrize(
    ("rewards", "counts"),
    [
        ([], [0] * 10),  # every bin listed, empty ones too
        ([0.0, 0.05, 0.1], [2, 1] + [0] * 8),  # a bin holds its lower bound
        ([1.0, 0.95, 0.9999], [0] * 9 + [3]),  # 1.0 falls in the last bin
        ([0.3, 0.7, 0.6], [0, 0, 0, 1, 0, 0, 1, 1, 0, 0]),  # float products (0.3 * 10) stay in their bin
        ([-0.5, 1.5, 0.5], [0] * 5 + [1] + [0] * 4),  # out of range: in no bin (the rewards suite reports them)
    ],
)
def test_reward_histogram_counts(rewards, counts):
    assert [row["count"] for row in reward_histogram(rewards)] == counts


def test_reward_histogram_bins_sort_as_labels():
    rows = reward_histogram([0.5])
    assert rows[0] == {"bin": "0.00-0.10", "lower": 0.0, "upper": 0.1, "count": 0}
    assert rows[-1]["bin"] == "0.90-1.00" and [r["bin"] for r in rows] == sorted(r["bin"] for r in rows)


@pytest.mark.parametrize(
    ("margins", "expected"),
    [
        ([], []),
        ([1.0, 0.75, 0.75], [(0.75, 0.666667), (1.0, 1.0)]),  # a repeated margin: one step to its last share
        ([0.2, 0.1, 0.4, 0.3], [(0.1, 0.25), (0.2, 0.5), (0.3, 0.75), (0.4, 1.0)]),
    ],
)
def test_margin_distribution(margins, expected):
    assert [(r["margin"], r["share"]) for r in margin_distribution(margins)] == expected


def test_length_reward_points_are_sorted():
    points = [
        {"rollout_id": "b", "n_tokens": 20, "reward": 0.5, "correct": None},
        {"rollout_id": "c", "n_tokens": 10, "reward": 1 / 3, "correct": True},
        {"rollout_id": "a", "n_tokens": 20, "reward": 0.5, "correct": False},
    ]
    assert [(p["rollout_id"], p["reward"]) for p in length_reward_points(points)] == [
        ("c", 0.333333),
        ("a", 0.5),
        ("b", 0.5),
    ]


def test_csv_cells():
    rows = [{"a": True, "b": None, "c": 0.5}, {"a": False, "b": "x,y", "c": 2}]
    assert to_csv(rows, ["a", "b", "c"]) == 'a,b,c\ntrue,,0.5\nfalse,"x,y",2\n'
    assert to_csv([], ["a"]) == "a\n"  # a header, even without rows


def test_write_plots_from_the_project(project, tmp_path):
    points = kept_rewards(project / "datasets" / "_rewards")
    paths = write_plots(tmp_path / "plots", points, [0.75, 0.75, 1.0])
    assert [p.name for p in paths] == [REWARD_HISTOGRAM, MARGINS, LENGTH_REWARD]
    scatter = (tmp_path / "plots" / LENGTH_REWARD).read_text().splitlines()
    # the 4 kept rollouts with a reward, by length
    assert [line.split(",")[1:] for line in scatter] == [
        ["n_tokens", "reward", "correct"],
        ["10", "1.0", "true"],
        ["20", "0.25", "false"],
        ["30", "1.0", "true"],
        ["40", "0.5", "true"],
    ]
    histogram = (tmp_path / "plots" / REWARD_HISTOGRAM).read_text().splitlines()
    assert "0.20-0.30,0.2,0.3,1" in histogram and "0.90-1.00,0.9,1.0,2" in histogram


@pytest.mark.skipif(not DVC.exists(), reason="dvc is not installed beside this Python")
def test_dvc_plots_show_renders_the_repository_plots(project, tmp_path):
    """The top-level `plots:` of dvc.yaml, against plot files written by write_plots, in a scratch DVC repo."""
    definitions = yaml.safe_load((REPO / "dvc.yaml").read_text())["plots"]
    root = tmp_path / "repo"
    root.mkdir()
    (root / "dvc.yaml").write_text(yaml.safe_dump({"plots": definitions}))
    write_plots(root / "plots", kept_rewards(project / "datasets" / "_rewards"), [0.75, 0.75, 1.0])
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    subprocess.run([str(DVC), "init", "--no-scm", "-q"], cwd=root, env=env, check=True)
    shown = subprocess.run(
        [str(DVC), "plots", "show", "--json"], cwd=root, env=env, check=True, capture_output=True, text=True
    )
    rendered = json.loads(shown.stdout)
    assert not rendered.get("errors")
    assert {path: fields["template"] for d in definitions for path, fields in d.items()} == {
        "plots/reward_histogram.csv": "bar_horizontal",
        "plots/margins.csv": "linear",
        "plots/length_reward.csv": "scatter",
    }
    assert sorted(rendered["data"]) == sorted(next(iter(d)) for d in definitions)
    for definition in definitions:
        ((path, fields),) = definition.items()
        ((plot,),) = [rendered["data"][path]]
        content = plot["content"]
        assert content["title"]["text"] == fields["title"] and content["encoding"]["x"]["field"] == fields["x"]
        assert f'"field": "{fields["y"]}"' in json.dumps(content), path  # linear layers its y encoding
        assert content["data"]["values"], path  # rows reached the plot
    shutil.rmtree(root / ".dvc")
