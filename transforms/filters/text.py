"""Text normalization and word n-grams shared by the prompt filters, so "the same prompt" means one thing.

Two prompts that differ only in case, spacing, Unicode width or punctuation normalize to the same words. Math
operators are the exception: "What is 5 - 3?" and "What is 5 + 3?" are different problems, so `+ - * / % =`
and the other symbols stay, each as a word of its own.
"""

import functools
import re
import unicodedata

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datasketch.hashfunc import sha1_hash64

SYMBOL = re.compile(r"[^\w\s]")  # one character that is neither part of a word nor space
# Characters in Unicode's punctuation categories that are math operators in prompts; other punctuation is dropped.
KEPT_PUNCTUATION = frozenset("-*/%")
NGRAM_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit constant (2^64 / golden ratio) of the gram polynomial


def normalized_words(text: str) -> list[str]:
    """Text -> its words after NFKC, casefolding and dropping punctuation ("Add 3+4!" -> ["add", "3", "+", "4"])."""
    if text.isascii():  # the same words, 4x faster: ASCII is NFKC-stable and casefolds as lower()
        return text.lower().translate(ASCII_SYMBOLS).split()
    return SYMBOL.sub(_spaced_symbol, unicodedata.normalize("NFKC", text).casefold()).split()


def normalized_text(text: str) -> str:
    """Text -> its normalized words joined by single spaces; equal results mean duplicate prompts."""
    return " ".join(normalized_words(text))


def word_ngrams(words: list[str], n: int) -> list[str]:
    """Words -> their contiguous n-grams, each joined by spaces, in order.

    Fewer than `n` words give one gram of all of them, so a short text is still compared as a whole;
    no words give no grams.
    """
    if n < 1:
        raise ValueError(f"n-gram size must be >= 1, got {n}")
    if not words:
        return []
    if len(words) < n:
        return [" ".join(words)]
    return [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)]


def normalized_word_lists(texts: list[str]) -> pa.ListArray:
    """Texts -> their `normalized_words`, as one Arrow list array (no Python list per text: splitting 100k texts
    into Python lists cost more than hashing their grams)."""
    prepared = [
        text.lower().translate(ASCII_SPACED) if text.isascii() else " ".join(normalized_words(text)) for text in texts
    ]
    split = pc.ascii_split_whitespace(pc.ascii_trim_whitespace(pa.array(prepared, pa.string())))
    words = split.flatten()
    nonempty = pc.not_equal(words, "")  # a blank text splits into [""]: it has no words
    parents = pc.list_parent_indices(split).filter(nonempty).to_numpy()
    offsets = np.concatenate([[0], np.cumsum(np.bincount(parents, minlength=len(texts)))]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), words.filter(nonempty))


def ngram_hashes(words_list: pa.ListArray | list[list[str]], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Each text's words -> (uint64 hash of each of its `word_ngrams(words, n)`, all texts concatenated; offsets).

    Text i's hashes are hashes[offsets[i]:offsets[i + 1]]; equal grams get equal hashes in every process. Each
    distinct word is hashed once (SHA1-64); a gram's hash is a polynomial of its words' hashes mod 2^64, mixed,
    all in numpy: hashing every gram's text in Python was the slowest step of both prompt filters.
    """
    if n < 1:
        raise ValueError(f"n-gram size must be >= 1, got {n}")
    if not isinstance(words_list, pa.ListArray):
        words_list = pa.array(words_list, pa.list_(pa.string()))
    lengths = pc.list_value_length(words_list).to_numpy(zero_copy_only=False).astype(np.int64)
    total = int(lengths.sum())
    encoded = pc.dictionary_encode(words_list.flatten())
    word_index = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    vocab = encoded.dictionary.to_pylist()
    word_hashes = np.fromiter((sha1_hash64(w.encode()) for w in vocab), np.uint64, len(vocab))[word_index]
    text_of_word = np.repeat(np.arange(len(lengths)), lengths)
    position = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    terms = np.minimum(lengths, n)[text_of_word]  # words in the gram that starts at each word
    padded = np.concatenate([word_hashes, np.zeros(n - 1, np.uint64)])
    combined = np.zeros(total, dtype=np.uint64)
    for j in range(n):  # combined = h0 * M^(k-1) + h1 * M^(k-2) + ... + h(k-1), wrapping mod 2^64
        combined = np.where(j < terms, combined * NGRAM_MULTIPLIER + padded[j : j + total], combined)
    starts_gram = position <= np.maximum(lengths - n, 0)[text_of_word]
    counts = np.where(lengths > 0, np.maximum(lengths - n + 1, 1), 0)
    return fmix64(combined[starts_gram]), np.concatenate([[0], np.cumsum(counts)])


def fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer: every input bit affects every output bit, so any 32 of them are usable."""
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))


def _spaced_symbol(match: re.Match) -> str:
    return _symbol_replacement(match.group())


@functools.cache  # symbols are few; the Unicode category lookup runs once per distinct character
def _symbol_replacement(char: str) -> str:
    """Punctuation -> a space (a word break); any other symbol -> itself as a separate word."""
    if char not in KEPT_PUNCTUATION and unicodedata.category(char).startswith("P"):
        return " "
    return f" {char} "


# str.translate table doing SYMBOL.sub(_spaced_symbol, ...) for ASCII text: built from the same rule, char by char.
ASCII_SYMBOLS = {code: _symbol_replacement(chr(code)) for code in range(128) if SYMBOL.fullmatch(chr(code))}
# The same, with every whitespace character (str.split's, e.g. \x1c) as a plain space: then Arrow's ASCII whitespace
# split (a subset of str.split's) gives str.split's words.
ASCII_SPACED = {**ASCII_SYMBOLS, **{code: " " for code in range(128) if chr(code).isspace()}}
