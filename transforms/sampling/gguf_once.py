"""Read a GGUF file once while transformers loads a model from it.

transformers parses the file three times to load one model from it (the tokenizer, the config, then the weights), and
builds gguf's tensor-name map once per module of the model. For SmolLM2-135M that is 3 parses of a 49k-token
vocabulary (about 5 s each on 2 cores) and 397 name maps (7 s), about half the model stage. Both are pure functions of
their arguments and only read: inside `parse_once()` each (path, mode) is parsed once and each (architecture, block
count) mapped once, and the library's own functions are back in place on exit. The saved model's bytes are the same
(tests/transforms/sampling/test_gguf_once.py). With a gguf that lacks either name, nothing is patched and the load
takes its usual time.
"""

import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def parse_once() -> Iterator[None]:
    import gguf

    reader_cls = getattr(gguf, "GGUFReader", None)
    name_map = getattr(gguf, "get_tensor_name_map", None)
    if reader_cls is None or name_map is None:  # another gguf layout: load as the library does
        yield
        return
    readers: dict[tuple[str, str], object] = {}

    def reader(path, mode="r"):
        key = (os.fspath(path), mode)
        if key not in readers:
            readers[key] = reader_cls(path, mode)
        return readers[key]

    gguf.GGUFReader, gguf.get_tensor_name_map = reader, functools.cache(name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader_cls, name_map
        readers.clear()
