"""Toy exercises for tests/test_mutation.py. Importing this module registers them (so that the
mutation tool's worker processes find them); the tests remove them again afterwards."""

from __future__ import annotations

from typing import Any

from course_utils.exercises import Exercise, register

IDS = ("98.toy_weak", "98.toy_good", "98.toy_loop", "98.toy_loop_unlimited")


def wrap_add(x: int, y: int) -> int:
    total = x + y
    if total > 10:
        total = 0
    return total


def countdown(n: int) -> int:
    while n > 0:
        n -= 1
    return n


def _same(out: Any, ref: Any, args: tuple, kwargs: dict) -> str | None:
    return None if out == ref else f"expected {ref!r}, found {out!r}"


def register_all() -> None:
    # A weak checker: one case, far from the threshold, so most mutants of the `if` survive.
    register(Exercise("98.toy_weak", "wrap_add(x, y) = x + y, or 0 above 10", wrap_add,
                      [lambda: ((2, 3), {})], _same))
    # A good checker: boundary values and both sides of the threshold.
    register(Exercise("98.toy_good", "wrap_add(x, y) = x + y, or 0 above 10", wrap_add,
                      [lambda x=x, y=y: ((x, y), {}) for x, y in [(2, 3), (5, 5), (6, 5), (20, 1), (0, 0),
                                                                  (-3, 1), (9, 0)]], _same))
    register(Exercise("98.toy_loop", "countdown(n) = 0", countdown, [lambda: ((3,), {})], _same,
                      time_limit=0.5))
    # No time limit: a mutant that loops forever is only stopped by the tool's hard timeout.
    register(Exercise("98.toy_loop_unlimited", "countdown(n) = 0", countdown, [lambda: ((3,), {})], _same,
                      time_limit=0))


register_all()
