"""transforms/filters/duplicates.py: exact and MinHash near-duplicate prompts, smallest prompt_id kept."""

import itertools
import json
import math
import os
import pickle
import random
import subprocess
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest
import yaml
from datasketch import MinHash

from rewardmill.transforms.config import from_dict
from rewardmill.transforms.filters.duplicates import (
    MAX_MISS,
    MINHASH_SCHEME,
    MINHASH_SEED,
    DedupConfig,
    find_duplicates,
    lsh_bands,
    minhash_signatures,
    miss_probability,
)
from rewardmill.transforms.filters.flag import Flag
from rewardmill.transforms.filters.text import (
    SYMBOL,
    _spaced_symbol,
    ngram_hashes,
    normalized_word_lists,
    normalized_words,
    word_ngrams,
)

REPO = Path(__file__).resolve().parents[3]
EXACT_ONLY = DedupConfig(exact=True, near_threshold=None)
LONG = (
    "Ava has 12 apples in a basket on the kitchen table. She gives 3 apples to her brother and eats 2 more "
    "after lunch. Then her aunt brings a bag with 9 apples. How many apples does Ava have at the end of the day?"
)


def estimate(text_a: str, text_b: str, cfg: DedupConfig) -> float:
    """The MinHash Jaccard estimate find_duplicates compares with the threshold."""
    hashes, offsets = ngram_hashes([normalized_words(text_a), normalized_words(text_b)], cfg.shingle)
    a, b = minhash_signatures((hashes >> np.uint64(32)).astype(np.uint32), offsets, cfg.num_perm)
    return float(np.count_nonzero(a == b)) / cfg.num_perm


@pytest.mark.parametrize(
    "kwargs, message",
    [
        # a threshold of 0 would make every pair a near duplicate
        ({"near_threshold": 0.0}, "near_threshold"),
        # Jaccard never exceeds 1
        ({"near_threshold": 1.5}, "near_threshold"),
        # too few permutations for a usable estimate
        ({"num_perm": 8}, "num_perm"),
        # shingles need at least one word
        ({"shingle": 0}, "shingle"),
    ],
)
def test_config_rejects_bad_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DedupConfig(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        # the defaults
        {},
        # only identical estimates
        {"near_threshold": 1.0},
        # near pass off
        {"near_threshold": None, "num_perm": 16, "shingle": 1},
    ],
)
def test_config_accepts_valid_values_and_pickles(kwargs):
    cfg = DedupConfig(**kwargs)
    assert pickle.loads(pickle.dumps(cfg)) == cfg


def test_params_section_loads():
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    cfg = from_dict(DedupConfig, params["assemble"]["filters"]["dedup"], "assemble.filters.dedup")
    assert isinstance(cfg, DedupConfig)


@pytest.mark.parametrize(
    "text_a, text_b, duplicate",
    [
        # case and surrounding whitespace
        ("What is 3 + 4?", "  what IS 3 + 4?  ", True),
        # inner whitespace: tabs, newlines, repeated spaces
        ("What is 3 + 4?", "What\tis\n3  +   4?", True),
        # punctuation dropped, including the question mark and a trailing period
        ("What is 3 + 4?", "What is 3 + 4.", True),
        # operator spacing: "3+4" splits into the same words as "3 + 4"
        ("What is 3 + 4?", "What is 3+4?", True),
        # NFKC: full-width characters equal their ASCII forms
        ("What is 3 + 4?", "Ｗｈａｔ ｉｓ ３ ＋ ４？", True),
        # casefold: German sharp s equals "ss"
        ("Straße", "STRASSE", True),
        # math operators are not punctuation: different problems
        ("What is 5 - 3?", "What is 5 + 3?", False),
        # different numbers
        ("What is 3 + 4?", "What is 3 + 5?", False),
        # a decimal point separates digits, so 3.5 is not 35
        ("What is 3.5 doubled?", "What is 35 doubled?", False),
    ],
)
def test_exact_duplicates(text_a, text_b, duplicate):
    flags = find_duplicates([("b", text_b), ("a", text_a)], EXACT_ONLY)
    if duplicate:
        assert flags == {"b": Flag("duplicate_prompt", "same normalized text as kept prompt a")}
    else:
        assert flags == {}


def test_smallest_id_of_each_group_is_kept():
    prompts = [("p3", "Hello there"), ("p1", "hello, there!"), ("p2", "HELLO THERE"), ("q9", "Other"), ("q1", "other")]
    flags = find_duplicates(prompts, EXACT_ONLY)
    assert {pid: flag.detail.split()[-1] for pid, flag in flags.items()} == {"p2": "p1", "p3": "p1", "q9": "q1"}


@pytest.mark.parametrize(
    "prompts, expected",
    [
        # the same prompt_id twice with the same text is one prompt, not a duplicate of itself
        ([("a", "Hi there"), ("a", "Hi there")], {}),
        # ... and still loses to a smaller id with the same text
        ([("b", "Hi there"), ("b", "Hi there"), ("a", "hi there")], {"b"}),
        # no prompts
        ([], {}),
    ],
)
def test_repeated_prompt_ids(prompts, expected):
    assert set(find_duplicates(prompts, DedupConfig())) == set(expected)


def test_one_prompt_id_with_two_texts_is_an_error():
    with pytest.raises(ValueError, match="'a' appears with two different texts"):
        find_duplicates([("a", "one text"), ("a", "another text")], DedupConfig())


@pytest.mark.parametrize(
    "text_b, flagged",
    [
        # one number changed in a 40-word prompt: most shingles shared
        (LONG.replace("9 apples", "8 apples"), True),
        # one word appended
        (LONG + " Explain.", True),
        # the same numbers in a different story
        (
            "Ben buys 12 pencils, loses 3 and finds 2 in his bag; his aunt brings 9 more. How many are there now?",
            False,
        ),
        # an unrelated prompt
        ("Write a Python function that reverses a string.", False),
    ],
)
def test_near_duplicates_at_default_threshold(text_b, flagged):
    cfg = DedupConfig()
    flags = find_duplicates([("a", LONG), ("b", text_b)], cfg)
    if flagged:
        value = estimate(LONG, text_b, cfg)
        assert value >= cfg.near_threshold
        assert flags == {
            "b": Flag(
                "near_duplicate_prompt",
                f"MinHash Jaccard estimate {round(value, 3)} >= {cfg.near_threshold} with kept prompt a",
            )
        }
    else:
        assert flags == {}


@pytest.mark.parametrize(
    "offset, flagged",
    [
        # threshold equal to the pair's estimate: at/above counts
        (0, True),
        # threshold one permutation above the estimate
        (1, False),
        # threshold a few permutations below
        (-3, True),
    ],
)
def test_near_threshold_boundary(offset, flagged):
    text_b = LONG.replace("9 apples", "7 apples").replace("2 more", "4 more")
    value = estimate(LONG, text_b, DedupConfig())
    assert 0.5 < value < 1
    cfg = DedupConfig(near_threshold=value + offset / 128)
    assert ("b" in find_duplicates([("a", LONG), ("b", text_b)], cfg)) is flagged


def test_chain_keeps_both_ends():
    # a~b and b~c but not a~c: b goes (near the kept a), c stays (only near the dropped b)
    words = [f"w{i}" for i in range(52)]
    a, b, c = " ".join(words[0:40]), " ".join(words[6:46]), " ".join(words[12:52])  # Jaccard 0.74, 0.74, 0.54
    cfg = DedupConfig(near_threshold=0.65, shingle=1)
    assert estimate(a, b, cfg) >= 0.65 and estimate(b, c, cfg) >= 0.65 and estimate(a, c, cfg) < 0.65
    assert set(find_duplicates([("a", a), ("b", b), ("c", c)], cfg)) == {"b"}


@pytest.mark.parametrize(
    "cfg, expected",
    [
        # both passes: exact copy found first
        (DedupConfig(), {"b": "duplicate_prompt"}),
        # exact pass off: the near pass finds the copy (estimate 1.0)
        (DedupConfig(exact=False), {"b": "near_duplicate_prompt"}),
        # near pass off: the one-word variant stays
        (DedupConfig(near_threshold=None), {"b": "duplicate_prompt"}),
        # both off
        (DedupConfig(exact=False, near_threshold=None), {}),
    ],
)
def test_passes_switch_off(cfg, expected):
    prompts = [("a", LONG), ("b", LONG.upper()), ("c", LONG + " Explain.")]
    flags = find_duplicates(prompts, cfg)
    if cfg.near_threshold is not None:
        expected = {**expected, "c": "near_duplicate_prompt"}
    assert {pid: flag.reason for pid, flag in flags.items()} == expected


def test_prompts_without_words_are_never_near_duplicates():
    # punctuation only: no words, no shingles (exact pass off, or both would be equal empty texts)
    assert find_duplicates([("a", "?!"), ("b", "..."), ("c", "")], DedupConfig(exact=False)) == {}


def corpus(seed: int) -> list[tuple[str, str]]:
    """300 random prompts plus exact copies and one-word edits of some of them."""
    rng = random.Random(seed)
    vocab = [f"word{i}" for i in range(400)]
    prompts = [(f"p{i:03d}", " ".join(rng.choices(vocab, k=rng.randint(3, 40)))) for i in range(300)]
    copies = [(f"x{i:03d}", text.upper()) for i, (_, text) in enumerate(prompts[:20])]
    edits = [(f"y{i:03d}", text + " extra") for i, (_, text) in enumerate(prompts[20:60])]
    return prompts + copies + edits


def test_result_does_not_depend_on_input_order():
    prompts = corpus(0)
    flags = find_duplicates(prompts, DedupConfig())
    assert {f.reason for f in flags.values()} == {"duplicate_prompt", "near_duplicate_prompt"}
    for seed in range(3):
        shuffled = random.Random(seed).sample(prompts, len(prompts))
        assert find_duplicates(shuffled, DedupConfig()) == flags


def test_same_result_in_another_process():
    # a fresh interpreter with another str-hash salt: nothing may depend on Python's hash()
    code = (
        "import json, sys; from rewardmill.transforms.filters.duplicates import DedupConfig, find_duplicates; "
        "flags = find_duplicates(json.load(sys.stdin), DedupConfig()); "
        "print(json.dumps({k: [f.reason, f.detail] for k, f in sorted(flags.items())}))"
    )
    prompts = corpus(1)
    runs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", code],
            input=json.dumps(prompts),
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        runs.append(json.loads(out.stdout))
    here = {k: [f.reason, f.detail] for k, f in sorted(find_duplicates(prompts, DedupConfig()).items())}
    assert runs[0] == runs[1] == here != {}


@pytest.mark.parametrize(
    "words, n",
    [
        # ordinary windows
        (["a", "b", "c", "d", "e"], 3),
        # shorter than n: one gram of all words
        (["a", "b"], 3),
        # a repeated gram hashes the same both times
        (["a", "b", "a", "b", "a"], 2),
        # unigrams
        (["x", "y", "x"], 1),
    ],
)
def test_ngram_hashes_follow_word_ngrams(words, n):
    texts = [words, [], ["a", "b", "c"], words[::-1]]
    hashes, offsets = ngram_hashes(texts, n)
    by_gram: dict[str, int] = {}
    for i, text in enumerate(texts):
        grams = word_ngrams(text, n)
        assert offsets[i + 1] - offsets[i] == len(grams)
        for gram, value in zip(grams, hashes[offsets[i] : offsets[i + 1]].tolist(), strict=True):
            assert by_gram.setdefault(gram, value) == value
    assert len(set(by_gram.values())) == len(by_gram)  # different grams, different hashes


def test_signatures_equal_datasketch_minhash():
    rng = random.Random(0)
    texts = [[f"s{rng.randint(0, 50)}" for _ in range(rng.randint(1, 30))] for _ in range(200)]
    hashes, offsets = ngram_hashes(texts, 2)
    hashes32 = (hashes >> np.uint64(32)).astype(np.uint32)
    signatures = minhash_signatures(hashes32, offsets, 64)
    for i, row in enumerate(signatures):
        minhash = MinHash(num_perm=64, seed=MINHASH_SEED, scheme=MINHASH_SCHEME, hashfunc=int)
        minhash.update_batch(hashes32[offsets[i] : offsets[i + 1]].tolist())
        assert np.array_equal(minhash.hashvalues, row)


@pytest.mark.parametrize(
    "num_perm, bands, width, differing",
    [
        # two bands of four, two differing values
        (8, 2, 4, 2),
        # leftover values outside every band (3 * 3 < 10)
        (10, 3, 3, 3),
        # one value per band: misses only when every value differs
        (6, 6, 1, 5),
        # nothing differs: never missed
        (9, 3, 3, 0),
    ],
)
def test_miss_probability_matches_enumeration(num_perm, bands, width, differing):
    placements = list(itertools.combinations(range(num_perm), differing))
    missed = sum(
        all(any(b * width <= p < (b + 1) * width for p in spots) for b in range(bands)) for spots in placements
    )
    assert math.isclose(miss_probability(num_perm, bands, width, differing), missed / len(placements), abs_tol=1e-12)


@pytest.mark.parametrize(
    "threshold, num_perm",
    [
        # the defaults
        (0.85, 128),
        # a low threshold needs narrow bands
        (0.5, 64),
        # identical signatures only: one band of everything
        (1.0, 128),
        # few permutations
        (0.9, 16),
    ],
)
def test_lsh_bands_are_the_widest_within_the_miss_bound(threshold, num_perm):
    differing = sum(1 for d in range(num_perm + 1) if (num_perm - d) / num_perm >= threshold) - 1
    bands, width = lsh_bands(threshold, num_perm)
    assert bands * width <= num_perm
    assert miss_probability(num_perm, bands, width, differing) <= MAX_MISS
    if width < num_perm:
        wider = width + 1
        assert miss_probability(num_perm, num_perm // wider, wider, differing) > MAX_MISS


def test_word_lists_equal_normalized_words():
    """The batch (Arrow) normalization gives normalized_words' words for any text: ASCII fast path, control
    characters, blank and non-ASCII texts included."""
    rng = random.Random(7)
    alphabet = [chr(c) for c in range(128)] + list("éÉßﬁ１２＋−…“”\u00a0\u2003\u200b")
    texts = ["", "   ", "\x1c\x1f", " What is 3 + 4? ", "Ｗｈａｔ  ＩＳ  ３＋４？", "a\tb\x0bc\x0cd"]
    texts += ["".join(rng.choices(alphabet, k=rng.randrange(0, 30))) for _ in range(3000)]
    slow = [SYMBOL.sub(_spaced_symbol, unicodedata.normalize("NFKC", t).casefold()).split() for t in texts]
    assert [normalized_words(t) for t in texts] == slow
    assert normalized_word_lists(texts).to_pylist() == slow
