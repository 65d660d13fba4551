"""Checkers of notebook 00 (welcome), in notebook order: ``00.double``, ``00.shrink_until_small``,
``00.layer_shapes``.

The inputs of ``00.double`` are remembered with a copy when their case is built (``_remember``), so
verify can tell a function that changed its input in place from one that computed a wrong value.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.utils.weak import WeakTensorKeyDictionary

from course_utils.exercises import Exercise, Mistake, compare_tensors, describe, register


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
    return [lambda s=s, shape=shape: ((_remember(_randn(s, *shape)),), {})
            for s, shape in [(1, (3,)), (2, (2, 4)), (3, (5,))]]


def _double_verify(out, ref, args, kwargs):
    (x,) = args
    changed = _input_changed(x)
    if changed and isinstance(out, torch.Tensor) and out.data_ptr() == x.data_ptr():
        return "your function changed its input in place and returned it; expected a new tensor"
    if changed:
        return ("your function changed its input in place (x no longer holds the values it was "
                "called with); expected x unchanged")
    return compare_tensors(out, ref)


def _modified_input(out, args, kwargs) -> bool:
    return _input_changed(args[0])


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


class _Halve(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * x


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


def _shrink_swapped(x, layer, max_steps=10):
    out, steps = shrink_until_small_reference(x, layer, max_steps)
    return steps, out


def _shrink_cases():
    # (scale, max_steps): the input is scale * ones(4), whose norm is 2 * scale.
    # 2.0: norm 4 -> 2 -> exactly 1 (stop there: 1 is not > 1); 0.5: the norm is exactly 1 from the start.
    return [lambda scale=scale, steps=steps: ((scale * torch.ones(4), _Halve()), {"max_steps": steps})
            for scale, steps in [(3.0, 10), (0.2, 10), (100.0, 3), (40.0, 10), (2.0, 10), (0.5, 10)]]


def _shrink_verify(out, ref, args, kwargs):
    if not (isinstance(out, tuple) and len(out) == 2):
        return f"expected a tuple (x, steps), found {describe(out)}"
    y, steps = out
    if isinstance(y, int) and isinstance(steps, torch.Tensor):
        return "expected (x, steps) in this order, found (steps, x)"
    if isinstance(steps, bool) or not isinstance(steps, int):
        return f"expected steps to be a Python int (count with steps = 0; steps += 1), found {describe(steps)}"
    x = args[0]
    limit = kwargs.get("max_steps", 10)
    if steps > limit:
        return f"expected at most max_steps = {limit} layer applications, found {steps}"
    if steps != ref[1]:
        return (f"expected {ref[1]} layer applications for an input with x.norm() = {x.norm():.2f} "
                f"(apply the layer while x.norm() > 1, at most {limit} times), found {steps}")
    return compare_tensors(y, ref[0], name="output")


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
    "(at most max_steps times) and returns the tuple (x, number_of_applications).",
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


def _shapes_cases():
    def make(seed, batch):
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3), nn.Flatten(0))
        return (model, _randn(seed, batch, 6)), {}
    return [lambda: make(0, 2), lambda: make(1, 7), lambda: make(2, 1)]


def _shapes_verify(out, ref, args, kwargs):
    if not isinstance(out, list):
        return f"expected a list of shapes (one tuple per layer), found {describe(out)}"
    if len(out) != len(ref):
        return f"expected {len(ref)} shapes (one per layer of the model), found {len(out)}: {out}"
    for index, shape in enumerate(out):
        if not isinstance(shape, tuple):  # torch.Size is a tuple
            return (f"expected each shape as a tuple (tuple(x.shape) or x.shape), found entry {index} "
                    f"as {describe(shape)}")
    out = [tuple(s) for s in out]
    if out != ref:
        return f"expected {ref}, found {out}"
    return None


register(Exercise(
    "00.layer_shapes",
    "layer_shapes(model, x) runs x through an nn.Sequential layer by layer and returns the "
    "list of output shapes (each a tuple), one per layer.",
    layer_shapes_reference,
    _shapes_cases(),
    _shapes_verify,
    [
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
                detect=lambda out, a, k: isinstance(out, list) and len(out) == len(a[0]) + 1),
        Mistake("shapes as lists",
                "keep each shape a tuple: tuple(x.shape) (x.shape itself, a torch.Size, is a tuple too); "
                "list(x.shape) is a list.",
                _shapes_lists,
                detect=lambda out, a, k: isinstance(out, list) and any(isinstance(s, list) for s in out)),
    ],
))
