"""07.amp_train_step: one mixed-precision training step with autocast and a GradScaler.

The step is checked on the CPU with a real ``torch.amp.GradScaler("cpu")`` whose method
calls are recorded (:class:`SpyScaler`) and a model that records whether its forward ran under
autocast, so every typical mistake is visible without a GPU.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, describe, register


# --- 07.amp_train_step ------------------------------------------------------------------------

class SpyScaler(torch.amp.GradScaler):
    """A real ``GradScaler`` that records which of its methods were called, in order."""

    def __init__(self, recipe: str, init_scale: float, growth_interval: int = 1) -> None:
        super().__init__("cpu", init_scale=init_scale, growth_interval=growth_interval)
        self.recipe = recipe
        self.initial_scale = init_scale
        self.calls: list[str] = []

    def scale(self, outputs):  # type: ignore[override]
        self.calls.append("scale")
        return super().scale(outputs)

    def step(self, optimizer, *args, **kwargs):  # type: ignore[override]
        self.calls.append("step")
        return super().step(optimizer, *args, **kwargs)

    def update(self, new_scale=None) -> None:  # type: ignore[override]
        self.calls.append("update")
        super().update(new_scale)


class _AutocastRecorder(nn.Module):
    """Wraps a network and records whether each forward ran under autocast."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net
        self.autocast_seen: list[bool] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.autocast_seen.append(torch.is_autocast_enabled(x.device.type))
        return self.net(x)


def _amp_build(recipe: str) -> tuple:
    gen = torch.Generator().manual_seed(20)
    torch.manual_seed(21)
    if recipe == "regression":
        model = _AutocastRecorder(nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1)))
        x, y = torch.randn(32, 6, generator=gen), torch.randn(32, 1, generator=gen)
        loss_fn, optimizer = nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1)
        scale = 2.0 ** 10
    elif recipe == "classification":
        model = _AutocastRecorder(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)))
        x, y = torch.randn(24, 8, generator=gen), torch.randint(0, 4, (24,), generator=gen)
        loss_fn, optimizer = nn.CrossEntropyLoss(), torch.optim.Adam(model.parameters(), lr=1e-2)
        scale = 2.0 ** 12
    elif recipe == "overflow":  # the scaled loss overflows: the step must be skipped, the scale halved
        model = _AutocastRecorder(nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1)))
        x, y = torch.randn(32, 6, generator=gen), 10 * torch.randn(32, 1, generator=gen)
        loss_fn, optimizer = nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.1)
        scale = 2.0 ** 126
    else:
        raise ValueError(recipe)
    return model, x, y, loss_fn, optimizer, SpyScaler(recipe, scale), "cpu"


def amp_train_step_reference(model, x, y, loss_fn, optimizer, scaler, device_type) -> float:
    optimizer.zero_grad(set_to_none=True)
    amp_dtype = torch.bfloat16 if device_type == "cpu" else torch.float16
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


def _amp_expected(recipe: str) -> dict[str, Any]:
    args = _amp_build(recipe)
    model, scaler = args[0], args[5]
    before = [p.detach().clone() for p in model.parameters()]
    loss = amp_train_step_reference(*args)
    return {"loss": loss, "scale": scaler.get_scale(), "before": before,
            "after": [p.detach().clone() for p in model.parameters()],
            "grads": [None if p.grad is None else p.grad.detach().clone() for p in model.parameters()]}


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / (b.norm() + 1e-30))


def _grad_ratio(args: tuple) -> float | None:
    """norm(your .grad) / norm(expected .grad), or None when the expected step overflowed."""
    model, scaler = args[0], args[5]
    expected = _amp_expected(scaler.recipe)
    if any(g is None or not torch.isfinite(g).all() for g in expected["grads"]):
        return None  # a skipped step: what is left in .grad is not meaningful
    mine, ref = 0.0, 0.0
    for p, g in zip(model.parameters(), expected["grads"]):
        if p.grad is None or not torch.isfinite(p.grad).all():
            continue
        mine += float(p.grad.norm()) ** 2
        ref += float(g.norm()) ** 2
    # no gradients left (zero_grad() after the step is a fine habit): nothing to compare
    return math.sqrt(mine / ref) if ref > 0 and mine > 0 else None


def _close_ratio(ratio: float | None, target: float) -> bool:
    return ratio is not None and ratio > 0 and abs(math.log(ratio / target)) < 0.5


def _amp_verify(out, ref, args, kwargs):
    model, x, y, loss_fn, optimizer, scaler, device_type = args
    if isinstance(out, torch.Tensor):
        return f"expected the loss as a Python float (loss.item()), found a tensor ({describe(out)})"
    if isinstance(out, bool) or not isinstance(out, (int, float)):
        return f"expected the loss as a Python float, found {describe(out)}"
    if not any(model.autocast_seen):
        return ("your forward pass ran without autocast (torch.is_autocast_enabled was False inside "
                "model.forward)")
    calls = scaler.calls
    if "scale" not in calls:
        return "scaler.scale(loss) was never called, so backward ran on the unscaled loss"
    if "step" not in calls:
        return "scaler.step(optimizer) was never called, so nothing unscaled the gradients or checked them for inf"
    expected = _amp_expected(scaler.recipe)
    if "update" not in calls:
        return (f"scaler.update() was never called: the loss scale stayed {scaler.get_scale():g}, "
                f"expected {expected['scale']:g} after this step")
    if not math.isclose(out, expected["loss"], rel_tol=0.05, abs_tol=1e-6):
        times = out / expected["loss"] if expected["loss"] else float("nan")
        return f"expected the returned loss ≈ {expected['loss']:.4g}, found {out:.4g} ({times:.3g}x)"
    if scaler.get_scale() != expected["scale"]:
        return f"expected the loss scale {expected['scale']:g} after this step, found {scaler.get_scale():g}"
    for (name, p), p0, p1 in zip(model.named_parameters(), expected["before"], expected["after"]):
        if not torch.isfinite(p).all():
            return (f"parameter {name} contains inf/NaN after your step: a step with inf gradients "
                    f"must be skipped (scaler.step does that)")
        if torch.equal(p1, p0):
            if not torch.equal(p.detach(), p0):
                return (f"parameter {name} changed, but this step's gradients overflowed: "
                        f"the update must be skipped")
            continue
        if _rel(p.detach() - p0, p1 - p0) > 0.1:
            return (f"the update of parameter {name} differs from the expected one (relative difference "
                    f"{_rel(p.detach() - p0, p1 - p0):.3g})")
    ratio = _grad_ratio(args)
    if ratio is not None and not _close_ratio(ratio, 1.0):
        return (f"the gradients left in .grad are {ratio:.3g}x the expected (unscaled) ones; "
                f"the loss scale was {scaler.initial_scale:g}")
    return None


def _amp_variant(*, scaled_backward: bool = True, scaler_step: bool = True, update: bool = True,
                 autocast: bool = True, return_scaled: bool = False):
    """A wrong amp_train_step: the reference with one part left out or changed."""
    def step(model, x, y, loss_fn, optimizer, scaler, device_type):
        optimizer.zero_grad()
        with torch.autocast(device_type=device_type, dtype=torch.bfloat16, enabled=autocast):
            loss = loss_fn(model(x), y)
        scaled = scaler.scale(loss) if scaled_backward or return_scaled else loss
        scaled.backward()
        scaler.step(optimizer) if scaler_step else optimizer.step()
        if update:
            scaler.update()
        return (scaled if return_scaled else loss).item()
    return step


def _calls(args: tuple) -> list[str]:
    return getattr(args[5], "calls", [])


register(Exercise(
    "07.amp_train_step",
    "amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type) does one mixed-precision "
    "step: clear the gradients, forward + loss under torch.autocast(device_type=..., dtype=bfloat16 "
    "on 'cpu' / float16 on 'cuda'), backward on scaler.scale(loss), scaler.step(optimizer), "
    "scaler.update(); returns the (unscaled) loss as a Python float.",
    amp_train_step_reference,
    [lambda: (_amp_build("regression"), {}), lambda: (_amp_build("classification"), {}),
     lambda: (_amp_build("overflow"), {})],
    _amp_verify,
    [
        Mistake("backward on unscaled loss",
                "call scaler.scale(loss).backward(): scaling the loss before backward is what keeps "
                "small fp16 gradients from flushing to zero (scaler.step divides the scale back out).",
                _amp_variant(scaled_backward=False),
                detect=lambda out, a, k: "scale" not in _calls(a)
                or _close_ratio(_grad_ratio(a), 1.0 / a[5].initial_scale),
                error_match="did not use scaler.scale"),
        Mistake("`optimizer.step()` instead of `scaler.step`",
                "call scaler.step(optimizer), not optimizer.step(): it unscales the gradients, checks "
                "them for inf/NaN and skips the update when they overflowed.",
                _amp_variant(scaler_step=False),
                detect=lambda out, a, k: "step" not in _calls(a),
                error_match="No inf checks were recorded"),
        Mistake("no `scaler.update()`",
                "end every step with scaler.update(): it halves the scale after an overflow and grows "
                "it after a run of good steps; without it the scale never adapts (and the next "
                "scaler.step raises).",
                _amp_variant(update=False),
                detect=lambda out, a, k: "update" not in _calls(a)),
        Mistake("returns the scaled loss",
                "return loss.item(), the loss before scaling; scaler.scale(loss) is only for backward.",
                _amp_variant(return_scaled=True),
                detect=lambda out, a, k: isinstance(out, float) and math.isclose(
                    out, _amp_expected(a[5].recipe)["loss"] * a[5].initial_scale, rel_tol=0.05)),
        Mistake("no autocast",
                "run the forward pass and the loss inside `with torch.autocast(device_type=device_type, "
                "dtype=...)`; without it everything stays float32.",
                _amp_variant(autocast=False),
                detect=lambda out, a, k: not any(getattr(a[0], "autocast_seen", [True]))),
    ],
))
