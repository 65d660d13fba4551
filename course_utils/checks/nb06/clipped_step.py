"""``06.clipped_step``: zero_grad, backward, clip_grad_norm_, step; the norm before clipping."""

from __future__ import annotations

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, describe, register

from ._common import ProbeNet, _classification_data, _is_number


def clipped_step_reference(model: nn.Module, loss_fn, x: torch.Tensor, y: torch.Tensor,
                           optimizer, max_norm: float) -> float:
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return total_norm.item()


def _clip_after_step(model, loss_fn, x, y, optimizer, max_norm):
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    optimizer.step()
    return torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm).item()


def _clip_before_backward(model, loss_fn, x, y, optimizer, max_norm):
    optimizer.zero_grad()
    total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    loss_fn(model(x), y).backward()
    optimizer.step()
    return total_norm.item()


def _clip_no_zero_grad(model, loss_fn, x, y, optimizer, max_norm):
    loss_fn(model(x), y).backward()
    total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return total_norm.item()


def _clip_tensor(model, loss_fn, x, y, optimizer, max_norm):
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    total_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return total_norm


def _clip_setup(seed: int):
    x, y = _classification_data(seed + 20, 8)
    model = ProbeNet(seed)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    for param in model.parameters():  # left over from the previous step
        param.grad = torch.full_like(param, 0.3)
    return model, nn.CrossEntropyLoss(), x, y, optimizer


def _clip_cases():
    def make(seed: int, max_norm: float):
        twin = _clip_setup(seed)
        clipped_step_reference(*twin, max_norm)
        unclipped = _clip_setup(seed)
        clipped_step_reference(*unclipped, float("inf"))
        model, loss_fn, x, y, optimizer = _clip_setup(seed)
        model.expected_params = [p.detach().clone() for p in twin[0].parameters()]
        model.unclipped_params = [p.detach().clone() for p in unclipped[0].parameters()]
        return (model, loss_fn, x, y, optimizer, max_norm), {}
    return [lambda: make(0, 0.5), lambda: make(1, 0.25), lambda: make(2, 0.4)]


def _largest_difference(params, expected) -> float:
    return max(float((p.detach() - e).abs().max()) for p, e in zip(params, expected))


def _clip_verify(out, ref, args, kwargs):
    model, loss_fn, x, y, optimizer, max_norm = args
    if not _is_number(out):
        return f"expected the total gradient norm as a Python float, found {describe(out)}"
    if model.stale_backward:
        return "backward() added the new gradients on top of the previous step's stale ones"
    if abs(float(out) - ref) > 1e-4 * max(1.0, ref):
        return f"expected the total gradient norm before clipping, {ref:.4f}, found {float(out):.4f}"
    difference = _largest_difference(model.parameters(), model.expected_params)
    if difference > 1e-5:
        return (f"the norm is right but the parameters after the step differ from a step with "
                f"clipped gradients (largest difference {difference:.3g})")
    return None


def _updated_unclipped(out, args, kwargs) -> bool:
    model = args[0]
    return _largest_difference(model.parameters(), model.unclipped_params) < 1e-6


register(Exercise(
    "06.clipped_step",
    "clipped_step(model, loss_fn, x, y, optimizer, max_norm) does one training step with "
    "gradient clipping (zero_grad, forward, loss, backward, clip_grad_norm_, step) and returns "
    "the total gradient norm BEFORE clipping as a Python float.",
    clipped_step_reference,
    _clip_cases(),
    _clip_verify,
    [
        Mistake("missing zero_grad",
                "the model arrives with gradients from the previous step: call optimizer.zero_grad() "
                "before backward(), or they are added to the new ones.",
                _clip_no_zero_grad, detect=lambda out, a, k: a[0].stale_backward),
        Mistake("returns a tensor",
                "clip_grad_norm_ returns a 0-dim tensor; log it as a number with .item().",
                _clip_tensor, detect=lambda out, a, k: isinstance(out, torch.Tensor)),
        Mistake("clips before backward()",
                "clip_grad_norm_ works on the .grad fields: it must run after loss.backward() "
                "has filled them (and before optimizer.step()).",
                _clip_before_backward,
                detect=lambda out, a, k: _is_number(out) and _updated_unclipped(out, a, k)
                and abs(out) < 1e-12),
        Mistake("clips after optimizer.step()",
                "once step() ran, the update used the unclipped gradients; clip between "
                "loss.backward() and optimizer.step().",
                _clip_after_step, detect=_updated_unclipped),
    ],
))
