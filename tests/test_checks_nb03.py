"""Notebook 03 exercises: extra right and wrong answers (required ids: tests/test_exercise_checks.py)."""

from __future__ import annotations

import torch

import pytest

from course_utils.exercises import check, get_exercise
from tests.learner_code import assert_accepted, assert_rejected

torch.func.grad(lambda t: (t ** 2).sum())(torch.ones(2))  # first use imports lazily (slow): not in check's time

_ACC = "def accumulated_grads(model, loss_fn, x, y, micro_batches):\n"

WRONG = [
    # --- 03.accumulated_grads
    ("03.accumulated_grads", _ACC + """
            model.zero_grad()
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                loss_fn(model(xb), yb).backward()
            return [p.grad for p in model.parameters()]""", ["divide each loss by micro_batches"]),
    ("03.accumulated_grads", _ACC + """
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                (loss_fn(model(xb), yb) / micro_batches).backward()
            return [p.grad for p in model.parameters()]""", ["zero_grad"]),
    ("03.accumulated_grads", _ACC + """
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                model.zero_grad()
                (loss_fn(model(xb), yb) / micro_batches).backward()
            return [p.grad for p in model.parameters()]""", ["inside the loop"]),
    ("03.accumulated_grads", _ACC + """
            for p in model.parameters():
                p.grad.zero_()
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                (loss_fn(model(xb), yb) / micro_batches).backward()
            return [p.grad for p in model.parameters()]""", ["None", "zero_grad"]),
    ("03.accumulated_grads", _ACC + """
            for p in model.parameters():
                p.grad.data.zero_()
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                (loss_fn(model(xb), yb) / micro_batches).backward()
            return [p.grad for p in model.parameters()]""", ["None"]),
    ("03.accumulated_grads", _ACC + """
            model.zero_grad()
            for xb, yb in zip(x.split(micro_batches), y.split(micro_batches)):
                (loss_fn(model(xb), yb) / micro_batches).backward()
            return [p.grad for p in model.parameters()]""", ["split", "chunk"]),
    ("03.accumulated_grads", _ACC + """
            model.zero_grad()
            loss_fn(model(x), y).backward()
            return [p.grad for p in model.parameters()]""", ["micro-batch"]),
    ("03.accumulated_grads", _ACC + """
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                (loss_fn(model(xb), yb) / micro_batches).backward()
            model.zero_grad()
            return [p.grad for p in model.parameters()]""", ["before the loop"]),
    ("03.accumulated_grads", _ACC + """
            model.zero_grad()
            with torch.no_grad():
                for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                    (loss_fn(model(xb), yb) / micro_batches).backward()
            return [p.grad for p in model.parameters()]""", ["no_grad"]),
    ("03.accumulated_grads", _ACC + """
            model.zero_grad()
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                (loss_fn(model(xb), yb) / len(xb)).backward()
            return [p.grad for p in model.parameters()]""", ["times the full-batch gradient"]),
    ("03.accumulated_grads", _ACC + """
            model.zero_grad()
            grads = None
            for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
                model.zero_grad()
                (loss_fn(model(xb), yb)).backward()
            return [p.grad / micro_batches for p in model.parameters()]""", ["inside the loop"]),
    # --- 03.gradient_at
    ("03.gradient_at", "def gradient_at(f, x):\n    x.requires_grad_(True)\n    f(x).backward()\n    return x.grad",
     ["x.grad"]),
    ("03.gradient_at", "def gradient_at(f, x):\n    (g,) = torch.autograd.grad(f(x), x)\n    return g",
     ["requires_grad"]),
    ("03.gradient_at", "def gradient_at(f, x):\n    x.requires_grad_(True)\n    (g,) = torch.autograd.grad(f(x), x)\n    return g",
     ["requires_grad"]),
    ("03.gradient_at", """
        def gradient_at(f, x):
            x2 = x.detach().clone().requires_grad_(True)
            return torch.autograd.grad(f(x2), x2)""", ["tuple"]),
    ("03.gradient_at", """
        def gradient_at(f, x):
            x.requires_grad_(True)
            f(x).backward()
            g = x.grad.clone()
            x.grad = None
            x.requires_grad_(False)
            return g""", ["requires_grad"]),
    ("03.gradient_at", """
        def gradient_at(f, x):
            x2 = x.clone().requires_grad_(True)
            f(x2).backward()
            return x2.grad""", ["x.grad"]),
    ("03.gradient_at", """
        def gradient_at(f, x):
            x2 = x.detach().float().requires_grad_(True)
            (g,) = torch.autograd.grad(f(x2), x2)
            return g""", ["dtype"]),
    ("03.gradient_at", """
        def gradient_at(f, x):
            x2 = x.detach().clone().requires_grad_(True)
            (g,) = torch.autograd.grad(f(x2), x2)
            return g.sum()""", ["shape"]),
    ("03.gradient_at", """
        def gradient_at(f, x):
            if x.grad is not None:
                x.grad.zero_()
            x.requires_grad_(True)
            f(x).backward()
            return x.grad""", ["x.grad"]),
    # --- 03.finite_difference_grad
    ("03.finite_difference_grad", """
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros_like(x)
            flat = x.view(-1)
            for i in range(x.numel()):
                flat[i] += eps
                plus = f(x)
                flat[i] -= 2 * eps
                grad.view(-1)[i] = (plus - f(x)) / (2 * eps)
            return grad""", ["in place"]),
    ("03.finite_difference_grad", """
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros(x.shape)
            for i in range(x.numel()):
                step = torch.zeros_like(x)
                step.view(-1)[i] = eps
                grad.view(-1)[i] = (f(x + step) - f(x - step)) / (2 * eps)
            return grad""", ["float32"]),
    ("03.finite_difference_grad", """
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros_like(x)
            for i in range(x.numel()):
                step = torch.zeros_like(x)
                step.view(-1)[i] = eps
                grad.view(-1)[i] = (f(x + step) - f(x)) / eps
            return grad""", ["central"]),
    ("03.finite_difference_grad", """
        def finite_difference_grad(f, x, eps=1e-6):
            return torch.full_like(x, float((f(x + eps) - f(x - eps)) / (2 * eps)))""", ["element"]),
    ("03.finite_difference_grad", """
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros_like(x)
            for i in range(x.numel()):
                step = torch.zeros_like(x)
                step.view(-1)[i] = eps
                grad.view(-1)[i] = (f(x + step) - f(x - step)) / eps
            return grad""", ["2 * eps"]),
    ("03.finite_difference_grad", """
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros_like(x)
            for i in range(x.numel()):
                step = torch.zeros_like(x)
                step.view(-1)[i] = 1e-6
                grad.view(-1)[i] = (f(x + step) - f(x - step)) / (2 * 1e-6)
            return grad""", ["eps"]),
    ("03.finite_difference_grad", """
        def finite_difference_grad(f, x, eps=1e-6):
            x2 = x.detach().clone().requires_grad_(True)
            (g,) = torch.autograd.grad(f(x2), x2)
            return g""", ["central"]),
    ("03.finite_difference_grad", """
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros_like(x)
            for i in range(x.numel()):
                step = torch.zeros_like(x)
                step[i] = eps
                grad[i] = (f(x + step) - f(x - step)) / (2 * eps)
            return grad""", ["view(-1)"]),
    ("03.finite_difference_grad", """
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros(x.numel(), dtype=x.dtype)
            for i in range(x.numel()):
                step = torch.zeros(x.numel(), dtype=x.dtype)
                step[i] = eps
                grad[i] = (f(x + step.view(x.shape)) - f(x - step.view(x.shape))) / (2 * eps)
            return grad""", ["shape"]),
    # the task says backward() on each micro-batch: one backward over the summed losses is not accumulation
    ("03.accumulated_grads", _ACC + """
            model.zero_grad(set_to_none=True)
            total = 0
            for xb, yb in zip(torch.tensor_split(x, micro_batches), torch.tensor_split(y, micro_batches)):
                total = total + loss_fn(model(xb), yb) / micro_batches
            total.backward()
            return [None if p.grad is None else p.grad.clone() for p in model.parameters()]""",
     ["backward ran 1 time", "one backward() over the summed"]),
    # a frozen parameter's p.grad is None: dividing every .grad fails on it
    ("03.accumulated_grads", _ACC + """
            for p in model.parameters():
                if p.grad is not None:
                    p.grad.zero_()
            size = len(x) // micro_batches
            for i in range(micro_batches):
                xb, yb = x[i * size:(i + 1) * size], y[i * size:(i + 1) * size]
                loss = loss_fn(model(xb), yb)
                loss.backward()
            for p in model.parameters():
                p.grad /= micro_batches
            return [p.grad for p in model.parameters()]""", ["NoneType", "frozen"]),
    # --- a finished function that forgets `return`
    ("03.accumulated_grads", "def accumulated_grads(model, loss_fn, x, y, micro_batches):\n    model.zero_grad()\n    for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):\n        (loss_fn(model(xb), yb) / micro_batches).backward()", ["return"]),
    ("03.gradient_at", "def gradient_at(f, x):\n    leaf = x.detach().clone().requires_grad_(True)\n    (g,) = torch.autograd.grad(f(leaf), leaf)", ["return"]),
]

RIGHT = [
    ("03.accumulated_grads", _ACC + """
            for p in model.parameters():
                if p.grad is not None:
                    p.grad.zero_()
            size = len(x) // micro_batches
            for i in range(micro_batches):
                xb, yb = x[i * size:(i + 1) * size], y[i * size:(i + 1) * size]
                loss = loss_fn(model(xb), yb)
                loss.backward()
            for p in model.parameters():
                if p.grad is not None:      # a frozen parameter's grad stays None
                    p.grad /= micro_batches
            return [p.grad for p in model.parameters()]"""),
    ("03.gradient_at", """
        def gradient_at(f, x):
            leaf = x.detach().requires_grad_()
            return torch.autograd.grad(f(leaf), leaf)[0]"""),
    ("03.gradient_at", """
        def gradient_at(f, x):
            with torch.enable_grad():
                x2 = x.clone().detach().requires_grad_(True)
                y = f(x2)
                y.backward()
            return x2.grad"""),
    ("03.finite_difference_grad", """
        def finite_difference_grad(f, x, eps=1e-6):
            out = torch.empty_like(x)
            flat = x.reshape(-1)
            for i in range(flat.numel()):
                e = torch.zeros_like(flat)
                e[i] = eps
                out.view(-1)[i] = (f((flat + e).view_as(x)) - f((flat - e).view_as(x))) / (2 * eps)
            return out"""),
    ("03.finite_difference_grad", """
        def finite_difference_grad(f, x, eps=1e-6):
            grad = torch.zeros_like(x)
            for idx in range(x.numel()):
                i = np.unravel_index(idx, tuple(x.shape))
                plus, minus = x.clone(), x.clone()
                plus[i] += eps
                minus[i] -= eps
                grad[i] = (f(plus) - f(minus)).item() / (2 * eps)
            return grad"""),
]


@pytest.mark.parametrize(("exercise_id", "source", "words"), WRONG,
                         ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(WRONG)])
def test_wrong_answer_is_rejected_with_what_to_fix(exercise_id: str, source: str, words: list[str]) -> None:
    assert_rejected(exercise_id, source, words)


@pytest.mark.parametrize(("exercise_id", "source"), RIGHT, ids=[f"{e}-{i}" for i, (e, _) in enumerate(RIGHT)])
def test_correct_alternative_is_accepted(exercise_id: str, source: str) -> None:
    assert_accepted(exercise_id, source)


def test_cases_start_with_stale_gradients_and_with_none() -> None:
    # The "not zeroed first" mistake only shows when .grad already holds something; `p.grad.zero_()`
    # only fails when .grad is None, zero_grad()'s default.
    states = set()
    for factory in get_exercise("03.accumulated_grads").cases:
        (model, *_), _ = factory()
        grads = [p.grad for p in model.parameters()]
        if all(g is None for g in grads):
            states.add("none")
        elif all(g is not None and g.abs().sum() > 0 for g in grads):
            states.add("stale")
    assert states == {"none", "stale"}


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
