"""Checkers of notebook 03 (autograd), in notebook order: ``03.accumulated_grads``, ``03.gradient_at``,
``03.finite_difference_grad``.

Cases build fresh tensors from seeded generators (model init runs under ``fork_rng``), and they start
from awkward states: stale values in ``.grad``, ``x`` that already requires grad. The function handed
to the candidate (``_ScalarFn``) remembers the state ``x`` was in, so verify checks both the gradient
and that the caller's ``x`` was left untouched.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, compare_tensors, describe, register
from course_utils.i18n import t


# --- shared by the 03 checkers --------------------------------------------------------------------
# Seeded generators, gradient comparison, a scalar function that remembers the state x was in.

def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _all_close(out: object, expected: list[torch.Tensor | None], atol: float = 1e-5) -> bool:
    """Every returned gradient matches (None where a frozen parameter's gradient is None)."""
    return (isinstance(out, (list, tuple)) and len(out) == len(expected)
            and all((o is None) if e is None else (isinstance(o, torch.Tensor) and o.shape == e.shape
                                                   and torch.allclose(o.detach(), e, atol=atol, rtol=1e-4))
                    for o, e in zip(out, expected)))


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


# --- 03.accumulated_grads -------------------------------------------------------------------------
# Micro-batch gradients add up to the full-batch gradient.

def accumulated_grads_reference(model: nn.Module, loss_fn: Callable, x: torch.Tensor, y: torch.Tensor,
                                micro_batches: int) -> list[torch.Tensor]:
    model.zero_grad(set_to_none=True)              # stale gradients out, once, before the loop
    for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
        loss = loss_fn(model(xb), yb) / micro_batches   # each micro-batch mean counts 1/k
        loss.backward()                                 # .grad accumulates across the loop
    return [None if p.grad is None else p.grad.clone() for p in model.parameters()]   # None: frozen


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


def _acc_grad_zero_(model, loss_fn, x, y, micro_batches):
    for p in model.parameters():
        p.grad.zero_()          # fails when .grad is None, zero_grad()'s default state
    for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
        (loss_fn(model(xb), yb) / micro_batches).backward()
    return [p.grad.clone() for p in model.parameters()]


def _acc_split(model, loss_fn, x, y, micro_batches):
    model.zero_grad()
    for xb, yb in zip(x.split(micro_batches), y.split(micro_batches)):   # chunks of SIZE micro_batches
        (loss_fn(model(xb), yb) / micro_batches).backward()
    return [p.grad.clone() for p in model.parameters()]


def _acc_whole_batch(model, loss_fn, x, y, micro_batches):
    model.zero_grad()
    loss_fn(model(x), y).backward()
    return [p.grad.clone() for p in model.parameters()]


def _acc_zero_after(model, loss_fn, x, y, micro_batches):
    for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
        (loss_fn(model(xb), yb) / micro_batches).backward()
    model.zero_grad()
    return [p.grad for p in model.parameters()]


def _acc_no_grad(model, loss_fn, x, y, micro_batches):
    model.zero_grad()
    with torch.no_grad():
        for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
            (loss_fn(model(xb), yb) / micro_batches).backward()
    return [p.grad for p in model.parameters()]


def _acc_by_batch_size(model, loss_fn, x, y, micro_batches):
    model.zero_grad()
    for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
        (loss_fn(model(xb), yb) / len(x)).backward()      # divides by the batch size, not by k
    return [p.grad for p in model.parameters()]


def _acc_divide_grads(model, loss_fn, x, y, micro_batches):
    model.zero_grad()
    for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)):
        loss_fn(model(xb), yb).backward()
    for p in model.parameters():
        p.grad /= micro_batches                            # None for a frozen parameter
    return [p.grad for p in model.parameters()]


def _acc_one_backward(model, loss_fn, x, y, micro_batches):
    model.zero_grad()
    total = sum(loss_fn(model(xb), yb) / micro_batches for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)))
    total.backward()                                       # every micro-batch graph alive at once
    return [p.grad for p in model.parameters()]


def _acc_drops_frozen(model, loss_fn, x, y, micro_batches):
    accumulated_grads_reference(model, loss_fn, x, y, micro_batches)
    return [p.grad for p in model.parameters() if p.grad is not None]


def _frozen_mishandled(out: object, model: nn.Module) -> bool:
    params = list(model.parameters())
    if not isinstance(out, (list, tuple)) or all(p.requires_grad for p in params):
        return False
    trainable = [p for p in params if p.requires_grad]
    if len(out) == len(trainable) < len(params):
        return True   # the None entries were filtered out
    return len(out) == len(params) and any(
        not p.requires_grad and isinstance(o, torch.Tensor) and not o.any() for p, o in zip(params, out))


class _Recorded(nn.Sequential):
    """An nn.Sequential that remembers the batch size of every forward call (to see the micro-batches)
    and counts the backward passes that reach its last weight (one per backward() call through it)."""

    def __init__(self, *layers: nn.Module) -> None:
        super().__init__(*layers)
        self.batch_sizes: list[int] = []
        self.backward_runs = 0

    def count_backward_runs(self) -> None:
        """From now on, count backward passes: autograd accumulates a leaf's gradient once per backward run."""
        self.backward_runs = 0
        self[-1].weight.register_post_accumulate_grad_hook(self._one_more_run)

    def _one_more_run(self, param: torch.Tensor) -> None:
        self.backward_runs += 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.batch_sizes.append(int(x.shape[0]))
        return super().forward(x)


def _quiet(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """model(x) for the checker's own computations: not recorded as one of the candidate's calls."""
    return nn.Sequential.forward(model, x) if isinstance(model, _Recorded) else model(x)


def _stale_input(x: torch.Tensor) -> torch.Tensor:
    """The 'previous batch' whose gradients the cases leave in .grad."""
    return x + 1.0


def _grads(model: nn.Module, loss: torch.Tensor) -> list[torch.Tensor | None]:
    """d loss / d p for every parameter, None for a frozen one (as p.grad is)."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    grads = iter(torch.autograd.grad(loss, trainable))
    return [next(grads) if p.requires_grad else None for p in model.parameters()]


def _full(args) -> list[torch.Tensor]:
    model, loss_fn, x, y, _ = args
    return _grads(model, loss_fn(_quiet(model, x), y))


def _stale(args) -> list[torch.Tensor]:
    model, loss_fn, x, y, _ = args
    return _grads(model, loss_fn(_quiet(model, _stale_input(x)), y))


def _last_chunk(args) -> list[torch.Tensor]:
    model, loss_fn, x, y, k = args
    return _grads(model, loss_fn(_quiet(model, x.chunk(k)[-1]), y.chunk(k)[-1]))


def _split_grads(args) -> list[torch.Tensor]:
    model, loss_fn, x, y, k = args
    total = sum(loss_fn(_quiet(model, xb), yb) / k for xb, yb in zip(x.split(k), y.split(k)))
    return _grads(model, total)


def _scaled(grads: list[torch.Tensor | None], c: float, plus: list[torch.Tensor | None] | None = None):
    plus = plus or [None] * len(grads)
    return [None if g is None else c * g + (0 if s is None else s) for g, s in zip(grads, plus)]


def _acc_case(seed: int, n: int, k: int, classify: bool, grads_none: bool = False, frozen: bool = False):
    def make():
        with torch.random.fork_rng():          # model init uses the global generator: isolate it
            torch.manual_seed(seed)
            model = _Recorded(nn.Linear(3, 6), nn.Tanh(), nn.Linear(6, 4 if classify else 2))
        if frozen:                             # a frozen first layer: its p.grad stays None
            model[0].requires_grad_(False)
        x = torch.randn(n, 3, generator=_gen(seed + 1))
        if classify:
            y = torch.randint(0, 4, (n,), generator=_gen(seed + 2))
            loss_fn: nn.Module = nn.CrossEntropyLoss()
        else:
            y = torch.randn(n, 2, generator=_gen(seed + 2))
            loss_fn = nn.MSELoss()
        loss_fn(model(_stale_input(x)), y).backward()   # stale .grad from a previous step
        if grads_none:
            model.zero_grad()                             # set_to_none=True: every .grad is None
        model.batch_sizes.clear()
        model.count_backward_runs()
        return (model, loss_fn, x, y, k), {}
    return make


def _ratio(out: list, ref: list) -> float | None:
    """c when every returned gradient is c times the expected one (c != 1), else None."""
    try:
        o = torch.cat([t.detach().reshape(-1) for t, e in zip(out, ref, strict=True) if e is not None])
        r = torch.cat([e.detach().reshape(-1) for e in ref if e is not None])
    except (TypeError, RuntimeError, AttributeError):
        return None
    if o.shape != r.shape or r.abs().max() == 0:
        return None
    c = float((o @ r) / (r @ r))
    if abs(c - 1) > 1e-3 and torch.allclose(o, c * r, atol=1e-6, rtol=1e-4):
        return c
    return None


def _acc_verify(out, ref, args, kwargs):
    model, _, x, _, k = args
    names = [name for name, _ in model.named_parameters()]
    if not isinstance(out, (list, tuple)):
        return t("expected a list with one gradient tensor per parameter ({n}), found {got}", n=len(names),
                 got=describe(out))
    frozen = [name for name, p in model.named_parameters() if not p.requires_grad]
    if len(out) != len(names):
        frozen_note = t(", None for each frozen parameter: {names}", names=", ".join(frozen)) if frozen else ""
        return t("expected {n} gradients (one per parameter, in model.parameters() order{frozen}), found {got}",
                 n=len(names), frozen=frozen_note, got=len(out))
    for name, o, r in zip(names, out, ref):
        if r is None and o is not None:
            return t("the gradient of {name} (a frozen parameter, requires_grad=False) must be None, as its "
                     "p.grad is, found {got}", name=name, got=describe(o))
        if r is not None and o is None:
            return t("the gradient of {name} is None: backward() must run on every micro-batch, and "
                     "nothing may clear .grad after the last one", name=name)
    for name, o, r in zip(names, out, ref):
        if r is None:
            continue
        problem = compare_tensors(o, r, atol=1e-5, name=t("gradient of {name}", name=name))
        if problem:
            c = _ratio(out, ref)
            if c is not None:
                return t("your gradients are {c:.3g} times the full-batch gradient (each of the {k} "
                         "micro-batch losses must count 1/{k})", c=c, k=k)
            return problem + t(" (compared with the full-batch gradient)")
    sizes = [len(c) for c in x.chunk(k)]
    if k > 1 and sorted(model.batch_sizes) != sorted(sizes):
        return t("the model saw batches of sizes {seen}; the task is one forward and backward "
                 "per micro-batch, sizes {sizes} (x.chunk({k}))", seen=model.batch_sizes, sizes=sizes, k=k)
    if k > 1 and model.backward_runs != k:
        return t("backward ran {runs} time(s) through the model; the task is one backward() per "
                 "micro-batch ({k} of them), not one backward() over the summed losses (which keeps every "
                 "micro-batch's graph in memory until the end)", runs=model.backward_runs, k=k)
    return None


register(Exercise(
    "03.accumulated_grads",
    "accumulated_grads(model, loss_fn, x, y, micro_batches) splits x and y into `micro_batches` "
    "equal chunks, runs forward + backward on each, and returns [p.grad for p in model.parameters()], "
    "which must equal the gradient of loss_fn(model(x), y) on the whole batch (loss_fn averages "
    "over its batch). The model's .grad may hold stale values from an earlier step, or be None "
    "(after zero_grad()), when you are called. A frozen parameter (requires_grad=False) keeps p.grad = None: "
    "its entry is None.",
    accumulated_grads_reference,
    [_acc_case(0, 8, 4, False), _acc_case(1, 12, 3, True), _acc_case(2, 6, 2, False), _acc_case(3, 4, 1, True),
     _acc_case(4, 6, 3, True, grads_none=True), _acc_case(5, 8, 2, False, frozen=True)],
    _acc_verify,
    [
        Mistake("no division by the number of micro-batches",
                "each micro-batch loss is already a mean over its chunk; adding k of them gives k times the "
                "full-batch gradient. Divide each loss by micro_batches before backward().",
                _acc_no_division,
                detect=lambda out, a, k: a[4] > 1 and (
                    _all_close(out, _scaled(_full(a), a[4])) or _all_close(out, _scaled(_full(a), a[4], _stale(a))))),
        Mistake("stale grads not zeroed first",
                "backward() ADDS to .grad, and .grad still held the previous step's gradients. Call "
                "model.zero_grad() once, before the loop.",
                _acc_stale, detect=lambda out, a, k: _all_close(out, _scaled(_full(a), 1, _stale(a)))),
        Mistake("zeroing inside the loop",
                "zero_grad() inside the loop wipes what the earlier micro-batches accumulated, so only the "
                "last chunk counts. Zero once before the loop, then let backward() accumulate.",
                _acc_zero_inside,
                detect=lambda out, a, k: a[4] > 1 and (
                    _all_close(out, _scaled(_last_chunk(a), 1 / a[4])) or _all_close(out, _last_chunk(a)))),
        Mistake("p.grad.zero_() when .grad is None",
                "after zero_grad() (set_to_none=True, the default) every .grad is None, and None has no "
                "zero_(). Call model.zero_grad() once before the loop (or skip parameters whose .grad is None).",
                _acc_grad_zero_, error_match="'NoneType' object has no attribute"),
        Mistake("divides a frozen parameter's None gradient",
                "a frozen parameter (requires_grad=False) gets no gradient: its p.grad stays None, and None "
                "cannot be divided. Skip it (`if p.grad is not None`), or divide each loss by micro_batches "
                "before backward() instead.",
                _acc_divide_grads, error_match="for /=: 'NoneType'"),
        Mistake("x.split(micro_batches) makes chunks of that SIZE",
                "x.split(n) cuts pieces of n rows each; x.chunk(n) cuts n pieces. Use x.chunk(micro_batches).",
                _acc_split, detect=lambda out, a, k: len(a[2]) // a[4] != a[4]
                and a[0].batch_sizes == [len(c) for c in a[2].split(a[4])] and _all_close(out, _split_grads(a))),
        Mistake("divides by the batch size instead of the number of micro-batches",
                "each micro-batch loss is already a mean over its chunk: divide it by micro_batches (the "
                "number of chunks), not by len(x), so that the k means average to the full-batch mean.",
                _acc_by_batch_size, detect=lambda out, a, k: len(a[2]) != a[4]
                and a[0].batch_sizes == [len(c) for c in a[2].chunk(a[4])]
                and _all_close(out, _scaled(_full(a), a[4] / len(a[2])))),
        Mistake("one backward() over the summed micro-batch losses",
                "summing the k losses and calling backward() once keeps every micro-batch's graph alive until "
                "the end, which is what accumulation avoids: call backward() on each micro-batch loss inside "
                "the loop, right after its forward.",
                _acc_one_backward, detect=lambda out, a, k: a[4] > 1 and a[0].backward_runs == 1
                and sorted(a[0].batch_sizes) == sorted(len(c) for c in a[2].chunk(a[4]))),
        Mistake("frozen parameters' None gradients dropped or replaced",
                "return [p.grad for p in model.parameters()]: one entry per parameter, in order, and a frozen "
                "parameter (requires_grad=False) keeps p.grad = None: neither filter it out nor give it zeros.",
                _acc_drops_frozen, detect=lambda out, a, k: _frozen_mishandled(out, a[0])),
        Mistake("the whole batch in one forward pass",
                "the task is gradient accumulation: one forward and backward per micro-batch, "
                "for xb, yb in zip(x.chunk(micro_batches), y.chunk(micro_batches)).",
                _acc_whole_batch, detect=lambda out, a, k: a[4] > 1 and len(a[2]) in a[0].batch_sizes),
        Mistake("zero_grad() after the loop",
                "zero_grad() clears what the loop accumulated; call it once before the loop, not after.",
                _acc_zero_after, detect=lambda out, a, k: isinstance(out, (list, tuple)) and len(out) > 0 and all(
                    g is None or (isinstance(g, torch.Tensor) and not g.any()) for g in out)),
        Mistake("backward inside torch.no_grad()",
                "no_grad() records no graph, so backward() has nothing to go through: run the forward "
                "passes with autograd on.",
                _acc_no_grad, error_match="does not require grad"),
    ],
))


# --- 03.gradient_at -------------------------------------------------------------------------------
# df/dx with autograd, leaving the caller's x untouched.

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


def _at_case(seed: int, shape: tuple[int, ...], text: str, fn, requires_grad: bool, stale: bool,
             dtype: torch.dtype = torch.float32):
    def make():
        x = torch.randn(*shape, generator=_gen(seed), dtype=dtype)
        if requires_grad:
            x.requires_grad_(True)
        if stale:
            x.grad = torch.ones_like(x)
        return (_ScalarFn(text, fn, x), x), {}
    return make


def _grad_changed(out, args, kwargs) -> bool:
    f, x = args
    if x.grad is None or f.grad_before is None:
        return (x.grad is None) != (f.grad_before is None)
    return not torch.equal(x.grad, f.grad_before)


def _at_clone_backward(f, x):
    leaf = x.clone().requires_grad_()     # not a leaf when x requires grad
    f(leaf).backward()
    return leaf.grad


def _at_detach_inplace(f, x):
    x.detach_()                           # the caller's x leaves its graph and stops requiring grad
    x.requires_grad_()
    (grad,) = torch.autograd.grad(f(x), x)
    x.requires_grad_(False)
    return grad


def _at_tuple(f, x):
    leaf = x.detach().clone().requires_grad_(True)
    return torch.autograd.grad(f(leaf), leaf)   # a tuple with one tensor


def _at_verify(out, ref, args, kwargs):
    f, x = args
    problem = compare_tensors(out, ref, name=t("gradient"))
    if problem:
        return problem
    if x.requires_grad != f.requires_grad_before:
        return t("your function changed x.requires_grad from {before} to {now}; "
                 "expected x untouched", before=f.requires_grad_before, now=x.requires_grad)
    if _grad_changed(out, args, kwargs):
        return t("your function left a gradient in x.grad; expected x untouched")
    return None


register(Exercise(
    "03.gradient_at",
    "gradient_at(f, x) returns df/dx at x (same shape as x) for a function f that returns a scalar. "
    "x may or may not require grad and may already have a .grad: leave x exactly as it was "
    "(same requires_grad, same .grad). The gradient has x's dtype.",
    gradient_at_reference,
    [_at_case(30, (4,), "f(x) = (x.sin() * x).sum()", lambda x: (x.sin() * x).sum(), False, False),
     _at_case(31, (3,), "f(x) = (x ** 3).sum()", lambda x: (x ** 3).sum(), True, True),
     _at_case(32, (2, 2), "f(x) = x.exp().mean()", lambda x: x.exp().mean(), True, False),
     _at_case(33, (3,), "f(x) = (x.cos() ** 2).sum(), x float64", lambda x: (x.cos() ** 2).sum(), False, False,
              torch.float64)],
    _at_verify,
    [
        Mistake("backward() on x.clone(), which is not a leaf when x requires grad",
                "when x requires grad, x.clone() is a non-leaf (it has a grad_fn): its .grad stays None, which "
                "is what you returned, and backward() adds the gradient into the caller's x.grad instead. "
                "Start from x.detach().clone().requires_grad_(True) and use torch.autograd.grad.",
                _at_clone_backward, detect=lambda out, a, k: out is None and a[0].requires_grad_before
                and _grad_changed(out, a, k)),
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
                _at_flip_flag, detect=lambda out, a, k: a[1].requires_grad and not a[0].requires_grad_before),
        Mistake("switches requires_grad off on the caller's x (detach_() or requires_grad_(False))",
                "x.detach_() and x.requires_grad_(False) change the caller's tensor, which then no longer "
                "requires grad; leave x alone and work on a copy: x.detach().clone().requires_grad_(True).",
                _at_detach_inplace, detect=lambda out, a, k: not a[1].requires_grad and a[0].requires_grad_before),
        Mistake("returns the tuple from torch.autograd.grad",
                "torch.autograd.grad returns a tuple with one gradient per input; unpack it: "
                "(grad,) = torch.autograd.grad(f(leaf), leaf), or take [0].",
                _at_tuple, detect=lambda out, a, k: isinstance(out, tuple) and len(out) == 1),
    ],
))


# --- 03.finite_difference_grad --------------------------------------------------------------------
# Central differences, one element at a time.

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


def _fd_half_step(f, x, eps=1e-6):
    return 2 * finite_difference_grad_reference(f, x, eps)     # divides by eps, not 2 * eps


def _fd_fixed_eps(f, x, eps=1e-6):
    return finite_difference_grad_reference(f, x, 1e-6)       # the eps argument is ignored


def _fd_exact(f, x, eps=1e-6):
    leaf = x.detach().clone().requires_grad_(True)
    return torch.autograd.grad(f(leaf), leaf)[0]


def _fd_row_index(f, x, eps=1e-6):
    grad = torch.zeros_like(x)
    for i in range(x.numel()):
        step = torch.zeros_like(x)
        step[i] = eps                                          # x[i] is a ROW when x is 2-D
        grad[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


def _fd_sign_flipped(f, x, eps=1e-6):
    return -finite_difference_grad_reference(f, x, eps)


def _fd_expected(args, kwargs) -> torch.Tensor:
    """The estimate on the x the case was made with (even if the candidate changed its x)."""
    return finite_difference_grad_reference(args[0], args[0].x_before, kwargs["eps"])


def _fd_rows(f, x, eps=1e-6):
    grad = torch.zeros_like(x)
    for i in range(len(x)):
        step = torch.zeros_like(x)
        step[i] = eps                                          # the whole row i at once
        grad[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


def _fd_first_len(f, x, eps=1e-6):
    grad = torch.zeros_like(x)
    for i in range(len(x)):                                    # only the first len(x) elements
        step = torch.zeros_like(x)
        step.view(-1)[i] = eps
        grad.view(-1)[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


def _fd_all_but_last(f, x, eps=1e-6):
    grad = torch.zeros_like(x)
    for i in range(x.numel() - 1):
        step = torch.zeros_like(x)
        step.view(-1)[i] = eps
        grad.view(-1)[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


def _fd_only_first(out, expected: torch.Tensor, count: int) -> bool:
    """The first `count` elements are the estimate and the others still 0 (a loop that stopped early)."""
    if not (isinstance(out, torch.Tensor) and out.shape == expected.shape) or count >= expected.numel():
        return False
    flat, want = out.detach().reshape(-1).double(), expected.reshape(-1).double()
    return (torch.allclose(flat[:count], want[:count], rtol=1e-6, atol=1e-8) and not flat[count:].any()
            and bool(want[count:].any()))


def _fd_close(out, expected, atol=1e-8, rtol=1e-6) -> bool:
    return (isinstance(out, torch.Tensor) and out.shape == expected.shape
            and torch.allclose(out.detach().double(), expected.double(), rtol=rtol, atol=atol))


def _fd_float32(f, x, eps=1e-6):
    return finite_difference_grad_reference(f, x.float(), eps)


def _fd_case(seed: int, shape: tuple[int, ...], eps: float, text: str, fn):
    def make():
        x = torch.randn(*shape, dtype=torch.float64, generator=_gen(seed))
        return (_ScalarFn(text, fn, x), x), {"eps": eps}
    return make


def _fd_verify(out, ref, args, kwargs):
    f, x = args
    problem = compare_tensors(out, ref, atol=1e-8, rtol=1e-6, name=t("finite-difference gradient"))
    if problem:
        return problem
    if not torch.equal(x, f.x_before):
        return t("your function changed x (some elements were not put back exactly); expected x untouched")
    return None


register(Exercise(
    "03.finite_difference_grad",
    "finite_difference_grad(f, x, eps=1e-6) estimates df/dx for a scalar function f by central "
    "differences, one element at a time: (f(x + eps*e_i) - f(x - eps*e_i)) / (2*eps), where e_i is 1 at "
    "element i and 0 elsewhere. x is float64; return a float64 tensor shaped like x and leave x unchanged.",
    finite_difference_grad_reference,
    [_fd_case(40, (3,), 1e-4, "f(x) = (x.sin() * x.exp()).sum()", lambda x: (x.sin() * x.exp()).sum()),
     _fd_case(41, (2, 3), 1e-5, "f(x) = (x ** 3).sum() + x.prod()", lambda x: (x ** 3).sum() + x.prod()),
     _fd_case(42, (4,), 1e-6, "f(x) = torch.logsumexp(x, 0)", lambda x: torch.logsumexp(x, 0)),
     # a large eps: the estimate differs visibly from the exact gradient, so eps must really be used
     _fd_case(43, (2, 2), 0.3, "f(x) = (x.sin() * x.exp()).sum()", lambda x: (x.sin() * x.exp()).sum())],
    _fd_verify,
    [
        Mistake("changes x in place",
                "nudging x[i] in place and not restoring it shifts every later evaluation (and the caller's "
                "x). Build x + step and x - step as new tensors instead.",
                _fd_inplace, detect=lambda out, a, k: not torch.equal(a[1], a[0].x_before)),
        Mistake("sign flipped: f(x - eps*e_i) - f(x + eps*e_i)",
                "the slope is (f(x + eps*e_i) - f(x - eps*e_i)) / (2*eps): the value at the point AHEAD minus "
                "the value behind; yours has the opposite sign.",
                _fd_sign_flipped, detect=lambda out, a, k: _fd_close(out, -_fd_expected(a, k))
                and not _fd_close(out, _fd_expected(a, k))),
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
        Mistake("divides by eps instead of 2 * eps",
                "the two evaluation points x + eps*e_i and x - eps*e_i are 2*eps apart: divide by (2 * eps).",
                _fd_half_step, detect=lambda out, a, k: _fd_close(out, _fd_half_step(a[0], a[1], k["eps"]))),
        Mistake("eps argument ignored",
                "use the eps you are given (the checker passes different values), not a constant of your own.",
                _fd_fixed_eps, detect=lambda out, a, k: k["eps"] != 1e-6
                and _fd_close(out, _fd_fixed_eps(a[0], a[0].x_before, k["eps"]))
                and not _fd_close(out, _fd_expected(a, k))
                and not _fd_close(out, _fd_exact(a[0], a[1]), atol=1e-13, rtol=1e-12)),
        Mistake("exact gradient (autograd) instead of the central-difference estimate",
                "the task is the numerical estimate (f(x + eps*e_i) - f(x - eps*e_i)) / (2*eps) with the given "
                "eps, which differs from the exact gradient when eps is large; autograd is what it checks.",
                _fd_exact, detect=lambda out, a, k: _fd_close(out, _fd_exact(a[0], a[1]), atol=1e-13, rtol=1e-12)),
        Mistake("x[i] is a row, not element i",
                "for a 2-D x, x[i] indexes a whole row, so step[i] = eps perturbs the entire row at once (and a loop "
                "up to numel() runs out of rows); address "
                "element i of the flattened tensor: step.view(-1)[i] = eps and grad.view(-1)[i] = ...",
                _fd_row_index, error_match="out of bounds",
                detect=lambda out, a, k: a[1].dim() >= 2 and _fd_close(out, _fd_rows(a[0], a[0].x_before, k["eps"]))
                and not _fd_close(out, _fd_expected(a, k))),
        Mistake("loop over len(x) (the rows) instead of x.numel() elements",
                "len(x) is the size of the FIRST dim only; a 2-D x has x.numel() elements, each needing its "
                "own estimate: for i in range(x.numel()), with step.view(-1)[i] = eps.",
                _fd_first_len, detect=lambda out, a, k: _fd_only_first(out, _fd_expected(a, k), len(a[1]))),
        Mistake("the last element never computed (range(x.numel() - 1))",
                "range(n) already stops at n - 1: loop over range(x.numel()) so the last element gets its estimate.",
                _fd_all_but_last, detect=lambda out, a, k: _fd_only_first(out, _fd_expected(a, k), a[1].numel() - 1)),
    ],
))
