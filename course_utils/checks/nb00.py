"""Checkers of notebook 00 (welcome), in notebook order: ``00.double``, ``00.shrink_until_small``,
``00.layer_shapes``.

The inputs of ``00.double`` are remembered with a copy when their case is built (``_remember``), so
verify can tell a function that changed its input in place from one that computed a wrong value.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn
from torch.utils.weak import WeakTensorKeyDictionary

from course_utils.exercises import Exercise, Mistake, compare_tensors, describe, register
from course_utils.i18n import t


def _randn(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


#: input tensor -> a copy taken when its test case was built (to see whether a candidate changed it)
_ORIGINAL: WeakTensorKeyDictionary = WeakTensorKeyDictionary()


def _remember(x: torch.Tensor) -> torch.Tensor:
    _ORIGINAL[x] = x.clone()
    return x


def _input_changed(x: Any) -> bool:
    before = _ORIGINAL.get(x) if isinstance(x, torch.Tensor) else None
    return before is not None and not torch.equal(x, before)


# --- 00.double ---------------------------------------------------------------------------

def double_reference(x: torch.Tensor) -> torch.Tensor:
    return 2 * x


def _double_inplace(x: torch.Tensor) -> torch.Tensor:
    x.mul_(2)
    return x


def _double_number(x: torch.Tensor) -> Any:
    return (2 * x).tolist()


def _double_inplace_then_copy(x: torch.Tensor) -> torch.Tensor:
    x *= 2
    return x.clone()  # a new tensor, but the caller's x was overwritten first


def _double_cases():
    def make(seed, shape, dtype):
        return (_remember(_randn(seed, *shape).to(dtype)),), {}
    return [lambda s=s, shape=shape, dtype=dtype: make(s, shape, dtype)
            for s, shape, dtype in [(1, (3,), torch.float32), (2, (2, 4), torch.float32), (3, (5,), torch.float32),
                                    (4, (1, 3, 1), torch.float32),     # size-1 dims stay
                                    (5, (2, 3), torch.float64)]]       # float64 stays float64


def _double_verify(out, ref, args, kwargs):
    (x,) = args
    changed = _input_changed(x)
    if changed and isinstance(out, torch.Tensor) and out.data_ptr() == x.data_ptr():
        return t("your function changed its input in place and returned it; expected a new tensor")
    if changed:
        return t("your function changed its input in place (x no longer holds the values it was "
                 "called with); expected x unchanged")
    if isinstance(out, torch.Tensor) and out.shape == ref.shape and out.dtype != ref.dtype:
        return t("expected result with dtype {want} (x's dtype), found {got}", want=ref.dtype, got=out.dtype)
    return compare_tensors(out, ref)


def _modified_input(out, args, kwargs) -> bool:
    return _input_changed(args[0])


def _double_value_is(wrong: Callable[[torch.Tensor], torch.Tensor]):
    """The candidate's output equals what `wrong` computes, which differs from 2 * x on this input."""
    def detect(out, args, kwargs) -> bool:
        x = args[0]
        expected, bad = 2 * x, wrong(x)
        return (isinstance(out, torch.Tensor) and out.shape == bad.shape and not torch.equal(bad, expected)
                and out.shape == expected.shape
                and torch.allclose(out.double(), bad.double(), atol=1e-6, rtol=1e-5))
    return detect


def _double_square(x):
    return x ** 2


def _double_plus_two(x):
    return x + 2


def _double_same(x):
    return x


def _double_squeeze(x):
    return 2 * x.squeeze()


def _double_float(x):
    return (2 * x).float()


register(Exercise(
    "00.double",
    "double(x) returns a NEW tensor equal to 2 * x and leaves x unchanged.",
    double_reference,
    _double_cases(),
    _double_verify,
    [
        Mistake("modifies the input in place",
                "x.mul_(2) or x *= 2 overwrites the caller's tensor (even if you return a copy "
                "afterwards); write `return 2 * x` instead.",
                _double_inplace, detect=_modified_input),
        Mistake("returns a Python list/number",
                "keep the result a tensor: no .tolist() or .item() at the end.",
                _double_number,
                detect=lambda out, a, k: not isinstance(out, torch.Tensor)),
        Mistake("squares x (x ** 2) instead of doubling it",
                "x ** 2 multiplies x by ITSELF; doubling multiplies by 2: 2 * x (or x + x).",
                _double_square, detect=_double_value_is(_double_square)),
        Mistake("adds 2 (x + 2) instead of doubling",
                "x + 2 shifts every entry by 2; doubling multiplies: 2 * x (or x + x).",
                _double_plus_two, detect=_double_value_is(_double_plus_two)),
        Mistake("returns x unchanged",
                "the result must be twice x: return 2 * x (a new tensor), not x itself.",
                _double_same, detect=lambda out, a, k: isinstance(out, torch.Tensor) and out is a[0]
                and not _input_changed(a[0])),
        Mistake("squeeze() drops size-1 dims",
                "x.squeeze() removes EVERY size-1 dim, so the result no longer has x's shape; "
                "leave the shape alone: 2 * x.",
                _double_squeeze, detect=lambda out, a, k: isinstance(out, torch.Tensor)
                and a[0].squeeze().shape != a[0].shape and out.shape == a[0].squeeze().shape),
        Mistake("changes the dtype",
                ".float() (or dtype=torch.float32) turns a float64 x into float32; "
                "2 * x keeps x's dtype.",
                _double_float, detect=lambda out, a, k: isinstance(out, torch.Tensor) and out.dtype != a[0].dtype),
    ],
))


# --- 00.shrink_until_small -----------------------------------------------------------------

def shrink_until_small_reference(x: torch.Tensor, layer: nn.Module, max_steps: int = 10
                                 ) -> tuple[torch.Tensor, int]:
    steps = 0
    while x.norm() > 1.0 and steps < max_steps:
        x = layer(x)
        steps += 1
    return x, steps


def _shrink_fixed(x, layer, max_steps=10):
    for _ in range(max_steps):
        x = layer(x)
    return x, max_steps


def _shrink_do_while(x, layer, max_steps=10):
    steps = 0
    while True:
        x = layer(x)
        steps += 1
        if x.norm() <= 1.0 or steps >= max_steps:
            return x, steps


def _shrink_forgets_x(x, layer, max_steps=10):
    steps = 0
    while x.norm() > 1.0 and steps < max_steps:
        layer(x)  # the result is thrown away: x never changes
        steps += 1
    return x, steps


def _shrink_at_or_above(x, layer, max_steps=10):
    steps = 0
    while x.norm() >= 1.0 and steps < max_steps:
        x = layer(x)
        steps += 1
    return x, steps


def _shrink_no_limit(x, layer, max_steps=10):
    steps = 0
    while x.norm() > 1.0 and steps <= max_steps:
        x = layer(x)
        steps += 1
    return x, steps


def _shrink_no_grad(x, layer, max_steps=10):
    with torch.no_grad():
        return shrink_until_small_reference(x, layer, max_steps)


def _shrink_swapped(x, layer, max_steps=10):
    out, steps = shrink_until_small_reference(x, layer, max_steps)
    return steps, out


class _Scale(nn.Module):
    """One layer like ShrinkNet's: multiplies by a learnable scale (0.5), so gradients have somewhere to go."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(0.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scale * x


def _shrink_cases():
    # (input, max_steps). 2.0 * ones(4): norm 4 -> 2 -> exactly 1 (stop there: 1 is not > 1);
    # 0.5 * ones(4): the norm is exactly 1 from the start; 0.4 * ones(3, 4): the whole tensor's norm is 1.39
    # although every row's norm is 0.8; max_steps = 0: no application at all.
    def make(scale: float, shape: tuple[int, ...], steps: int):
        return lambda: ((scale * torch.ones(*shape), _Scale()), {"max_steps": steps})
    return [make(scale, shape, steps) for scale, shape, steps in
            [(3.0, (4,), 10), (0.2, (4,), 10), (100.0, (4,), 3), (40.0, (4,), 10), (2.0, (4,), 10), (0.5, (4,), 10),
             (0.4, (3, 4), 10), (40.0, (4,), 0)]]


def _scale_grad(y: torch.Tensor, layer: nn.Module) -> torch.Tensor | None:
    (grad,) = torch.autograd.grad(y.sum(), [layer.scale], allow_unused=True)
    return grad


def _shrink_verify(out, ref, args, kwargs):
    if not (isinstance(out, tuple) and len(out) == 2):
        return t("expected a tuple (x, steps), found {got}", got=describe(out))
    y, steps = out
    if isinstance(y, int) and isinstance(steps, torch.Tensor):
        return t("expected (x, steps) in this order, found (steps, x)")
    if isinstance(steps, bool) or not isinstance(steps, int):
        return t("expected steps to be a Python int (count with steps = 0; steps += 1), found {got}",
                 got=describe(steps))
    x, layer = args
    limit = kwargs.get("max_steps", 10)
    if steps > limit:
        return t("expected at most max_steps = {limit} layer applications, found {steps}", limit=limit, steps=steps)
    if steps != ref[1]:
        return t("expected {want} layer applications for an input of shape {shape} with x.norm() = "
                 "{norm:.2f} (apply the layer while x.norm() > 1, the norm of the whole tensor, at most "
                 "{limit} times), found {steps}", want=ref[1], shape=tuple(x.shape), norm=x.norm(), limit=limit,
                 steps=steps)
    problem = compare_tensors(y, ref[0], name=t("output"))
    if problem or steps == 0:
        return problem
    if not y.requires_grad:
        return t("expected the output to carry gradients back through the {steps} applied layer(s), found a "
                 "tensor that does not require grad: no torch.no_grad() around the loop and no .detach()",
                 steps=steps)
    got = _scale_grad(y, layer)
    want = _scale_grad(shrink_until_small_reference(x, layer, limit)[0], layer)
    if got is None or not torch.allclose(got, want, rtol=1e-5, atol=1e-6):
        found = t("no gradient") if got is None else f"{got.item():.4g}"
        return t("expected the gradient of output.sum() with respect to the layer's weight to be {want:.4g} "
                 "(backpropagation through all {steps} applied steps), found {found}", want=want.item(),
                 steps=steps, found=found)
    return None


def _norm_hits_one(args, kwargs) -> bool:
    """The case whose norm lands exactly on 1 (where `>= 1` differs from `> 1`)."""
    x, layer = args
    for _ in range(kwargs.get("max_steps", 10) + 1):
        if x.norm() == 1.0:
            return True
        if x.norm() < 1.0:
            return False
        x = layer(x)
    return False


def _steps(out):
    return out[1] if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], int) else None


register(Exercise(
    "00.shrink_until_small",
    "shrink_until_small(x, layer, max_steps) applies `layer` while x.norm() > 1 "
    "(at most max_steps times) and returns the tuple (x, number_of_applications); gradients flow back "
    "through the applied layers.",
    shrink_until_small_reference,
    _shrink_cases(),
    _shrink_verify,
    [
        Mistake("fixed number of steps",
                "the depth must depend on the input: test x.norm() > 1 in a `while` loop.",
                _shrink_fixed,
                detect=lambda out, a, k: _steps(out) == k.get("max_steps", 10)
                and not torch.equal(out[0], a[0])
                and shrink_until_small_reference(a[0], a[1], k.get("max_steps", 10))[1] < _steps(out)),
        Mistake("applies the layer before testing the condition",
                "an input that is already small must pass through unchanged (0 steps): "
                "check the condition first, then apply the layer.",
                _shrink_do_while,
                detect=lambda out, a, k: _steps(out) == 1 and a[0].norm() <= 1.0),
        Mistake("stops at >= 1 instead of > 1",
                "a norm of exactly 1 is small enough: the loop condition is x.norm() > 1, not >= 1.",
                _shrink_at_or_above,
                detect=lambda out, a, k: _norm_hits_one(a, k) and _steps(out) is not None
                and _steps(out) == shrink_until_small_reference(a[0], a[1], k.get("max_steps", 10))[1] + 1),
        Mistake("max_steps not respected",
                "stop after max_steps applications: `steps < max_steps` in the loop condition "
                "(not `<=`, and not left out).",
                _shrink_no_limit,
                detect=lambda out, a, k: _steps(out) is not None and _steps(out) > k.get("max_steps", 10)),
        Mistake("the layer's output is thrown away",
                "`layer(x)` alone computes a new tensor and drops it; keep it: x = layer(x).",
                _shrink_forgets_x,
                detect=lambda out, a, k: _steps(out) is not None and _steps(out) > 0
                and isinstance(out[0], torch.Tensor) and torch.equal(out[0], a[0])),
        Mistake("the loop runs under torch.no_grad() (or detaches x)",
                "backpropagation must go through the steps that were taken (as in ShrinkNet): run the loop "
                "with autograd on, without torch.no_grad() and without .detach().",
                _shrink_no_grad, detect=lambda out, a, k: _steps(out) is not None and _steps(out) > 0
                and isinstance(out[0], torch.Tensor) and not out[0].requires_grad),
        Mistake("returns (steps, x)",
                "return the tensor first and the count second: return x, steps.",
                _shrink_swapped, detect=lambda out, a, k: isinstance(out, tuple) and len(out) == 2
                and isinstance(out[0], int) and isinstance(out[1], torch.Tensor)),
    ],
))


# --- 00.layer_shapes -------------------------------------------------------------------------

def layer_shapes_reference(model: nn.Sequential, x: torch.Tensor) -> list[tuple[int, ...]]:
    shapes = []
    for layer in model:
        x = layer(x)
        shapes.append(tuple(x.shape))
    return shapes


def _shapes_inputs(model, x):
    shapes = []
    for layer in model:
        shapes.append(tuple(x.shape))
        x = layer(x)
    return shapes


def _shapes_final_only(model, x):
    return [tuple(model(x).shape)]


def _shapes_modules(model, x):
    shapes = []
    for layer in model.modules():  # the model itself comes first
        x = layer(x)
        shapes.append(tuple(x.shape))
    return shapes


def _shapes_original_x(model, x):
    return [tuple(layer(x).shape) for layer in model]  # every layer gets the ORIGINAL x


def _shapes_lists(model, x):
    return [list(s) for s in layer_shapes_reference(model, x)]


def _leaf_shapes(model, x):
    shapes = []
    for name, module in model.named_modules():
        if name and not list(module.children()):   # leaves: a nested Sequential is opened up
            x = module(x)
            shapes.append(tuple(x.shape))
    return shapes


def _shapes_input_first(model, x):
    return [tuple(x.shape)] + layer_shapes_reference(model, x)


def _shapes_cases():
    def make(seed, batch, nested=False, eval_mode=False):
        with torch.random.fork_rng(devices=[]):     # model init uses the global generator: isolate it
            torch.manual_seed(seed)
            if nested:   # one layer of the model is itself a Sequential: it counts as ONE layer
                model = nn.Sequential(nn.Linear(6, 5), nn.Sequential(nn.ReLU(), nn.Linear(5, 4)), nn.Flatten(0))
            else:
                model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Dropout(0.5), nn.Linear(5, 3), nn.Flatten(0))
        if eval_mode:
            model.eval()
        return (model, _randn(seed, batch, 6)), {}
    return [lambda: make(0, 2), lambda: make(1, 7), lambda: make(2, 1), lambda: make(3, 3, nested=True),
            lambda: make(4, 2, eval_mode=True)]


def _shapes_verify(out, ref, args, kwargs):
    if not isinstance(out, list):
        return t("expected a list of shapes (one tuple per layer), found {got}", got=describe(out))
    if len(out) != len(ref):
        return t("expected {want} shapes (one per layer of the model), found {n}: {got}", want=len(ref), n=len(out),
                 got=out)
    for index, shape in enumerate(out):
        if not isinstance(shape, tuple):  # torch.Size is a tuple
            return t("expected each shape as a tuple (tuple(x.shape) or x.shape), found entry {index} "
                     "as {got}", index=index, got=describe(shape))
    out = [tuple(s) for s in out]
    if out != ref:
        return t("expected {want}, found {got}", want=ref, got=out)
    return None


register(Exercise(
    "00.layer_shapes",
    "layer_shapes(model, x) runs x through an nn.Sequential layer by layer and returns the "
    "list of output shapes (each a tuple), one per layer.",
    layer_shapes_reference,
    _shapes_cases(),
    _shapes_verify,
    [
        Mistake("records the input shape first",
                "the list holds one OUTPUT shape per layer: do not start it with x.shape; append "
                "tuple(x.shape) only after each `x = layer(x)`.",
                _shapes_input_first,
                detect=lambda out, a, k: isinstance(out, list) and len(out) == len(a[0]) + 1
                and [tuple(s) for s in out if isinstance(s, tuple)] == _shapes_input_first(*a)),
        Mistake("records input shapes instead of output shapes",
                "append the shape AFTER `x = layer(x)`, so each entry is what that layer produced.",
                _shapes_inputs,
                detect=lambda out, a, k: isinstance(out, list) and [tuple(s) for s in out
                                                                    if isinstance(s, tuple)] == _shapes_inputs(*a)),
        Mistake("only the final shape",
                "loop over the layers (`for layer in model:`) instead of calling model(x) once.",
                _shapes_final_only,
                detect=lambda out, a, k: isinstance(out, list) and len(out) == 1 and len(a[0]) > 1),
        Mistake("each layer applied to the original x",
                "`layer(x)` without keeping the result feeds the ORIGINAL x to every layer; "
                "write x = layer(x), then record x.shape.",
                _shapes_original_x, error_match="shapes cannot be multiplied"),
        Mistake("iterates model.modules() (the model itself comes first)",
                "model.modules() yields the Sequential itself before its layers, so the whole model "
                "runs first; iterate over the layers: `for layer in model:` (or model.children()).",
                _shapes_modules,
                detect=lambda out, a, k: isinstance(out, list) and len(out) == len(a[0]) + 1
                and len(out) > 0 and out[0] == tuple(a[0](a[1]).shape)),
        Mistake("opens up nested containers (leaf modules instead of the model's layers)",
                "a layer of an nn.Sequential may itself be a container (a nested nn.Sequential): it is "
                "ONE layer. Iterate over the model's own layers, `for layer in model:`, not named_modules().",
                _leaf_shapes,
                detect=lambda out, a, k: isinstance(out, list) and len(out) != len(a[0])
                and [tuple(s) for s in out if isinstance(s, tuple)] == _leaf_shapes(*a)),
        Mistake("shapes as lists",
                "keep each shape a tuple: tuple(x.shape) (x.shape itself, a torch.Size, is a tuple too); "
                "list(x.shape) is a list.",
                _shapes_lists,
                detect=lambda out, a, k: isinstance(out, list) and any(isinstance(s, list) for s in out)),
    ],
))
