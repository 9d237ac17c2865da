"""The rounds loop against a stand-in DAG: `run_dag` reads the sizes the loop wrote to params.yaml and yields rows at
fixed rates. The loop's own logic (when to stop, what to write, dry sources, budgets) is what is under test; the real
DAG's rounds (`dvc repro` on the default model, byte-identical to one run) are tests/e2e/test_targets.py's."""

import pytest
import yaml

from rewardmill.transforms.targets.driver import BUDGET, MAX_ROUNDS, Sources, run_rounds
from rewardmill.transforms.targets.params import TargetsConfig
from rewardmill.transforms.targets.rounds import DRY, MET
from rewardmill.transforms.targets.yields import Observation

PARAMS = """\
prompts:
  sources:
    - name: arith
      kind: arithmetic
      count: 10              # the size the rounds grow
    - name: code
      kind: code_basics
"""


class FakeDag:
    """Prompts: arithmetic `count` (at most `capacity`), 5 code tasks; pairs: `rate` per math prompt, 1 per code."""

    def __init__(self, path, rate=0.5, capacity=10**6, budget=None):
        self.path, self.rate, self.capacity, self.budget, self.runs = path, rate, capacity, budget or {}, []

    def run(self):
        self.runs.append(yaml.safe_load(self.path.read_text())["prompts"]["sources"][0]["count"])

    def observe(self) -> Observation:
        math = min(self.runs[-1], self.capacity)
        return Observation(
            {("arith", "math"): math, ("code", "code"): 5}, {"pairs": {"math": int(math * self.rate), "code": 5}}
        )


def rounds(tmp_path, targets, dag=None, **kwargs):
    path = tmp_path / "params.yaml"
    path.write_text(PARAMS)
    dag = dag or FakeDag(path, **kwargs)
    dag.path = path
    sources = Sources.from_params(yaml.safe_load(PARAMS)["prompts"]["sources"])
    return run_rounds(targets, sources, path, dag.run, dag.observe, lambda: dag.budget), dag, path


def test_rounds_grow_the_source_until_the_target_is_met(tmp_path):
    record, dag, path = rounds(tmp_path, TargetsConfig(pairs=40, max_growth=10.0))
    # 10 math prompts give 5 pairs + 5 code = 10; 44 wanted (x1.1), 5 from code: 39 from math at 0.5 = 78 prompts
    assert record["outcome"] == MET and dag.runs == [10, 78]
    assert "count: 78              # the size the rounds grow" in path.read_text()  # comment kept
    assert [r["round"] for r in record["rounds"]] == [1, 2] and record["rounds"][0]["next"]["factor"] == 7.8
    assert record["rounds"][-1]["observed"]["rows"]["pairs"] == {"code": 5, "math": 39}


def test_growth_per_round_is_capped(tmp_path):
    record, dag, _ = rounds(tmp_path, TargetsConfig(pairs=40))  # 7.8x wanted, 4x allowed, then the rest
    assert record["outcome"] == MET and dag.runs == [10, 40, 78]


def test_a_target_already_met_runs_once_and_writes_nothing(tmp_path):
    record, dag, path = rounds(tmp_path, TargetsConfig(pairs=10))
    assert record["outcome"] == MET and dag.runs == [10] and path.read_text() == PARAMS


def test_a_source_that_stops_giving_prompts_is_dry(tmp_path):
    record, dag, _ = rounds(tmp_path, TargetsConfig(pairs=100), capacity=12)
    assert record["outcome"] == DRY and not record["met"]
    assert dag.runs == [10, 40, 160]  # 40 asked, 12 came (2 new); 160 asked, still 12: dry


def test_a_budget_stops_the_rounds(tmp_path):
    record, dag, _ = rounds(tmp_path, TargetsConfig(pairs=40), budget={"data/rollouts": 3})
    assert record["outcome"] == BUDGET and dag.runs == [10]


def test_max_rounds_and_the_smallest_step_that_adds_a_prompt(tmp_path):
    record, dag, _ = rounds(tmp_path, TargetsConfig(pairs=16, max_rounds=3, margin=0.0), rate=0.0)
    # no math pair at all: each round grows by max_growth (4x), until max_rounds
    assert record["outcome"] == MAX_ROUNDS and dag.runs == [10, 40, 160]
    record, dag, _ = rounds(tmp_path, TargetsConfig(pairs=11, margin=0.0), rate=0.5)
    assert dag.runs == [10, 12] and record["outcome"] == MET  # 1 more pair at 0.5 per prompt: 2 more prompts


@pytest.mark.parametrize("targets", [TargetsConfig(pairs=40, max_rounds=1)])
def test_one_round_allowed_does_not_grow(tmp_path, targets):
    record, dag, path = rounds(tmp_path, targets)
    assert record["outcome"] == MAX_ROUNDS and dag.runs == [10] and path.read_text() == PARAMS
