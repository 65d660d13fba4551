"""``04.make_mlp``: registered Linear layers with ReLU between them."""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, compare_tensors, describe, register


def make_mlp_reference(sizes: list[int]) -> nn.Module:
    layers: list[nn.Module] = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        if i > 0:
            layers.append(nn.ReLU())
        layers.append(nn.Linear(fan_in, fan_out))
    return nn.Sequential(*layers)


class _ListMLP(nn.Module):
    def __init__(self, sizes: list[int]) -> None:
        super().__init__()
        self.layers = [nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(torch.relu(x) if i > 0 else x)
        return x


def _linears_then(sizes: list[int], act: Callable[[], nn.Module] | None) -> nn.Sequential:
    pairs = zip(sizes[:-1], sizes[1:])
    return nn.Sequential(*[m for a, b in pairs for m in (nn.Linear(a, b), *([act()] if act else []))])


def _chain(linears: list[nn.Linear], x: torch.Tensor, between: bool, last: bool) -> torch.Tensor:
    for i, layer in enumerate(linears):
        x = nn.functional.linear(torch.relu(x) if i > 0 and between else x, layer.weight, layer.bias)
    return torch.relu(x) if last else x


def _hidden_list(module: Any) -> bool:
    """True when a public attribute is a list/tuple/dict holding modules (not registered)."""
    def holds_module(v: Any) -> bool:
        items = v.values() if isinstance(v, dict) else v if isinstance(v, (list, tuple)) else []
        return any(isinstance(m, nn.Module) for m in items)
    return isinstance(module, nn.Module) and any(
        holds_module(v) for k, v in vars(module).items() if not k.startswith("_"))


def _mlp_verify(out, ref, args, kwargs):
    (sizes,) = args
    if not isinstance(out, nn.Module):
        return f"expected an nn.Module, found {describe(out)}"
    linears = [m for m in out.modules() if isinstance(m, nn.Linear)]
    wanted = list(zip(sizes[:-1], sizes[1:]))
    if len(linears) < len(wanted):
        return (f"expected {len(wanted)} registered nn.Linear layers, model.modules() finds "
                f"{len(linears)} (model.parameters() holds {len(list(out.parameters()))} tensors)")
    if [(m.in_features, m.out_features) for m in linears] != wanted:
        return f"expected Linear layers (in, out) = {wanted}, found {[(m.in_features, m.out_features) for m in linears]}"
    x = torch.randn(5, sizes[0], generator=torch.Generator().manual_seed(len(sizes)))
    with torch.no_grad():
        got, expected = out(x), _chain(linears, x, True, False)
        problem = compare_tensors(got, expected, name="output")
        if problem and isinstance(got, torch.Tensor) and got.shape == expected.shape:
            if torch.allclose(got, _chain(linears, x, True, True), atol=1e-6):
                return "the output is never negative: a ReLU follows the last Linear layer"
            if torch.allclose(got, _chain(linears, x, False, False), atol=1e-6):
                return "the output is an affine function of the input: no ReLU between the Linear layers"
    return problem


register(Exercise(
    "04.make_mlp",
    "make_mlp(sizes) returns an nn.Module with nn.Linear(sizes[i], sizes[i+1]) layers, a ReLU "
    "between consecutive layers and none after the last; every layer registered.",
    make_mlp_reference,
    [lambda: (([4, 8, 3],), {}), lambda: (([6, 16, 16, 2],), {}), lambda: (([5, 1],), {})],
    _mlp_verify,
    [
        Mistake("plain Python list (layers not registered)",
                "a list attribute hides its layers from parameters(), .to() and state_dict(): "
                "use nn.Sequential(*layers) or nn.ModuleList(layers).",
                _ListMLP, detect=lambda out, a, k: _hidden_list(out)),
        Mistake("ReLU after the last layer",
                "the last layer produces scores/logits that may be negative: no activation after it.",
                lambda sizes: _linears_then(sizes, nn.ReLU)),
        Mistake("no activation between layers",
                "stacked Linear layers without a nonlinearity collapse into one affine map: "
                "put nn.ReLU() between them.",
                lambda sizes: _linears_then(sizes, None)),
    ],
))
