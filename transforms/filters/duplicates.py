"""Find duplicate and near-duplicate prompts, so no dataset trains (or tests) on the same prompt twice.

In: (prompt_id, text) pairs.  Out: {prompt_id: Flag} for every prompt to drop; the prompt kept from each group
is the one with the smallest prompt_id, so the result does not depend on input order, runs or processes.

Near duplicates: MinHash signatures over word shingles (datasketch's affine32 permutations, fixed seed) and LSH
banding, both computed for all prompts at once in numpy. Building one datasketch MinHash per prompt and querying
a MinHashLSH cost Python work per shingle and per band: 100k short prompts took ~40 s that way, 4-6 s here
(2-core shared VM; prompts of 8-25 words). A test checks the signatures equal datasketch's MinHash value for value.
"""

import math
import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datasketch import MinHash

from rewardmill.transforms.filters.flag import Flag
from rewardmill.transforms.filters.text import NGRAM_MULTIPLIER, fmix64, ngram_hashes, normalized_word_lists

# Fixed MinHash permutations and scheme: the same prompts give the same signatures in every run and process
# (shingles are hashed from SHA1 word hashes, never with Python's per-process salted hash()).
MINHASH_SEED = 1
MINHASH_SCHEME = "affine32"
# Highest chance that banding misses a pair whose estimate is at the threshold (less above it): see lsh_bands.
MAX_MISS = 0.01


@dataclass(frozen=True)
class DedupConfig:
    """params assemble.filters.dedup."""

    exact: bool = True  # normalized-text duplicates (case, whitespace, punctuation folded)
    near_threshold: float | None = 0.85  # MinHash Jaccard estimate at/above which prompts are near duplicates
    num_perm: int = 128  # MinHash permutations: more = a finer estimate, slower
    shingle: int = 3  # word n-gram size of the shingles (shorter texts: one shingle of all their words)

    def __post_init__(self):
        if self.near_threshold is not None and not 0 < self.near_threshold <= 1:
            raise ValueError(f"near_threshold must be in (0, 1] or null (off), got {self.near_threshold}")
        if self.num_perm < 16:
            raise ValueError(f"num_perm must be >= 16 (fewer estimate Jaccard too coarsely), got {self.num_perm}")
        if self.shingle < 1:
            raise ValueError(f"shingle must be >= 1 word, got {self.shingle}")


def find_duplicates(prompts: Iterable[tuple[str, str]], cfg: DedupConfig) -> dict[str, Flag]:
    """(prompt_id, text) pairs -> {prompt_id: Flag} for every prompt to drop.

    Exact duplicates (same normalized text) are flagged `duplicate_prompt` first; the near pass then compares
    only the prompts left, flagging `near_duplicate_prompt`. The same prompt_id given twice is one prompt.
    """
    texts = _unique_texts(prompts)
    ids = sorted(texts)
    words = normalized_word_lists([texts[pid] for pid in ids])
    flags = exact_duplicates(ids, words) if cfg.exact else {}
    if cfg.near_threshold is not None:
        left = [i for i, pid in enumerate(ids) if pid not in flags]
        remaining = words.take(pa.array(left, pa.int64())) if len(left) < len(ids) else words
        flags.update(near_duplicates([ids[i] for i in left], remaining, cfg.near_threshold, cfg.num_perm, cfg.shingle))
    return flags


def exact_duplicates(ids: list[str], words: pa.ListArray) -> dict[str, Flag]:
    """Sorted prompt ids and their normalized words -> Flags for all but the first (smallest) id of each group with
    equal words (words hold no space, so equal joined texts mean equal words)."""
    kept: dict[str, str] = {}  # normalized text -> smallest prompt_id with it
    flags = {}
    for pid, text in zip(ids, pc.binary_join(words, " ").to_pylist(), strict=True):
        first = kept.setdefault(text, pid)
        if first != pid:
            flags[pid] = Flag("duplicate_prompt", f"same normalized text as kept prompt {first}")
    return flags


def near_duplicates(
    ids: list[str], words: pa.ListArray, threshold: float, num_perm: int, shingle: int
) -> dict[str, Flag]:
    """Sorted prompt ids and their normalized words -> Flags for prompts whose Jaccard estimate with a kept prompt
    is >= threshold.

    Prompts are visited in prompt_id order; each is kept unless it is near a prompt kept before it, so a chain
    (a~b, b~c, a!~c) keeps a and c. Only prompts sharing an LSH bucket are compared, which misses a pair right at
    the threshold at most MAX_MISS of the time (see lsh_bands). Prompts without words are never near duplicates.
    """
    with_words = np.flatnonzero(pc.list_value_length(words).to_numpy(zero_copy_only=False) > 0)
    if not len(with_words):
        return {}
    ids = [ids[i] for i in with_words.tolist()]
    words = words.take(pa.array(with_words)) if len(with_words) < len(words) else words
    hashes, offsets = ngram_hashes(words, shingle)
    # (num_perm, prompts): a band is a block of rows, contiguous; a prompt's signature is a column
    by_permutation = minhash_signatures((hashes >> np.uint64(32)).astype(np.uint32), offsets, num_perm).T
    bands, width = lsh_bands(threshold, num_perm)
    # bucket label of every prompt in every band; a prompt alone in all its buckets can neither be nor have a
    # near duplicate, so only prompts sharing a bucket go through the (Python) greedy loop below
    labels = np.empty((bands, len(ids)), dtype=np.int64)
    shared = np.zeros(len(ids), dtype=bool)
    for band in range(bands):
        _, inverse, counts = np.unique(
            _band_hash(by_permutation[band * width : (band + 1) * width]), return_inverse=True, return_counts=True
        )
        labels[band] = inverse
        shared |= counts[inverse] > 1
    # only the prompts that share a bucket leave numpy (most prompts do not): `shared` lists them in prompt_id order
    shared = np.flatnonzero(shared)
    signatures = np.ascontiguousarray(by_permutation[:, shared].T)
    buckets: list[dict[int, list[int]]] = [{} for _ in range(bands)]  # label -> kept indices into `shared`, in order
    flags = {}
    for index, (row, row_labels) in enumerate(zip(shared.tolist(), labels[:, shared].T.tolist(), strict=True)):
        candidates: set[int] = set()
        for bucket, label in zip(buckets, row_labels, strict=True):
            candidates.update(bucket.get(label, ()))
        if candidates:
            kept = sorted(candidates)  # indices follow prompt_id order, so argmax's first maximum is the smallest id
            # equal values / num_perm: the same float as MinHash.jaccard, for all candidates in one numpy call
            equal = (signatures.take(kept, axis=0) == signatures[index]).sum(axis=1)
            best = int(equal.argmax())
            estimate = float(equal[best]) / float(num_perm)
            if estimate >= threshold:
                detail = f"MinHash Jaccard estimate {round(estimate, 3)} >= {threshold} with kept prompt"
                flags[ids[row]] = Flag("near_duplicate_prompt", f"{detail} {ids[shared[kept[best]]]}")
                continue
        for bucket, label in zip(buckets, row_labels, strict=True):
            bucket.setdefault(label, []).append(index)
    return flags


def minhash_signatures(hashes: np.ndarray, offsets: np.ndarray, num_perm: int) -> np.ndarray:
    """32-bit shingle hashes and per-text offsets (each text >= 1 shingle) -> a (texts, num_perm) MinHash array.

    Row i equals MinHash(num_perm, seed=MINHASH_SEED, scheme=MINHASH_SCHEME, hashfunc=int) updated with text i's
    shingle hashes: the MurmurHash3 finalizer, then the affine permutations a * h + b mod 2^32, then the minimum.
    """
    a, b = MinHash(num_perm=num_perm, seed=MINHASH_SEED, scheme=MINHASH_SCHEME).permutations
    mixed = _fmix32(hashes)
    by_permutation = np.empty((num_perm, len(offsets) - 1), dtype=np.uint32)

    def permute(ks: range) -> None:  # one permutation of all shingles at a time: contiguous and cache-friendly
        permuted = np.empty_like(mixed)  # one buffer per thread: fresh temporaries per permutation cost page faults
        for k in ks:
            np.multiply(mixed, a[k], out=permuted)  # uint32 wraps: mod 2^32
            np.add(permuted, b[k], out=permuted)
            np.minimum.reduceat(permuted, offsets[:-1], out=by_permutation[k])

    # numpy releases the GIL in these loops: the permutations split over threads use every core
    threads = max(1, min(os.cpu_count() or 1, num_perm // 16))  # sched_getaffinity does not exist on macOS
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(permute, [range(t, num_perm, threads) for t in range(threads)]))
    return by_permutation.T  # a view: near_duplicates reads it by permutation


def lsh_bands(threshold: float, num_perm: int) -> tuple[int, int]:
    """-> (bands, values per band): the widest bands that miss a pair at the threshold at most MAX_MISS of the time.

    Two prompts become candidates when all values of at least one band are equal. Wide bands make chance
    candidates rare (templated prompts share half their shingles and would otherwise all be compared with each
    other); narrow bands miss fewer true pairs. One band per value would miss none.
    """
    differing = max(d for d in range(num_perm + 1) if float(num_perm - d) / float(num_perm) >= threshold)
    for width in range(num_perm, 0, -1):
        bands = num_perm // width
        if miss_probability(num_perm, bands, width, differing) <= MAX_MISS:
            return bands, width
    raise AssertionError("unreachable: one value per band never misses a pair with fewer differing values")


def miss_probability(num_perm: int, bands: int, width: int, differing: int) -> float:
    """Chance that `differing` of num_perm values, at random positions, leave no band of `width` values all equal.

    Inclusion-exclusion over the bands that stay all equal; the permutations make every position equally likely.
    """
    if differing >= num_perm:
        return 1.0
    some_band_equal = sum(
        (-1) ** (k + 1) * math.comb(bands, k) * math.comb(num_perm - k * width, differing) for k in range(1, bands + 1)
    )
    return 1.0 - some_band_equal / math.comb(num_perm, differing)


def _band_hash(values: np.ndarray) -> np.ndarray:
    """(width, prompts) uint32 -> one uint64 per prompt; a rare collision only adds a candidate that the estimate
    rejects."""
    combined = np.zeros(values.shape[1], dtype=np.uint64)
    for row in values:
        combined = combined * NGRAM_MULTIPLIER + row
    return fmix64(combined)


def _fmix32(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finalizer, as datasketch's affine32 scheme applies it before permuting."""
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def _unique_texts(prompts: Iterable[tuple[str, str]]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for pid, text in prompts:
        seen = texts.setdefault(pid, text)
        if seen != text:
            raise ValueError(
                f"prompt_id {pid!r} appears with two different texts; a prompt_id must identify one prompt "
                "(the prompts stage derives it from the messages)"
            )
    return texts
