"""``04.kaiming_init``: Kaiming-normal Linear weights, zero biases, other modules untouched."""

from __future__ import annotations

import math
from typing import Any, Callable

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, describe, register

from ._common import _seeded


def kaiming_init_reference(module: nn.Module) -> nn.Module:
    if isinstance(module, nn.Linear):
        nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    return module


def _wrong_init(weight_init: Callable[[torch.Tensor], Any] | None, zero_bias: bool = True,
                bias_guard: bool = True, linear_only: bool = True) -> Callable[[nn.Module], nn.Module]:
    """A kaiming_init variant with one typical mistake (the examples of the mistakes below)."""
    def init(module: nn.Module) -> nn.Module:
        weight = getattr(module, "weight", None)
        if isinstance(module, nn.Linear) or (not linear_only and weight is not None and weight.dim() >= 2):
            if weight_init is not None:
                weight_init(module.weight)
            if zero_bias and (module.bias is not None or not bias_guard):
                nn.init.zeros_(module.bias)
        return module
    return init


def _kaiming(w: torch.Tensor) -> Any:
    return nn.init.kaiming_normal_(w, nonlinearity="relu")


def _weight_std_is(std: Callable[[int, int], float]):
    def detect(out, args, kwargs) -> bool:
        m = args[0]
        return isinstance(m, nn.Linear) and abs(m.weight.std().item() / std(m.in_features, m.out_features) - 1) < 0.05
    return detect


def _non_linear_changed(out, args, kwargs) -> bool:
    module = args[0]
    if isinstance(module, nn.Linear):
        return False
    fresh = _INIT_BUILDERS[type(module)]()[0][0]
    return any(not torch.equal(a, b) for a, b in zip(module.state_dict().values(), fresh.state_dict().values()))


def _init_verify(out, ref, args, kwargs):
    module = args[0]
    if out is not module:
        return f"expected the same module back (initialise it in place, then `return module`), found {describe(out)}"
    if not isinstance(module, nn.Linear):
        for (key, got), want in zip(module.state_dict().items(), ref.state_dict().values()):
            if not torch.equal(got, want):
                return f"{type(module).__name__}.{key} was changed; expected every non-Linear layer left exactly as it was"
        return None
    fan_in, fan_out = module.in_features, module.out_features
    w, want = module.weight.detach(), math.sqrt(2.0 / fan_in)
    if abs(w.std().item() / want - 1) > 0.05 or abs(w.mean().item()) > 0.05 * want:
        return (f"Linear({fan_in}, {fan_out}).weight has mean {w.mean().item():.4f} and std "
                f"{w.std().item():.4f}; Kaiming for ReLU expects mean 0 and std sqrt(2/fan_in) = "
                f"{want:.4f} (Xavier would give {math.sqrt(2 / (fan_in + fan_out)):.4f})")
    if module.bias is not None and bool(module.bias.detach().ne(0).any()):
        return (f"Linear({fan_in}, {fan_out}).bias has nonzero entries (max |b| = "
                f"{module.bias.abs().max().item():.4f}); expected all zeros")
    return None


def _perturbed(norm: nn.LayerNorm) -> nn.LayerNorm:
    with torch.no_grad():  # non-default values, so resetting them would show too
        norm.weight.uniform_(0.5, 1.5)
        norm.bias.uniform_(-0.5, 0.5)
    return norm


_INIT_BUILDERS = {
    nn.Conv2d: _seeded(lambda: nn.Conv2d(8, 16, 3), 13),
    nn.LayerNorm: _seeded(lambda: _perturbed(nn.LayerNorm(64)), 14),
    nn.Embedding: _seeded(lambda: nn.Embedding(200, 32), 15),
}

register(Exercise(
    "04.kaiming_init",
    "kaiming_init(module), used as model.apply(kaiming_init): for an nn.Linear, Kaiming-normal "
    "weights for ReLU (std sqrt(2/fan_in)) and zero bias (if it has one); any other module "
    "untouched. End with `return module`.",
    kaiming_init_reference,
    [_seeded(lambda: nn.Linear(512, 256), 10), _seeded(lambda: nn.Linear(128, 640), 11),
     _seeded(lambda: nn.Linear(400, 300, bias=False), 12), *_INIT_BUILDERS.values()],
    _init_verify,
    [
        Mistake("Xavier instead of Kaiming",
                "Xavier (std sqrt(2/(fan_in+fan_out))) suits tanh; ReLU zeroes half its inputs, so "
                "Kaiming doubles the variance: nn.init.kaiming_normal_(w, nonlinearity='relu').",
                _wrong_init(nn.init.xavier_normal_), detect=_weight_std_is(lambda i, o: math.sqrt(2 / (i + o)))),
        Mistake("biases not zeroed",
                "the default bias init is random: add nn.init.zeros_(module.bias) when the bias exists.",
                _wrong_init(_kaiming, zero_bias=False),
                detect=lambda out, a, k: isinstance(a[0], nn.Linear) and a[0].bias is not None
                and bool(a[0].bias.detach().ne(0).any())),
        Mistake("touches non-Linear layers",
                "model.apply calls your function on EVERY submodule (Conv, LayerNorm, Embedding, ...): "
                "test `isinstance(module, nn.Linear)` before changing anything.",
                _wrong_init(_kaiming, linear_only=False), detect=_non_linear_changed,
                error_match="Fan in and fan out can not be computed"),
        Mistake("fan_out mode instead of fan_in",
                "mode='fan_out' preserves gradient variance in the backward pass; the forward "
                "activations need the default mode='fan_in'.",
                _wrong_init(lambda w: nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")),
                detect=_weight_std_is(lambda i, o: math.sqrt(2 / o))),
        Mistake("weights left at the default init",
                "nn.Linear's default is kaiming_uniform_ with a=sqrt(5), std 1/sqrt(3*fan_in): "
                "re-initialise the weight too.",
                _wrong_init(None), detect=_weight_std_is(lambda i, o: 1 / math.sqrt(3 * i))),
        Mistake("assumes every Linear has a bias",
                "nn.Linear(..., bias=False) has module.bias = None: check `if module.bias is not None`.",
                _wrong_init(_kaiming, bias_guard=False), error_match="'NoneType' object has no attribute"),
    ],
))
