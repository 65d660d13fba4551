"""Notebook 07's exercises: wrong answers that must fail and alternative right answers that must
pass (required ids and mistake names: tests/test_exercise_checks.py)."""

from __future__ import annotations

import math

import pytest
import torch

from course_utils.checks.nb07 import SpyScaler
from course_utils.exercises import check, get_exercise


# --- 07.training_memory ------------------------------------------------------------------


def _tm(copies: dict[str, int], with_step: bool = False):
    def training_memory(model, optimizer, dtype):
        size = dtype.itemsize
        n = sum(p.numel() for p in model.parameters())
        trainable = [p for p in model.parameters() if p.requires_grad]
        nt = sum(p.numel() for p in trainable)
        state = copies[optimizer] * nt * size
        if with_step and optimizer.startswith("adam"):
            state += 4 * len(trainable)
        return {"params": n * size, "grads": nt * size, "optimizer_state": state}
    return training_memory


def test_training_memory_alternatives_pass_and_variants_fail() -> None:
    right = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}
    assert check("07.training_memory", _tm(right)).passed
    assert check("07.training_memory", _tm(right, with_step=True)).passed  # counting `step` is fine
    adamw_once = check("07.training_memory", _tm({**right, "adamw": 1}))
    assert adamw_once.status == "fail" and "Hint (Adam counted once)" in adamw_once.message
    tensors = check("07.training_memory",
                    lambda m, o, d: {k: torch.tensor(v) for k, v in _tm(right)(m, o, d).items()})
    assert tensors.status == "fail" and "Python int" in tensors.message


# --- 07.saved_activation_bytes -----------------------------------------------------------


def test_saved_bytes_alternative_passes_and_identity_pack_is_named() -> None:
    def by_data_ptr(model, x, *, detach=True):
        params = {p.data_ptr() for p in model.parameters()}
        seen = {}

        def pack(t):
            if t.data_ptr() not in params:
                seen[t.data_ptr()] = t.numel() * t.element_size()
            return t.detach() if detach else t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            model(x)
        return sum(seen.values())

    assert check("07.saved_activation_bytes", by_data_ptr).passed
    leaky = check("07.saved_activation_bytes", lambda m, x: by_data_ptr(m, x, detach=False))
    assert "Hint (pack hook returns the tensor itself" in leaky.message, leaky.message


def test_saved_bytes_message_names_the_numbers() -> None:
    result = check("07.saved_activation_bytes", lambda model, x: 1)
    assert result.status == "fail" and "expected 800 bytes" in result.message


# --- 07.amp_train_step ---------------------------------------------------------------------


def _step(model, x, y, loss_fn, optimizer, scaler, device_type, *, dtype=None, loss_inside=True,
          clip=False, extra_step=False):
    optimizer.zero_grad()
    with torch.autocast(device_type=device_type, dtype=dtype or torch.bfloat16):
        out = model(x)
        loss = loss_fn(out, y) if loss_inside else None
    if loss is None:
        loss = loss_fn(out, y)
    scaler.scale(loss).backward()
    if clip:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1e6)
    scaler.step(optimizer)
    if extra_step:
        optimizer.step()
    scaler.update()
    return loss.detach().item()


@pytest.mark.parametrize("options", [{}, {"dtype": torch.float16}, {"loss_inside": False}, {"clip": True}])
def test_amp_step_correct_variants_pass(options) -> None:
    result = check("07.amp_train_step", lambda *a: _step(*a, **options))
    assert result.passed, result.message


def test_amp_step_double_update_fails() -> None:
    result = check("07.amp_train_step", lambda *a: _step(*a, extra_step=True))
    assert result.status == "fail" and "update of parameter" in result.message


def test_amp_step_scale_called_but_discarded_is_named() -> None:
    def discarded(model, x, y, loss_fn, optimizer, scaler, device_type):
        optimizer.zero_grad()
        with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss)
        loss.backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.item()

    result = check("07.amp_train_step", discarded)
    assert "Hint (backward on unscaled loss)" in result.message, result.message


def test_amp_step_skipping_protection_matters() -> None:
    """The overflow case: stepping with inf gradients must be caught even if the scale is updated."""
    def unguarded(model, x, y, loss_fn, optimizer, scaler, device_type):
        optimizer.zero_grad()
        with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        optimizer.step()  # ignores the inf check
        scaler.update()
        return loss.item()

    result = check("07.amp_train_step", unguarded)
    assert result.status == "fail", result.message


def test_amp_spy_is_a_real_grad_scaler() -> None:
    cases = (factory()[0] for factory in get_exercise("07.amp_train_step").cases)
    args = next(args for args in cases if args[5].recipe == "overflow")
    assert isinstance(args[5], SpyScaler) and isinstance(args[5], torch.amp.GradScaler)
    loss = get_exercise("07.amp_train_step").reference(*args)
    assert math.isfinite(loss) and args[5].get_scale() == 2.0 ** 125
    assert args[5].calls[:1] == ["scale"] and args[5].calls[-1] == "update"
