"""transforms/sampling/gguf_once.py: one parse of a GGUF file per load, and the library's own functions back after.

That the saved model's bytes do not change is checked on the real default model in test_policy.py (its fingerprint is
the one the judges' recordings were made on)."""

from pathlib import Path

import gguf
import pytest

from rewardmill.transforms.sampling.gguf_once import parse_once
from rewardmill.transforms.sampling.policy import resolve_source


def default_gguf() -> str:
    folder, filename = resolve_source("builtin:smollm2-135m-instruct")
    return str(Path(folder) / filename)


@pytest.mark.slow  # one parse of the real file: seconds
def test_a_file_is_parsed_once_and_the_library_is_restored():
    reader_cls, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    with parse_once():
        first = gguf.GGUFReader(default_gguf())
        assert gguf.GGUFReader(default_gguf()) is first  # what transformers' second and third parse get
        assert isinstance(first, reader_cls) and len(first.tensors) > 0
        arch = next(iter(gguf.MODEL_ARCH_NAMES))
        assert gguf.get_tensor_name_map(arch, 2) is gguf.get_tensor_name_map(arch, 2)
        assert gguf.get_tensor_name_map(arch, 3) is not gguf.get_tensor_name_map(arch, 2)
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == (reader_cls, name_map)


def test_the_library_is_restored_when_the_load_fails():
    reader_cls, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    with pytest.raises(RuntimeError), parse_once():
        raise RuntimeError("the load failed")
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == (reader_cls, name_map)
