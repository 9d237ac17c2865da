"""A seeded generator of arithmetic word problems with exact integer answers, at several difficulty levels.

Levels span what a 135M model gets right sometimes (1-digit sums) to what it rarely does (multi-step word
problems), so on-policy samples of the default model contain both correct and incorrect answers.
"""

import random
from typing import Any

NAMES = ("Ava", "Ben", "Chen", "Dana", "Eli", "Fatima", "Gus", "Hana", "Ivan", "Jo")
ITEMS = ("apples", "books", "coins", "pencils", "stickers", "marbles", "cards", "shells")
INSTRUCTION = "Put the final answer in \\boxed{}."


LEVEL1_FORMS = ("What is {a} + {b}?", "Compute {a} + {b}.", "What is {a} plus {b}?", "Add {a} and {b}.")


def _level1(rng: random.Random) -> tuple[str, int]:
    a, b = rng.randint(1, 9), rng.randint(1, 9)
    return rng.choice(LEVEL1_FORMS).format(a=a, b=b), a + b


def _level2(rng: random.Random) -> tuple[str, int]:
    a, b = rng.randint(10, 99), rng.randint(10, 99)
    if rng.random() < 0.5:
        return f"What is {a} + {b}?", a + b
    a, b = max(a, b), min(a, b)
    return f"What is {a} - {b}?", a - b


def _level3(rng: random.Random) -> tuple[str, int]:
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    have, buy, give = rng.randint(5, 30), rng.randint(2, 20), rng.randint(1, 5)
    text = (
        f"{name} has {have} {item}. {name} gets {buy} more and then gives away {give}. "
        f"How many {item} does {name} have now?"
    )
    return text, have + buy - give


def _level4(rng: random.Random) -> tuple[str, int]:
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    boxes, per, extra = rng.randint(3, 12), rng.randint(3, 12), rng.randint(1, 9)
    text = (
        f"{name} has {boxes} boxes with {per} {item} in each box, plus {extra} loose {item}. "
        f"How many {item} is that in total?"
    )
    return text, boxes * per + extra


LEVELS = {1: _level1, 2: _level2, 3: _level3, 4: _level4}


def generate(count: int, seed: int, levels: tuple[int, ...] = (1, 2, 3, 4)) -> list[dict[str, Any]]:
    """`count` problems cycling through `levels`; the same (count, seed, levels) gives the same problems."""
    if not levels:
        raise ValueError("levels must name at least one difficulty level")
    unknown = sorted(set(levels) - set(LEVELS))
    if unknown:
        raise ValueError(f"unknown arithmetic levels {unknown}; known: {sorted(LEVELS)}")
    rng = random.Random(seed)
    records = []
    for i in range(count):
        level = levels[i % len(levels)]
        question, answer = LEVELS[level](rng)
        records.append(
            {
                "prompt": f"{question} {INSTRUCTION}",
                "reference": str(answer),
                "task": "math",
                "metadata": {"level": level, "generator": "arithmetic", "index": i},
            }
        )
    return records
