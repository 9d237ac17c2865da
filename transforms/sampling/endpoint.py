"""params `rollouts.openai`: a served policy's endpoint, and the identity its rollouts record.

Apart from the backend (openai_backend.py) so that reading params (candidate pools, the steps stage's policy check)
does not import Beam's RunInference, which brings torch and scipy: seconds of start-up in a stage that needs neither.
"""

import hashlib
import json
from dataclasses import dataclass

from rewardmill.transforms.judges.client import BackendConfig, BatchConfig
from rewardmill.transforms.sampling.policy import PolicyInfo


@dataclass(frozen=True)
class EndpointPolicy:
    """params `rollouts.openai`: the served policy."""

    base_url: str = "http://127.0.0.1:8000/v1"  # e.g. `vllm serve models/policy --port 8000`
    model: str = "models/policy"  # the model name the endpoint serves (vllm serve: the path or --served-model-name)
    api_key_env: str = "OPENAI_API_KEY"  # the variable holding the key (local servers need none); never the key
    fingerprint: str | None = None  # what identifies the served weights (e.g. a commit hash); default: url + model
    max_concurrency: int = 8  # requests in flight at once
    max_retries: int = 4  # on 429 / 5xx / timeouts / connection errors, exponential backoff
    request_timeout: float = 120.0  # seconds per attempt
    # send the samples the rollout cache lacks through the provider's batch API first (the judges' BatchConfig,
    # docs/batch.md); the answers land in a call cache beside the rollout cache, and the stage then samples from it
    batch: BatchConfig | None = None

    def client_config(self, cache_dir: str | None = None) -> BackendConfig:
        """The judges' client settings for this endpoint; `cache_dir`: the call cache (a batch backend needs one)."""
        return BackendConfig(
            kind="openai",
            model=self.model,
            base_url=self.base_url,
            api_key_env=self.api_key_env,
            max_concurrency=self.max_concurrency,
            max_retries=self.max_retries,
            request_timeout=self.request_timeout,
            batch=self.batch,
            cache_dir=cache_dir,
        )

    def policy_info(self) -> PolicyInfo:
        """The rollouts' `policy`: the served model id as name, and a fingerprint of what was asked for (a server's
        start time or load state must not change the rollouts' ids, nor, with `fingerprint` set, its address)."""
        if self.fingerprint:  # the weights are named: the same policy wherever it is served
            ident = {"backend": "openai", "model": self.model, "fingerprint": self.fingerprint}
        else:
            ident = {"backend": "openai", "base_url": self.base_url, "model": self.model}
        digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()
        return PolicyInfo(name=self.model, source=self.base_url, fingerprint=digest)
