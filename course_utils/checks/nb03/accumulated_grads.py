"""``03.accumulated_grads``: micro-batch gradients add up to the full-batch gradient."""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, compare_tensors, describe, register

from ._common import _all_close, _gen


def accumulated_grads_reference(model: nn.Module, loss_fn: Callable, x: torch.Tensor, y: torch.Tensor,
                                micro_batches: int) -> list[torch.Tensor]:
    model.zero_grad(set_to_none=True)              # stale gradients out, once, before the loop
    for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
        loss = loss_fn(model(xb), yb) / micro_batches   # each micro-batch mean counts 1/k
        loss.backward()                                 # .grad accumulates across the loop
    return [p.grad.clone() for p in model.parameters()]


def _acc_no_division(model, loss_fn, x, y, micro_batches):
    model.zero_grad()
    for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
        loss_fn(model(xb), yb).backward()
    return [p.grad.clone() for p in model.parameters()]


def _acc_stale(model, loss_fn, x, y, micro_batches):
    for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
        (loss_fn(model(xb), yb) / micro_batches).backward()
    return [p.grad.clone() for p in model.parameters()]


def _acc_zero_inside(model, loss_fn, x, y, micro_batches):
    for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
        model.zero_grad()
        (loss_fn(model(xb), yb) / micro_batches).backward()
    return [p.grad.clone() for p in model.parameters()]


def _stale_input(x: torch.Tensor) -> torch.Tensor:
    """The 'previous batch' whose gradients the cases leave in .grad."""
    return x + 1.0


def _grads(model: nn.Module, loss: torch.Tensor) -> list[torch.Tensor]:
    return list(torch.autograd.grad(loss, list(model.parameters())))


def _full(args) -> list[torch.Tensor]:
    model, loss_fn, x, y, _ = args
    return _grads(model, loss_fn(model(x), y))


def _stale(args) -> list[torch.Tensor]:
    model, loss_fn, x, y, _ = args
    return _grads(model, loss_fn(model(_stale_input(x)), y))


def _last_chunk(args) -> list[torch.Tensor]:
    model, loss_fn, x, y, k = args
    return _grads(model, loss_fn(model(x.chunk(k)[-1]), y.chunk(k)[-1]))


def _acc_case(seed: int, n: int, k: int, classify: bool):
    def make():
        with torch.random.fork_rng():          # model init uses the global generator: isolate it
            torch.manual_seed(seed)
            model = nn.Sequential(nn.Linear(3, 6), nn.Tanh(), nn.Linear(6, 4 if classify else 2))
        x = torch.randn(n, 3, generator=_gen(seed + 1))
        if classify:
            y = torch.randint(0, 4, (n,), generator=_gen(seed + 2))
            loss_fn: nn.Module = nn.CrossEntropyLoss()
        else:
            y = torch.randn(n, 2, generator=_gen(seed + 2))
            loss_fn = nn.MSELoss()
        loss_fn(model(_stale_input(x)), y).backward()   # stale .grad from a previous step
        return (model, loss_fn, x, y, k), {}
    return make


def _acc_verify(out, ref, args, kwargs):
    names = [name for name, _ in args[0].named_parameters()]
    if not isinstance(out, (list, tuple)):
        return f"expected a list with one gradient tensor per parameter ({len(names)}), found {describe(out)}"
    if len(out) != len(names):
        return f"expected {len(names)} gradients (one per parameter, in model.parameters() order), found {len(out)}"
    for name, o, r in zip(names, out, ref):
        if o is None:
            return f"the gradient of {name} is None: did backward() run on every micro-batch?"
        problem = compare_tensors(o, r, atol=1e-5, name=f"gradient of {name}")
        if problem:
            return problem + " (compared with the full-batch gradient)"
    return None


register(Exercise(
    "03.accumulated_grads",
    "accumulated_grads(model, loss_fn, x, y, micro_batches) splits x and y into `micro_batches` "
    "equal chunks, runs forward + backward on each, and returns [p.grad for p in model.parameters()], "
    "which must equal the gradient of loss_fn(model(x), y) on the whole batch (loss_fn averages "
    "over its batch). The model's .grad may hold stale values from an earlier step when you are called.",
    accumulated_grads_reference,
    [_acc_case(0, 8, 4, False), _acc_case(1, 12, 3, True), _acc_case(2, 6, 2, False), _acc_case(3, 4, 1, True)],
    _acc_verify,
    [
        Mistake("no division by the number of micro-batches",
                "each micro-batch loss is already a mean over its chunk; adding k of them gives k times the "
                "full-batch gradient. Divide each loss by micro_batches before backward().",
                _acc_no_division,
                detect=lambda out, a, k: a[4] > 1 and (
                    _all_close(out, [a[4] * g for g in _full(a)])
                    or _all_close(out, [a[4] * g + s for g, s in zip(_full(a), _stale(a))]))),
        Mistake("stale grads not zeroed first",
                "backward() ADDS to .grad, and .grad still held the previous step's gradients. Call "
                "model.zero_grad() once, before the loop.",
                _acc_stale, detect=lambda out, a, k: _all_close(out, [g + s for g, s in zip(_full(a), _stale(a))])),
        Mistake("zeroing inside the loop",
                "zero_grad() inside the loop wipes what the earlier micro-batches accumulated, so only the "
                "last chunk counts. Zero once before the loop, then let backward() accumulate.",
                _acc_zero_inside,
                detect=lambda out, a, k: a[4] > 1 and (
                    _all_close(out, [g / a[4] for g in _last_chunk(a)]) or _all_close(out, _last_chunk(a)))),
    ],
))
