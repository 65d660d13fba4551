"""09.nonfinite_layers: find the leaf modules whose output has NaN or Inf, with forward hooks."""

from __future__ import annotations

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, describe, register


# --- 09.nonfinite_layers --------------------------------------------------------------------------


def nonfinite_layers_reference(model: nn.Module, x: torch.Tensor) -> list[str]:
    found: list[str] = []

    def make_hook(name: str):
        def hook(module, inputs, output):
            if isinstance(output, torch.Tensor) and not torch.isfinite(output).all():
                found.append(name)
        return hook

    leaves = [(name, m) for name, m in model.named_modules() if not list(m.children())]
    handles = [m.register_forward_hook(make_hook(name)) for name, m in leaves]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for handle in handles:
            handle.remove()
    return found


def _nonfinite_hooks_left(model, x):
    found = []
    for name, m in model.named_modules():
        if not list(m.children()):
            m.register_forward_hook(lambda mod, i, o, name=name: found.append(name)
                                    if not torch.isfinite(o).all() else None)
    with torch.no_grad():
        model(x)
    return found


def _nonfinite_nan_only(model, x):
    found = []
    handles = [m.register_forward_hook(lambda mod, i, o, name=name: found.append(name)
                                       if torch.isnan(o).any() else None)
               for name, m in model.named_modules() if not list(m.children())]
    with torch.no_grad():
        model(x)
    for h in handles:
        h.remove()
    return found


def _nonfinite_registration_order(model, x):
    bad = set(nonfinite_layers_reference(model, x))
    return [name for name, m in model.named_modules() if name in bad]


def _nonfinite_all_modules(model, x):
    found = []
    handles = [m.register_forward_hook(lambda mod, i, o, name=name: found.append(name)
                                       if not torch.isfinite(o).all() else None)
               for name, m in model.named_modules()]
    with torch.no_grad():
        model(x)
    for h in handles:
        h.remove()
    return found


class Log(nn.Module):
    """log(x): NaN for negative inputs, -inf at 0 (the kind of layer that breaks training)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x)


class Exp(nn.Module):
    """exp(x): overflows to inf in float32 above about 88."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.exp(x)


class _OutOfOrder(nn.Module):
    """Registers `head` before `body` but runs body first: execution order != registration order."""

    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(4, 2)
        self.scale = Exp()
        self.body = nn.Sequential(nn.Linear(3, 4), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.scale(self.body(x)))


def _nonfinite_cases():
    def log_chain():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), Log(), nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
        return (model, torch.randn(5, 3, generator=torch.Generator().manual_seed(1))), {}

    def overflow():
        torch.manual_seed(1)
        model = _OutOfOrder()
        with torch.no_grad():
            model.body[0].weight.fill_(30.0)
        return (model, torch.full((2, 3), 2.0)), {}

    def finite():
        torch.manual_seed(2)
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
        return (model, torch.randn(4, 3, generator=torch.Generator().manual_seed(3))), {}

    return [log_chain, overflow, finite]


def _nonfinite_verify(out, ref, args, kwargs):
    model = args[0]
    if any(m._forward_hooks for m in model.modules()):
        return "your hooks are still registered on the model after the function returned"
    if not isinstance(out, list) or not all(isinstance(n, str) for n in out):
        return f"expected a list of module names (str), found {describe(out)}"
    if out != ref:
        return f"expected {ref} (leaf modules whose output has NaN or Inf, in the order they ran), found {out}"
    return None


register(Exercise(
    "09.nonfinite_layers",
    "nonfinite_layers(model, x) runs model(x) once with forward hooks on every leaf module and returns "
    "the names (from named_modules) of the modules whose output contains NaN or Inf, in the order they "
    "ran; the hooks are removed afterwards.",
    nonfinite_layers_reference,
    _nonfinite_cases(),
    _nonfinite_verify,
    [
        Mistake("hooks not removed",
                "register_forward_hook returns a handle: keep them and call handle.remove() in a "
                "`finally:` block, or every later forward pass keeps running your hook.",
                _nonfinite_hooks_left,
                detect=lambda out, a, k: any(m._forward_hooks for m in a[0].modules())),
        Mistake("checks only NaN, misses Inf",
                "exp overflow and division by zero give inf, not nan: test ~torch.isfinite(out).all().",
                _nonfinite_nan_only),
        Mistake("reports registration order instead of execution order",
                "append the name inside the hook, as the modules run; named_modules() lists them in the "
                "order __init__ created them, which forward() need not follow.",
                _nonfinite_registration_order),
        Mistake("hooks on container modules too",
                "only leaf modules (no children): a Sequential's output is its last layer's output, so it "
                "would be reported twice; keep modules with `not list(m.children())`.",
                _nonfinite_all_modules),
    ],
))
