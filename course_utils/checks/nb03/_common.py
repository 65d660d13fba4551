"""Helpers shared by the notebook 03 checkers: seeded generators, gradient comparison."""

from __future__ import annotations

from typing import Callable

import torch


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _all_close(out: object, expected: list[torch.Tensor], atol: float = 1e-5) -> bool:
    return (isinstance(out, (list, tuple)) and len(out) == len(expected)
            and all(isinstance(o, torch.Tensor) and o.shape == e.shape
                    and torch.allclose(o.detach(), e, atol=atol, rtol=1e-4) for o, e in zip(out, expected)))


class _ScalarFn:
    """A scalar function of x that remembers the state x was in when the case was made."""

    def __init__(self, text: str, fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> None:
        self.text, self.fn = text, fn
        self.requires_grad_before = x.requires_grad
        self.grad_before = None if x.grad is None else x.grad.clone()
        self.x_before = x.detach().clone()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)

    def __repr__(self) -> str:
        return f"<function {self.text}>"
