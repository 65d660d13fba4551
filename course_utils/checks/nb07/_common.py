"""Helpers shared by the notebook 07 checkers."""

from __future__ import annotations

from typing import Any

import torch

from course_utils.exercises import describe


def _number_problem(value: Any, what: str) -> str | None:
    if isinstance(value, torch.Tensor):
        return f"expected {what} as a Python int, found a tensor ({describe(value)}); use int(...) or .item()"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"expected {what} as a Python int, found {describe(value)}"
    return None
