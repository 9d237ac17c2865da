"""The model stage's work: load a policy source with transformers and save it as a plain HF safetensors folder with
its fingerprint (policy.py names the sources and computes the fingerprint).

Its own module, apart from policy.py which every model-calling stage imports: what only the model stage runs (the GGUF
read, gguf_once.py) is then a dependency of that stage alone in dvc.yaml.
"""

import contextlib
import json
import logging
from pathlib import Path

from rewardmill.transforms.sampling.gguf_once import parse_once
from rewardmill.transforms.sampling.policy import FINGERPRINT_FILE, PolicyInfo, fingerprint, resolve_source

log = logging.getLogger("rewardmill")


def materialize(source: str, out_dir: str | Path, name: str, dtype: str = "float32") -> PolicyInfo:
    """Load `source` with transformers and save it as safetensors + tokenizer into `out_dir`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    location, gguf_file = resolve_source(source)
    kwargs = {"gguf_file": gguf_file} if gguf_file else {}
    log.info("model: loading %s%s", location, f" ({gguf_file})" if gguf_file else "")
    with parse_once() if gguf_file else contextlib.nullcontext():  # one parse of the file, not one per part
        tokenizer = AutoTokenizer.from_pretrained(location, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(location, dtype=getattr(torch, dtype), **kwargs)
    if gguf_file:
        # transformers refuses to save a model loaded from GGUF even though its weights are now dequantized
        # tensors; rebuild a plain model from the same config and copy the weights over.
        config = model.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        plain = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
        plain.load_state_dict(model.state_dict(), strict=True)
        model = plain
    if tokenizer.chat_template is None:
        raise ValueError(f"{source}: tokenizer has no chat template; rollouts need one to format prompts")
    out_dir = Path(out_dir)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    drop_load_options(out_dir / "tokenizer_config.json")
    info = PolicyInfo(name=name, source=source, fingerprint=fingerprint(out_dir))
    (out_dir / FINGERPRINT_FILE).write_text(json.dumps(info.__dict__, indent=2, sort_keys=True) + "\n")
    return info


# Loading options transformers writes into the saved tokenizer config: they describe how it was loaded (e.g. whether
# HF_HUB_OFFLINE was set), not the tokenizer, and would make the fingerprint depend on the environment.
LOAD_OPTIONS = ("local_files_only",)


def drop_load_options(path: Path) -> None:
    if not path.exists():
        return
    config = json.loads(path.read_text(encoding="utf-8"))
    if any(key in config for key in LOAD_OPTIONS):
        kept = {k: v for k, v in config.items() if k not in LOAD_OPTIONS}
        path.write_text(json.dumps(kept, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
