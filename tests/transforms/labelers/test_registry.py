"""The registry's conventions that dvc.yaml and the Beam wrapper rely on, checked for every labeler."""

import pickle

import pytest

from rewardmill.schemas.rollout import ROLLOUT_V3
from rewardmill.transforms.config import from_dict
from rewardmill.transforms.labelers import LABELERS
from rewardmill.transforms.labelers.contract import GENERATED_RUBRIC, PROMPT_ONLY_COLUMNS
from tests.conftest import REPO

# Settings without a default (a reward model is the user's to name; a hub id is not loaded until the first label)
REQUIRED = {"reward_model": {"model": "example/reward-model"}, "rule_checker": {"rubrics": "rules"}}


@pytest.mark.parametrize("key", sorted(LABELERS))
def test_labeler_conventions(key):
    cls = LABELERS[key]
    # label@<key> stages depend on transforms/labelers/<labeler key>.py
    assert (REPO / "transforms/labelers" / f"{key}.py").exists()
    assert cls.name == key and isinstance(cls.version, str) and cls.version
    labeler = cls(from_dict(cls.Config, REQUIRED.get(key, {}), key))
    # v3: the trajectory columns (turns, env_reward, ...); a prompt-only column the label stage joins (metadata)
    assert set(labeler.reads) <= {*ROLLOUT_V3.names, *PROMPT_ONLY_COLUMNS, GENERATED_RUBRIC}
    assert getattr(labeler, "tasks", None) is None or isinstance(labeler.tasks, tuple)
    assert pickle.loads(pickle.dumps(labeler)).version == cls.version
