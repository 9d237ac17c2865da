"""A built-in set of small Python tasks with assert tests, easy enough that a 135M model solves some of them.

With on-policy samples from the default model some pass and some fail, so the demo pipeline yields code pairs
without any download. Each record's reference is a known-good solution (tests check that it passes).
"""

import json
from typing import Any

INSTRUCTION = "Answer with the function in a ```python code block."

# (function name, task sentence, reference solution, asserts)
TASKS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    (
        "add",
        "Write a Python function add(a, b) that returns a + b.",
        "def add(a, b):\n    return a + b",
        ("assert add(1, 2) == 3", "assert add(-4, 4) == 0", "assert add(10, 5) == 15"),
    ),
    (
        "subtract",
        "Write a Python function subtract(a, b) that returns a - b.",
        "def subtract(a, b):\n    return a - b",
        ("assert subtract(5, 3) == 2", "assert subtract(0, 7) == -7", "assert subtract(4, 4) == 0"),
    ),
    (
        "multiply",
        "Write a Python function multiply(a, b) that returns the product of a and b.",
        "def multiply(a, b):\n    return a * b",
        ("assert multiply(3, 4) == 12", "assert multiply(-2, 5) == -10", "assert multiply(7, 0) == 0"),
    ),
    (
        "square",
        "Write a Python function square(x) that returns x squared.",
        "def square(x):\n    return x * x",
        ("assert square(3) == 9", "assert square(-4) == 16", "assert square(0) == 0"),
    ),
    (
        "double",
        "Write a Python function double(x) that returns twice x.",
        "def double(x):\n    return 2 * x",
        ("assert double(4) == 8", "assert double(-1) == -2", "assert double(0) == 0"),
    ),
    (
        "is_even",
        "Write a Python function is_even(n) that returns True if n is even and False otherwise.",
        "def is_even(n):\n    return n % 2 == 0",
        ("assert is_even(4) is True", "assert is_even(7) is False", "assert is_even(0) is True"),
    ),
    (
        "max_of_two",
        "Write a Python function max_of_two(a, b) that returns the larger of a and b.",
        "def max_of_two(a, b):\n    return a if a > b else b",
        ("assert max_of_two(3, 9) == 9", "assert max_of_two(10, 2) == 10", "assert max_of_two(-1, -5) == -1"),
    ),
    (
        "absolute",
        "Write a Python function absolute(x) that returns the absolute value of x without using abs().",
        "def absolute(x):\n    return -x if x < 0 else x",
        ("assert absolute(-5) == 5", "assert absolute(3) == 3", "assert absolute(0) == 0"),
    ),
    (
        "reverse_string",
        "Write a Python function reverse_string(s) that returns the string s reversed.",
        "def reverse_string(s):\n    return s[::-1]",
        (
            "assert reverse_string('abc') == 'cba'",
            "assert reverse_string('') == ''",
            "assert reverse_string('a') == 'a'",
        ),
    ),
    (
        "string_length",
        "Write a Python function string_length(s) that returns the number of characters in s.",
        "def string_length(s):\n    return len(s)",
        ("assert string_length('hello') == 5", "assert string_length('') == 0", "assert string_length('a b') == 3"),
    ),
    (
        "first_element",
        "Write a Python function first_element(items) that returns the first element of the list items.",
        "def first_element(items):\n    return items[0]",
        (
            "assert first_element([4, 5, 6]) == 4",
            "assert first_element(['x']) == 'x'",
            "assert first_element([0, 1]) == 0",
        ),
    ),
    (
        "last_element",
        "Write a Python function last_element(items) that returns the last element of the list items.",
        "def last_element(items):\n    return items[-1]",
        (
            "assert last_element([4, 5, 6]) == 6",
            "assert last_element(['x']) == 'x'",
            "assert last_element([1, 0]) == 0",
        ),
    ),
    (
        "sum_list",
        "Write a Python function sum_list(numbers) that returns the sum of a list of numbers.",
        "def sum_list(numbers):\n    return sum(numbers)",
        ("assert sum_list([1, 2, 3]) == 6", "assert sum_list([]) == 0", "assert sum_list([-1, 1, 5]) == 5"),
    ),
    (
        "max_list",
        "Write a Python function max_list(numbers) that returns the largest number in a non-empty list.",
        "def max_list(numbers):\n    return max(numbers)",
        ("assert max_list([1, 9, 3]) == 9", "assert max_list([-5, -2]) == -2", "assert max_list([7]) == 7"),
    ),
    (
        "count_vowels",
        "Write a Python function count_vowels(s) that returns how many of the letters a, e, i, o, u (lowercase) "
        "are in the string s.",
        "def count_vowels(s):\n    return sum(1 for c in s if c in 'aeiou')",
        ("assert count_vowels('hello') == 2", "assert count_vowels('xyz') == 0", "assert count_vowels('banana') == 3"),
    ),
    (
        "is_palindrome",
        "Write a Python function is_palindrome(s) that returns True if the string s reads the same backwards.",
        "def is_palindrome(s):\n    return s == s[::-1]",
        (
            "assert is_palindrome('racecar') is True",
            "assert is_palindrome('abc') is False",
            "assert is_palindrome('')",
        ),
    ),
    (
        "factorial",
        "Write a Python function factorial(n) that returns n! for a non-negative integer n.",
        "def factorial(n):\n    result = 1\n    for i in range(2, n + 1):\n        result *= i\n    return result",
        ("assert factorial(0) == 1", "assert factorial(5) == 120", "assert factorial(1) == 1"),
    ),
    (
        "to_upper",
        "Write a Python function to_upper(s) that returns the string s in upper case.",
        "def to_upper(s):\n    return s.upper()",
        ("assert to_upper('abc') == 'ABC'", "assert to_upper('Hi!') == 'HI!'", "assert to_upper('') == ''"),
    ),
    (
        "concat",
        "Write a Python function concat(a, b) that returns the two strings a and b joined together.",
        "def concat(a, b):\n    return a + b",
        ("assert concat('ab', 'cd') == 'abcd'", "assert concat('', 'x') == 'x'", "assert concat('a', '') == 'a'"),
    ),
    (
        "celsius_to_fahrenheit",
        "Write a Python function celsius_to_fahrenheit(c) that converts Celsius to Fahrenheit (c * 9 / 5 + 32).",
        "def celsius_to_fahrenheit(c):\n    return c * 9 / 5 + 32",
        (
            "assert celsius_to_fahrenheit(0) == 32",
            "assert celsius_to_fahrenheit(100) == 212",
            "assert celsius_to_fahrenheit(-40) == -40",
        ),
    ),
    (
        "is_positive",
        "Write a Python function is_positive(x) that returns True if x is greater than zero, else False.",
        "def is_positive(x):\n    return x > 0",
        ("assert is_positive(3) is True", "assert is_positive(0) is False", "assert is_positive(-2) is False"),
    ),
    (
        "list_length",
        "Write a Python function list_length(items) that returns the number of elements in the list items.",
        "def list_length(items):\n    return len(items)",
        ("assert list_length([1, 2, 3]) == 3", "assert list_length([]) == 0", "assert list_length([[1, 2]]) == 1"),
    ),
)


def generate(limit: int | None = None) -> list[dict[str, Any]]:
    """The tasks as prompt records (task code, asserts-style tests), in a fixed order."""
    records = []
    for i, (name, sentence, solution, asserts) in enumerate(TASKS[:limit]):
        records.append(
            {
                "prompt": f"{sentence} {INSTRUCTION}",
                "task": "code",
                "tests": json.dumps({"style": "asserts", "asserts": list(asserts)}, sort_keys=True),
                "reference": solution,
                "metadata": {"generator": "code_basics", "name": name, "index": i},
            }
        )
    return records
