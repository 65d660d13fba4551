"""Helpers of notebook 07 (generalisation), packaged: the notebook's later cells use them, so they run
whether or not the learner has solved the exercises (they are also the checkers' reference solutions).

* :func:`param_groups`: AdamW parameter groups, no weight decay on biases and normalisation layers.
* :func:`early_stopping`: stop after ``patience`` epochs without improvement, restore the best state.
* :func:`warmup_cosine`: a linear warm-up, then a cosine to 0 (``LinearLR`` + ``SequentialLR``).

Example:
    >>> import torch
    >>> from torch import nn
    >>> from course_utils.generalisation import param_groups, warmup_cosine
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 2))
    >>> groups = param_groups(model, weight_decay=0.1)
    >>> [(len(g["params"]), g["weight_decay"]) for g in groups]
    [(2, 0.1), (4, 0.0)]
    >>> optimizer = torch.optim.AdamW(groups, lr=1e-3)
    >>> scheduler = warmup_cosine(optimizer, warmup_steps=4, total_steps=10)
    >>> f"{optimizer.param_groups[0]['lr']:.2e}"
    '2.50e-04'
"""

from __future__ import annotations

import copy
import math
from typing import Callable

import torch
from torch import nn

#: The normalisation layers whose parameters get no weight decay (BatchNorm, InstanceNorm, LayerNorm,
#: GroupNorm, RMSNorm).
NORM_LAYERS: tuple[type[nn.Module], ...] = (
    nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm,
    nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d,
    nn.LayerNorm, nn.GroupNorm, nn.RMSNorm,
)


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """Two AdamW groups: ``weight_decay`` for weights, 0.0 for biases and norm-layer parameters.

    Every trainable parameter appears once (tied weights too); frozen ones are left out. The rule is by
    module type and parameter name, not by shape: a 1-d parameter outside a norm layer is decayed.

    >>> tied = nn.ModuleDict({"emb": nn.Embedding(5, 3), "out": nn.Linear(3, 5, bias=False)})
    >>> tied["out"].weight = tied["emb"].weight
    >>> [len(g["params"]) for g in param_groups(tied, 0.1)]
    [1, 0]
    """
    decay, no_decay, seen = [], [], set()
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if not param.requires_grad or id(param) in seen:
                continue
            seen.add(id(param))
            if isinstance(module, NORM_LAYERS) or name == "bias":
                no_decay.append(param)
            else:
                decay.append(param)
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]


def early_stopping(model: nn.Module, train_epoch: Callable[[nn.Module], object],
                   validate: Callable[[nn.Module], float], max_epochs: int, patience: int,
                   min_delta: float = 0.0) -> int:
    """Train up to ``max_epochs`` epochs (numbered from 1); stop after ``patience`` epochs in a row with no
    ``val_loss < best_loss - min_delta``; load a copy of the best epoch's state; return its number.

    >>> losses = iter([3.0, 2.0, 2.5, 2.2, 1.0])
    >>> early_stopping(nn.Linear(1, 1), lambda m: None, lambda m: next(losses), max_epochs=5, patience=2)
    2
    """
    best_loss, best_epoch, best_state, bad_epochs = math.inf, 0, None, 0
    for epoch in range(1, max_epochs + 1):
        train_epoch(model)
        val_loss = validate(model)
        if val_loss < best_loss - min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    model.load_state_dict(best_state)
    return best_epoch


def warmup_cosine(optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int):
    """``SequentialLR``: from ``base_lr / warmup_steps`` up to ``base_lr`` at step ``warmup_steps``, then a
    cosine to 0 at step ``total_steps``. Step it once per optimizer step, after ``optimizer.step()``.

    >>> opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    >>> type(warmup_cosine(opt, 2, 6)).__name__, opt.param_groups[0]["lr"]
    ('SequentialLR', 0.5)
    """
    sched = torch.optim.lr_scheduler
    warmup = sched.LinearLR(optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps)
    cosine = sched.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps)
    return sched.SequentialLR(optimizer, [warmup, cosine], milestones=[warmup_steps])
