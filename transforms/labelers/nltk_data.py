"""NLTK's punkt_tab, offline: the copy that llama-index-core's wheel ships (NLTK's own files).

IFEval's sentence count and capital-word count tokenize with punkt_tab, which no package on our registries ships
except llama-index-core (`llama_index/core/_static/nltk_cache/`). `make install` installs that wheel with --no-deps;
here its folder is added to NLTK's search path. Nothing is downloaded, and llama_index itself is never imported:
`llama_index` is a namespace package, so finding it runs none of its code (its dependencies are not installed).
"""

import importlib.util
from pathlib import Path

PUNKT_TAB = "tokenizers/punkt_tab/english/"
_CACHE = ("core", "_static", "nltk_cache")


def bundled_nltk_data() -> str | None:
    """The NLTK data folder inside the installed llama-index-core, or None when it is not installed."""
    try:
        spec = importlib.util.find_spec("llama_index")
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        folder = Path(location, *_CACHE)
        if (folder / PUNKT_TAB).is_dir():
            return str(folder)
    return None


def use_bundled_nltk_data() -> str | None:
    """Add the bundled folder to `nltk.data.path` (once; after the user's own folders) and return it."""
    folder = bundled_nltk_data()
    if folder is not None:
        import nltk

        if folder not in nltk.data.path:
            nltk.data.path.append(folder)
    return folder
