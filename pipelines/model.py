"""Stage `model`: materialize the policy as a plain HF safetensors folder + fingerprint (models/policy/)."""

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

import apache_beam as beam

from rewardmill.transforms.config import ConfigError, load_section, params_path
from rewardmill.transforms.io import timings
from rewardmill.transforms.sampling.materialize import materialize
from rewardmill.transforms.sampling.policy import FINGERPRINT_FILE, is_hub_id, resolve_source
from rewardmill.transforms.stage.conservation import ConservationError
from rewardmill.transforms.stage.outputs import atomic_output
from rewardmill.transforms.stage.runner import StageTimer, load_beam_config, run_pipeline, setup_logging

OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")  # either stops transformers from downloading


@dataclass(frozen=True)
class ModelConfig:
    """params `model`."""

    source: str = "builtin:smollm2-135m-instruct"  # builtin:<key>, a .gguf file, an HF folder, or a hub id
    name: str = "SmolLM2-135M-Instruct"  # recorded in every rollout's `policy.name`
    dtype: str = "float32"  # float32 keeps CPU sampling deterministic; bfloat16 halves memory on GPU


def check_source(cfg: ModelConfig) -> None:
    """params `model.source` names something the stage can load (a known builtin, an existing GGUF file or HF folder,
    or a hub id it may download or has cached): a ConfigError naming the key otherwise, before Beam runs. A path
    such as `models/my-model` that is not on disk reads as a hub id (org/name), so offline it must be in the cache."""
    where = f"{params_path()}: 'model.source'"
    try:
        resolve_source(cfg.source)
    except (FileNotFoundError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc} (a builtin:<key>, a .gguf file, an HF model folder or a hub id)") from exc
    if is_hub_id(cfg.source) and offline() and not hub_cached(cfg.source):
        raise ConfigError(
            f"{where}: {cfg.source}: no such local folder, and as a hub id it is not in the Hugging Face cache while "
            "offline mode (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE) forbids downloading it; point model.source at the "
            "model's folder, or download it once with network"
        )


def offline() -> bool:
    return any(os.environ.get(v, "").lower() in ("1", "true", "yes", "on") for v in OFFLINE_VARIABLES)


def hub_cached(repo_id: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    try:
        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except ValueError:  # not a valid repo id
        return False


class _Materialize(beam.DoFn):
    def __init__(self, cfg: ModelConfig, out_dir: str):
        self.cfg = cfg
        self.out_dir = out_dir

    def process(self, source: str):
        with timings.timed("model_load"):
            info = materialize(source, self.out_dir, self.cfg.name, self.cfg.dtype)
        yield info.fingerprint


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="models/policy", help="where the safetensors folder and its fingerprint go")
    args = parser.parse_args(argv)
    setup_logging()
    cfg = load_section(ModelConfig, "model")
    check_source(cfg)
    timer = StageTimer("model")
    with atomic_output(args.out) as folder:  # a local folder: transformers loads the weights from disk
        tmp = Path(folder)
        run_pipeline(
            lambda p: (
                p | "Source" >> beam.Create([cfg.source]) | "Materialize" >> beam.ParDo(_Materialize(cfg, str(tmp)))
            ),
            load_beam_config(),
        )
        # the folder must be where the driver (and DVC) sees it: on a cluster, out must be on storage every worker
        # shares
        if not (tmp / FINGERPRINT_FILE).exists():
            raise ConservationError(
                f"model: the runner wrote no model to {tmp}; on a cluster runner, --out must be on a mount the "
                "workers share with this machine"
            )
    timer.done({"rows": 1})


if __name__ == "__main__":
    main()
