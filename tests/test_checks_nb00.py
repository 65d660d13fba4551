"""Notebook 00 exercises: extra right and wrong answers (required ids: tests/test_exercise_checks.py)."""

from __future__ import annotations

import torch

from course_utils.exercises import check


def test_double_other_correct_answers_pass() -> None:
    for candidate in (lambda x: x * 2, lambda x: x + x, lambda x: x.clone().mul_(2), torch.mul):
        if candidate is torch.mul:
            candidate = lambda x: torch.mul(x, 2)  # noqa: E731
        assert check("00.double", candidate).passed


def test_double_in_place_then_copy_is_named() -> None:
    # A new tensor is returned, but the caller's x was overwritten first.
    def inplace_then_clone(x):
        x *= 2
        return x.clone()

    result = check("00.double", inplace_then_clone)
    assert result.status == "fail"
    assert "Hint (modifies the input in place)" in result.message
    assert "x no longer holds the values it was called with" in result.message


def test_double_returning_input_unchanged_is_not_called_in_place() -> None:
    result = check("00.double", lambda x: x)
    assert result.status == "fail"
    assert "in place" not in result.message
