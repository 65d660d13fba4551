"""``04.count_trainable``: trainable scalars, frozen and tied weights handled."""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, describe, register

from ._common import _seeded


def count_trainable_reference(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


_WRONG_COUNTS: dict[str, Callable[[nn.Module], int]] = {
    "frozen": lambda model: sum(p.numel() for p in model.parameters()),
    "twice": lambda model: sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False)
                               if p.requires_grad),
    "state_dict": lambda model: sum(t.numel() for t in model.state_dict().values()),
    "tensors": lambda model: len([p for p in model.parameters() if p.requires_grad]),
}


class _TiedLM(nn.Module):
    """Embedding and output layer share one weight matrix (weight tying)."""

    def __init__(self, vocab: int = 50, dim: int = 16, freeze_embedding: bool = False) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.mix = nn.Sequential(nn.Linear(dim, dim), nn.LayerNorm(dim))
        self.head = nn.Linear(dim, vocab)
        self.head.weight = self.embed.weight
        self.embed.weight.requires_grad_(not freeze_embedding)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.mix(self.embed(tokens)))


def _frozen_backbone() -> nn.Module:
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4))
    model[:2].requires_grad_(False)
    return model


def _count_verify(out, ref, args, kwargs):
    if isinstance(out, bool) or not isinstance(out, int):
        return f"expected a Python int (a number of scalars), found {describe(out)}"
    return None if out == ref else f"expected {ref} trainable scalars, found {out}"


def _count_mistake(key: str, name: str, hint: str) -> Mistake:
    wrong = _WRONG_COUNTS[key]
    return Mistake(name, hint, wrong, detect=lambda out, args, kwargs: isinstance(out, int)
                   and out == wrong(args[0]) != count_trainable_reference(args[0]))


register(Exercise(
    "04.count_trainable",
    "count_trainable(model) returns the number of scalars (an int) the optimizer can train: "
    "only parameters with requires_grad=True, each shared Parameter counted once.",
    count_trainable_reference,
    [_seeded(lambda: nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 3)), 0),
     _seeded(_frozen_backbone, 1), _seeded(_TiedLM, 2),
     _seeded(lambda: _TiedLM(vocab=40, dim=12, freeze_embedding=True), 3)],
    _count_verify,
    [
        _count_mistake("frozen", "counts frozen params",
                       "a parameter with requires_grad=False is frozen: the optimizer never changes "
                       "it. Keep only `p.requires_grad` parameters."),
        _count_mistake("twice", "counts shared params twice",
                       "a tied weight is ONE Parameter reachable from two modules; model.parameters() "
                       "yields it once, named_parameters(remove_duplicate=False) or a loop over "
                       "modules yields it twice."),
        _count_mistake("state_dict", "counts buffers and shared weights via state_dict",
                       "state_dict() also holds buffers (BatchNorm's running stats) and lists a tied "
                       "weight under every name; iterate over model.parameters() instead."),
        _count_mistake("tensors", "counts tensors instead of scalars",
                       "len(list(model.parameters())) is the number of tensors; sum p.numel() instead."),
    ],
))
