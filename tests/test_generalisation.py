"""course_utils.generalisation: the packaged helpers of notebook 07 (also the checkers' references)."""

from __future__ import annotations

import math

import torch
from torch import nn

from course_utils.generalisation import NORM_LAYERS, early_stopping, param_groups, warmup_cosine


def test_param_groups_by_module_type_and_name() -> None:
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(4, 2), nn.GroupNorm(1, 2))
    model[0].weight.requires_grad_(False)
    decay, no_decay = param_groups(model, 0.05)
    assert decay["weight_decay"] == 0.05 and no_decay["weight_decay"] == 0.0
    assert [p is model[3].weight for p in decay["params"]] == [True]
    expected = {id(model[0].bias), id(model[1].weight), id(model[1].bias), id(model[3].bias),
                id(model[4].weight), id(model[4].bias)}
    assert {id(p) for p in no_decay["params"]} == expected
    torch.optim.AdamW([decay, no_decay], lr=1e-3)  # accepted as they are
    assert nn.RMSNorm in NORM_LAYERS and nn.LayerNorm in NORM_LAYERS


def test_early_stopping_restores_a_copy_of_the_best_state() -> None:
    model = nn.Linear(2, 1)
    losses = iter([1.0, 0.5, 0.7, 0.6, 0.1])
    weights = []

    def train_epoch(m: nn.Module) -> None:
        with torch.no_grad():
            m.weight.add_(1.0)
        weights.append(m.weight.detach().clone())

    best = early_stopping(model, train_epoch, lambda m: next(losses), max_epochs=5, patience=2)
    assert best == 2 and len(weights) == 4  # epochs 3 and 4 did not improve
    assert torch.equal(model.weight, weights[1])


def test_warmup_cosine_curve() -> None:
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.4)
    scheduler = warmup_cosine(optimizer, warmup_steps=4, total_steps=8)
    lrs = []
    for _ in range(9):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert math.isclose(lrs[0], 0.1) and math.isclose(lrs[4], 0.4) and lrs[8] < 1e-12
    assert all(a < b for a, b in zip(lrs[:4], lrs[1:5])) and all(a > b for a, b in zip(lrs[4:8], lrs[5:]))
