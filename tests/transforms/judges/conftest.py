"""Judge client fixtures: the real default model as a local judge (the real OpenAI-compatible server on it,
`judge_server`, is in tests/conftest.py: the label stage tests use it too).

Session-scoped (loading the model takes seconds); tests keep max_tokens tiny so the whole judge client suite stays
short on 2 CPU cores.
"""

import pytest

from rewardmill.transforms.judges.client import BackendConfig
from rewardmill.transforms.judges.transformers_client import TransformersJudgeClient


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """Generate on one thread here: on a 2-core machine shared with another job, torch's second OpenMP thread
    spin-waits for a busy core and a tiny generate call gets ~10x slower (0.8 s -> 9 s measured)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def local_judge(policy_dir) -> TransformersJudgeClient:
    """The real default model as a local judge client, loaded once per session."""
    return TransformersJudgeClient(BackendConfig(model=str(policy_dir), batch_size=4))
