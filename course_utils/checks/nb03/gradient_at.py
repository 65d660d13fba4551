"""``03.gradient_at``: df/dx with autograd, leaving the caller's x untouched."""

from __future__ import annotations

from typing import Callable

import torch

from course_utils.exercises import Exercise, Mistake, compare_tensors, register

from ._common import _gen, _ScalarFn


def gradient_at_reference(f: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    x = x.detach().clone().requires_grad_(True)     # our own leaf: the caller's x stays untouched
    (grad,) = torch.autograd.grad(f(x), x)
    return grad


def _at_backward(f, x):
    x.requires_grad_(True)
    f(x).backward()
    return x.grad


def _at_no_requires_grad(f, x):
    (grad,) = torch.autograd.grad(f(x), x)
    return grad


def _at_flip_flag(f, x):
    x.requires_grad_(True)
    (grad,) = torch.autograd.grad(f(x), x)
    return grad


def _at_case(seed: int, shape: tuple[int, ...], text: str, fn, requires_grad: bool, stale: bool):
    def make():
        x = torch.randn(*shape, generator=_gen(seed))
        if requires_grad:
            x.requires_grad_(True)
        if stale:
            x.grad = torch.ones_like(x)
        return (_ScalarFn(text, fn, x), x), {}
    return make


def _grad_changed(out, args, kwargs) -> bool:
    f, x = args
    if x.grad is None:
        return False
    return f.grad_before is None or not torch.equal(x.grad, f.grad_before)


def _at_verify(out, ref, args, kwargs):
    f, x = args
    problem = compare_tensors(out, ref, name="gradient")
    if problem:
        return problem
    if x.requires_grad != f.requires_grad_before:
        return (f"your function changed x.requires_grad from {f.requires_grad_before} to {x.requires_grad}; "
                f"expected x untouched")
    if _grad_changed(out, args, kwargs):
        return "your function left a gradient in x.grad; expected x untouched"
    return None


register(Exercise(
    "03.gradient_at",
    "gradient_at(f, x) returns df/dx at x (same shape as x) for a function f that returns a scalar. "
    "x may or may not require grad and may already have a .grad: leave x exactly as it was "
    "(same requires_grad, same .grad).",
    gradient_at_reference,
    [_at_case(30, (4,), "f(x) = (x.sin() * x).sum()", lambda x: (x.sin() * x).sum(), False, False),
     _at_case(31, (3,), "f(x) = (x ** 3).sum()", lambda x: (x ** 3).sum(), True, True),
     _at_case(32, (2, 2), "f(x) = x.exp().mean()", lambda x: x.exp().mean(), True, False)],
    _at_verify,
    [
        Mistake("backward() on the caller's x (leaves .grad behind, adds to stale .grad)",
                "x.backward() writes into x.grad, which the caller owns and which may already hold "
                "values that get added to. Work on your own leaf, "
                "x2 = x.detach().clone().requires_grad_(True), and use torch.autograd.grad(f(x2), x2).",
                _at_backward, detect=_grad_changed),
        Mistake("forgets requires_grad",
                "autograd only tracks tensors that require grad: make a leaf with "
                "x.detach().clone().requires_grad_(True) before calling f.",
                _at_no_requires_grad, error_match="does not require grad"),
        Mistake("turns on requires_grad on the caller's x",
                "x.requires_grad_(True) changes the caller's tensor; do it on a detached clone instead.",
                _at_flip_flag, detect=lambda out, a, k: a[1].requires_grad != a[0].requires_grad_before),
    ],
))
