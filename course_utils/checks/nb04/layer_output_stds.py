"""``04.layer_output_stds``: forward hooks record each leaf module's output std."""

from __future__ import annotations

import math
from typing import Any, Callable

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, describe, register

from ._common import _seeded


def _stds_with_hooks(model: nn.Module, x: torch.Tensor, of_input: bool = False, bind_name: bool = True,
                     remove: bool = True, as_float: bool = True) -> dict[str, Any]:
    """The reference (default arguments) and, with one flag flipped, a typical mistake."""
    stds: dict[str, Any] = {}
    handles = []
    for name, module in model.named_modules():
        if name and not list(module.children()):
            def hook(m, inputs, output, name=name if bind_name else None):
                value = (inputs[0] if of_input else output).detach().std()
                stds[name if bind_name else last_name] = value.item() if as_float else value
            handles.append(module.register_forward_hook(hook))
            last_name = name  # what a closure without a bound name sees when it finally runs
    try:
        with torch.no_grad():
            model(x)
    finally:
        for handle in handles if remove else []:
            handle.remove()
    return stds


def layer_output_stds_reference(model: nn.Module, x: torch.Tensor) -> dict[str, float]:
    return _stds_with_hooks(model, x)


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 12), nn.ReLU())
        self.head = nn.Linear(12, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def _stds_case(build: Callable[[], nn.Module], width: int, seed: int):
    return _seeded(lambda: (build().eval(), torch.randn(32, width)), seed)


def _stds_verify(out, ref, args, kwargs):
    if not isinstance(out, dict):
        return f"expected a dict {{layer name: std}}, found {describe(out)}"
    if sorted(out) != sorted(ref):
        return f"expected keys {sorted(ref)} (one per leaf module), found {sorted(out)}"
    for key, want in ref.items():
        if not isinstance(out[key], float):
            return f"expected a Python float for {key!r}, found {describe(out[key])}"
        if not math.isclose(out[key], want, rel_tol=1e-4, abs_tol=1e-6):
            return f"expected std {want:.4f} for the output of {key!r}, found {out[key]:.4f}"
    left = sum(len(m._forward_hooks) for m in args[0].modules())
    return f"the model still has {left} forward hook(s) after your function returned; expected none" if left else None


register(Exercise(
    "04.layer_output_stds",
    "layer_output_stds(model, x) runs model(x) once with forward hooks and returns {name: std of "
    "that module's output as a float} for every leaf submodule (named as in named_modules()), "
    "removing its hooks afterwards.",
    layer_output_stds_reference,
    [_stds_case(lambda: nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 4), nn.Tanh()), 5, 20),
     _stds_case(_Block, 6, 21)],
    _stds_verify,
    [
        Mistake("hooks not removed",
                "register_forward_hook returns a handle: keep them all and call handle.remove() "
                "(in a `finally:`), or the hooks fire on every later forward pass.",
                lambda model, x: _stds_with_hooks(model, x, remove=False)),
        Mistake("records the input instead of the output",
                "a forward hook is called as hook(module, inputs, output): `inputs` is a tuple of "
                "what went in, `output` is what the module produced.",
                lambda model, x: _stds_with_hooks(model, x, of_input=True)),
        Mistake("late-binding name in the hook",
                "a function defined in a loop sees the loop variable's LAST value when it runs; bind "
                "it now: `lambda m, i, o, name=name: ...` or a small factory function.",
                lambda model, x: _stds_with_hooks(model, x, bind_name=False),
                detect=lambda out, a, k: isinstance(out, dict) and len(out) == 1),
        Mistake("returns tensors instead of floats",
                "turn each 0-d tensor into a Python number with .item().",
                lambda model, x: _stds_with_hooks(model, x, as_float=False),
                detect=lambda out, a, k: isinstance(out, dict)
                and any(isinstance(v, torch.Tensor) for v in out.values())),
    ],
))
