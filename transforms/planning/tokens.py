"""Prompt tokens as the model sees them: the chat template with the generation prompt, then the tokenizer, the way
the transformers judge client and the policy backends count them. A model without a local folder (an endpoint's
served name) is counted with a fallback folder's tokenizer: an estimate, which the plan notes."""

from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=8)
def _tokenizer(folder: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)


class TokenCounter:
    """Counts chat prompts' tokens; `estimated` names the models counted with the fallback tokenizer."""

    def __init__(self, fallback_folder: str | None):
        self.fallback = fallback_folder
        self.estimated: set[str] = set()

    def folder_for(self, model: str) -> str | None:
        if Path(model).is_dir():
            return model
        self.estimated.add(model)
        return self.fallback if self.fallback and Path(self.fallback).is_dir() else None

    def chat(self, model: str, messages, prefix: str = "") -> int:
        """Tokens of `messages` as a chat prompt (plus an assistant prefix already begun, for continuations)."""
        folder = self.folder_for(model)
        if folder is None:  # no tokenizer at all: about four characters a token
            return sum(len(m.get("content") or "") for m in messages) // 4 + len(prefix) // 4 + 1
        tok = _tokenizer(folder)
        text = tok.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False) + prefix
        return len(tok(text, add_special_tokens=False)["input_ids"])
