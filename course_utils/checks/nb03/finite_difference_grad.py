"""``03.finite_difference_grad``: central differences, one element at a time."""

from __future__ import annotations

from typing import Callable

import torch

from course_utils.exercises import Exercise, Mistake, compare_tensors, register

from ._common import _gen, _ScalarFn


def finite_difference_grad_reference(f: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor,
                                     eps: float = 1e-6) -> torch.Tensor:
    x = x.detach()
    grad = torch.zeros_like(x)
    for i in range(x.numel()):
        step = torch.zeros_like(x)
        step.view(-1)[i] = eps
        grad.view(-1)[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


def _fd_forward(f, x, eps=1e-6):
    grad = torch.zeros_like(x)
    for i in range(x.numel()):
        step = torch.zeros_like(x)
        step.view(-1)[i] = eps
        grad.view(-1)[i] = (f(x + step) - f(x)) / eps
    return grad


def _fd_all_at_once(f, x, eps=1e-6):
    return torch.full_like(x, float((f(x + eps) - f(x - eps)) / (2 * eps)))


def _fd_inplace(f, x, eps=1e-6):
    grad = torch.zeros_like(x)
    flat = x.view(-1)
    for i in range(x.numel()):
        flat[i] += eps
        plus = f(x)
        flat[i] -= 2 * eps
        grad.view(-1)[i] = (plus - f(x)) / (2 * eps)   # forgets to put x[i] back
    return grad


def _fd_float32(f, x, eps=1e-6):
    return finite_difference_grad_reference(f, x.float(), eps)


def _fd_case(seed: int, shape: tuple[int, ...], eps: float, text: str, fn):
    def make():
        x = torch.randn(*shape, dtype=torch.float64, generator=_gen(seed))
        return (_ScalarFn(text, fn, x), x), {"eps": eps}
    return make


def _fd_verify(out, ref, args, kwargs):
    f, x = args
    problem = compare_tensors(out, ref, atol=1e-8, rtol=1e-6, name="finite-difference gradient")
    if problem:
        return problem
    if not torch.allclose(x, f.x_before, rtol=0, atol=1e-12):
        return "your function changed x (some elements were not put back); expected x untouched"
    return None


register(Exercise(
    "03.finite_difference_grad",
    "finite_difference_grad(f, x, eps=1e-6) estimates df/dx for a scalar function f by central "
    "differences, one element at a time: (f(x + eps*e_i) - f(x - eps*e_i)) / (2*eps), where e_i is 1 at "
    "element i and 0 elsewhere. x is float64; return a float64 tensor shaped like x and leave x unchanged.",
    finite_difference_grad_reference,
    [_fd_case(40, (3,), 1e-4, "f(x) = (x.sin() * x.exp()).sum()", lambda x: (x.sin() * x.exp()).sum()),
     _fd_case(41, (2, 3), 1e-5, "f(x) = (x ** 3).sum() + x.prod()", lambda x: (x ** 3).sum() + x.prod()),
     _fd_case(42, (4,), 1e-6, "f(x) = torch.logsumexp(x, 0)", lambda x: torch.logsumexp(x, 0))],
    _fd_verify,
    [
        Mistake("changes x in place",
                "nudging x[i] in place and not restoring it shifts every later evaluation (and the caller's "
                "x). Build x + step and x - step as new tensors instead.",
                _fd_inplace,
                detect=lambda out, a, k: not torch.allclose(a[1], a[0].x_before, rtol=0, atol=1e-12)),
        Mistake("computes in float32",
                "float32 keeps ~7 digits, and (f(x+eps) - f(x-eps)) cancels most of them: stay in float64.",
                _fd_float32, detect=lambda out, a, k: isinstance(out, torch.Tensor) and out.dtype == torch.float32),
        Mistake("forward difference instead of central",
                "(f(x + eps*e_i) - f(x)) / eps has an error proportional to eps; the central difference "
                "(f(x + eps*e_i) - f(x - eps*e_i)) / (2*eps) has an error proportional to eps**2.",
                _fd_forward,
                detect=lambda out, a, k: isinstance(out, torch.Tensor) and out.shape == a[1].shape
                and torch.allclose(out, _fd_forward(a[0], a[1], k["eps"]), rtol=1e-7, atol=1e-10)),
        Mistake("perturbs all elements at once",
                "adding eps to every element measures the slope along (1, 1, ..., 1), one number; each element "
                "needs its own perturbation: a step tensor that is eps at element i and 0 elsewhere.",
                _fd_all_at_once,
                detect=lambda out, a, k: isinstance(out, torch.Tensor) and out.numel() > 1
                and bool((out == out.reshape(-1)[0]).all())),
    ],
))
