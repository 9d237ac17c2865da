"""params `steps.<NAME>` and the pure choices made from it (transforms/steps/params.py): which rollouts get step labels
and which model folder continues them."""

import pytest

from rewardmill.transforms.config import ConfigError
from rewardmill.transforms.steps.params import continuation_model, select

POOL = {
    "local": {"backend": "transformers", "model": "models/local"},
    "served": {"backend": "openai", "model": None},
}


def test_continuations_come_from_the_named_members_own_folder():
    assert continuation_model("mc", None, {"only": POOL["local"]}, "models/policy") == "models/policy"
    assert continuation_model("mc", "local", POOL, "models/policy") == "models/local"
    with pytest.raises(ConfigError, match=r"'served' is served by an endpoint \(backend openai\)"):
        continuation_model("mc", "served", POOL, "models/policy")
    with pytest.raises(ConfigError, match=r"unknown policy 'x'; the rollouts' policies are \['local', 'served'\]"):
        continuation_model("mc", "x", POOL, "models/policy")


def test_selection_keeps_one_members_rollouts_and_counts_the_others():
    rows = [{"rollout_id": f"r{i}", "task": "math", "policy": {"name": "a" if i % 2 else "b"}} for i in range(6)]
    chosen, counts = select(rows, ("math",), None, "a")
    assert [r["rollout_id"] for r in chosen] == ["r1", "r3", "r5"]
    assert counts == {"rollouts": 6, "other_tasks": 0, "not_sampled": 0, "selected": 3, "other_policies": 3}
