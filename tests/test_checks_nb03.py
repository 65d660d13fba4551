"""Notebook 03 exercises: extra right and wrong answers (required ids: tests/test_exercise_checks.py)."""

from __future__ import annotations

import torch

from course_utils.exercises import check, get_exercise


def test_cases_start_with_stale_gradients() -> None:
    # The "not zeroed first" mistake only shows when .grad already holds something.
    for factory in get_exercise("03.accumulated_grads").cases:
        (model, *_), _ = factory()
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


def test_accumulated_grads_other_correct_answers_pass() -> None:
    def set_none_and_weight_by_size(model, loss_fn, x, y, micro_batches):
        for p in model.parameters():
            p.grad = None
        for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
            (loss_fn(model(xb), yb) * len(xb) / len(x)).backward()
        return [p.grad for p in model.parameters()]  # no clone: fine as well

    assert check("03.accumulated_grads", set_none_and_weight_by_size).passed


def test_accumulated_grads_combined_mistake_is_named() -> None:
    def neither(model, loss_fn, x, y, micro_batches):
        for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
            loss_fn(model(xb), yb).backward()
        return [p.grad for p in model.parameters()]

    result = check("03.accumulated_grads", neither)
    assert "Hint (no division by the number of micro-batches)" in result.message


def test_accumulated_grads_zero_inside_without_division_is_named() -> None:
    def zero_inside(model, loss_fn, x, y, micro_batches):
        for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
            model.zero_grad()
            loss_fn(model(xb), yb).backward()
        return [p.grad for p in model.parameters()]

    assert "Hint (zeroing inside the loop)" in check("03.accumulated_grads", zero_inside).message


def test_gradient_at_alternatives() -> None:
    def with_func(f, x):
        return torch.func.grad(f)(x.detach())

    def with_enable_grad(f, x):
        x2 = x.detach().requires_grad_()
        f(x2).backward()
        return x2.grad

    assert check("03.gradient_at", with_func).passed
    assert check("03.gradient_at", with_enable_grad).passed


def test_finite_difference_alternative_passes() -> None:
    def clone_each_time(f, x, eps=1e-6):
        out = torch.empty_like(x)
        for i in range(x.numel()):
            plus, minus = x.clone(), x.clone()
            plus.view(-1)[i] += eps
            minus.view(-1)[i] -= eps
            out.view(-1)[i] = (f(plus) - f(minus)) / (2 * eps)
        return out

    assert check("03.finite_difference_grad", clone_each_time).passed
