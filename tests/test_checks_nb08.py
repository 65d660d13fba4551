"""Notebook 08's exercises: wrong answers that must fail and alternative right answers that must
pass (required ids and mistake names: tests/test_exercise_checks.py)."""

from __future__ import annotations

import math

import pytest
import torch

from course_utils.checks.nb08 import SpyScaler
from course_utils.exercises import check, get_exercise


# --- 08.training_memory ------------------------------------------------------------------


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
    assert check("08.training_memory", _tm(right)).passed
    with_step = check("08.training_memory", _tm(right, with_step=True))  # the task leaves `step` out
    assert with_step.status == "fail" and "`step` counters" in with_step.message, with_step.message
    adamw_once = check("08.training_memory", _tm({**right, "adamw": 1}))
    assert adamw_once.status == "fail" and "Hint (Adam counted once)" in adamw_once.message
    tensors = check("08.training_memory",
                    lambda m, o, d: {k: torch.tensor(v) for k, v in _tm(right)(m, o, d).items()})
    assert tensors.status == "fail" and "Python int" in tensors.message


# --- 08.saved_activation_bytes -----------------------------------------------------------


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

    sliced = check("08.saved_activation_bytes", by_data_ptr)  # view sizes: wrong on a saved slice
    assert sliced.status == "fail" and "Hint (sized with the view's nbytes" in sliced.message, sliced.message
    leaky = check("08.saved_activation_bytes", lambda m, x: by_data_ptr(m, x, detach=False))
    assert "Hint (pack hook returns the tensor itself" in leaky.message, leaky.message


def test_saved_bytes_message_names_the_numbers() -> None:
    result = check("08.saved_activation_bytes", lambda model, x: 1)
    assert result.status == "fail" and "expected 800 bytes" in result.message


# --- 08.amp_train_step ---------------------------------------------------------------------


def _step(model, x, y, loss_fn, optimizer, scaler, device_type, *, dtype=None, loss_inside=True,
          clip=False, extra_step=False):
    optimizer.zero_grad()
    amp_dtype = dtype or (torch.bfloat16 if device_type == "cpu" else torch.float16)
    with torch.autocast(device_type=device_type, dtype=amp_dtype):
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


@pytest.mark.parametrize("options", [{}, {"clip": True}])
def test_amp_step_correct_variants_pass(options) -> None:
    result = check("08.amp_train_step", lambda *a: _step(*a, **options))
    assert result.passed, result.message


def test_amp_step_double_update_fails() -> None:
    result = check("08.amp_train_step", lambda *a: _step(*a, extra_step=True))
    assert result.status == "fail" and "optimizer.step() was called directly" in result.message, result.message


def test_amp_step_loss_outside_autocast_fails() -> None:  # the task: forward + loss under autocast
    result = check("08.amp_train_step", lambda *a: _step(*a, loss_inside=False))
    assert result.status == "fail" and "loss was computed outside autocast" in result.message, result.message


def test_amp_step_scale_called_but_discarded_is_named() -> None:
    def discarded(model, x, y, loss_fn, optimizer, scaler, device_type):
        optimizer.zero_grad()
        with torch.autocast(device_type=device_type):  # the default dtype per device is right too
            loss = loss_fn(model(x), y)
        scaler.scale(loss)
        loss.backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.item()

    result = check("08.amp_train_step", discarded)
    assert "Hint (backward on unscaled loss)" in result.message, result.message


def test_amp_step_skipping_protection_matters() -> None:
    """The overflow case: stepping with inf gradients must be caught even if the scale is updated."""
    def unguarded(model, x, y, loss_fn, optimizer, scaler, device_type):
        optimizer.zero_grad()
        with torch.autocast(device_type=device_type):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        optimizer.step()  # ignores the inf check
        scaler.update()
        return loss.item()

    result = check("08.amp_train_step", unguarded)
    assert result.status == "fail", result.message


def test_amp_spy_is_a_real_grad_scaler() -> None:
    cases = (factory()[0] for factory in get_exercise("08.amp_train_step").cases)
    args = next(args for args in cases if args[5].recipe == "overflow")
    assert isinstance(args[5], SpyScaler) and isinstance(args[5], torch.amp.GradScaler)
    loss = get_exercise("08.amp_train_step").reference(*args)
    assert math.isfinite(loss) and args[5].get_scale() == 2.0 ** 125
    assert args[5].calls[:1] == ["scale"] and args[5].calls[-1] == "update"


# --- learners' answers: wrong ones must FAIL with a message naming the fix, right ones must pass ---

def _memory(*, copies=None, size="dtype", count="parameters", frozen="skip", unit=1, as_tensor=False,
            keys=("params", "grads", "optimizer_state")):
    copies = copies or {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}

    def training_memory(model, optimizer, dtype):
        nbytes = dtype.itemsize if size == "dtype" else next(model.parameters()).element_size()
        if count == "state_dict":
            n = sum(v.numel() for v in model.state_dict().values())
        elif count == "modules":
            n = sum(p.numel() for m in model.modules() for p in m.parameters(recurse=False))
        else:
            n = sum(p.numel() for p in model.parameters())
        nt = n if frozen == "count" else sum(p.numel() for p in model.parameters() if p.requires_grad)
        values = [n * nbytes // unit, nt * nbytes // unit, copies[optimizer] * nt * nbytes // unit]
        if as_tensor:
            values = [torch.tensor(v) for v in values]
        return dict(zip(keys, values))
    return training_memory


def _saved(*, key="storage", size="storage", params="skip", detach=True, grad=True, unit="bytes"):
    def saved_activation_bytes(model, x):
        param_ptrs = {p.untyped_storage().data_ptr() for p in model.parameters()}
        sizes, keep = {}, []

        def pack(t):
            ptr = t.untyped_storage().data_ptr()
            if params == "count" or ptr not in param_ptrs:
                k = {"storage": ptr, "id": id(t), "data_ptr": t.data_ptr(), "none": len(sizes)}[key]
                keep.append(t.detach())
                nbytes = t.untyped_storage().nbytes() if size == "storage" else t.numel() * t.element_size()
                sizes[k] = nbytes if unit == "bytes" else t.numel()
            return t.detach() if detach else t

        context = torch.enable_grad() if grad else torch.no_grad()
        with context, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            model(x)
        return sum(sizes.values())
    return saved_activation_bytes


def _amp(*, zero="start", dtype="by device", device="argument", scaled=True, step="scaler", update=True,
         ret="loss", autocast=True, order="step first"):
    def amp_train_step(model, x, y, loss_fn, optimizer, scaler, device_type):
        if zero == "start":
            optimizer.zero_grad()
        amp_dtype = {"by device": torch.bfloat16 if device_type == "cpu" else torch.float16,
                     "fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
        where = device_type if device == "argument" else "cpu"
        with torch.autocast(device_type=where, dtype=amp_dtype, enabled=autocast):
            loss = loss_fn(model(x), y)
        (scaler.scale(loss) if scaled else loss).backward()
        if order == "update first":
            scaler.update()
        if step == "scaler":
            scaler.step(optimizer)
        elif step == "optimizer":
            optimizer.step()
        elif step == "both":
            scaler.step(optimizer)
            optimizer.step()
        if update and order == "step first":
            scaler.update()
        if zero == "end":
            optimizer.zero_grad()
        if ret == "scaled":
            return scaler.scale(loss).item()
        if ret == "tensor":
            return loss
        if ret == "none":
            return None
        return loss.item()
    return amp_train_step


def _saved_no_return(model, x):
    total = _saved()(model, x)
    total += 0


WRONG = [
    ("08.training_memory", _memory(copies={"sgd": 0, "momentum": 1, "adam": 1, "adamw": 1}), ["TWO tensors"]),
    ("08.training_memory", _memory(copies={"sgd": 0, "momentum": 1, "adam": 2, "adamw": 3}), ["optimizer_state"]),
    ("08.training_memory", _memory(copies={"sgd": 1, "momentum": 1, "adam": 2, "adamw": 2}),
     ["optimizer 'sgd'", "optimizer_state"]),
    ("08.training_memory", _memory(copies={"sgd": 0, "momentum": 0, "adam": 2, "adamw": 2}), ["momentum buffer"]),
    ("08.training_memory", _memory(size="model"), ["bytes per element"]),
    ("08.training_memory", _memory(count="state_dict"), ["buffers"]),
    ("08.training_memory", _memory(count="modules"), ["counts it twice"]),
    ("08.training_memory", _memory(frozen="count"), ["frozen", "trainable"]),
    ("08.training_memory", _memory(unit=2 ** 20), ["bytes"]),
    ("08.training_memory", _memory(as_tensor=True), ["Python int"]),
    ("08.training_memory", _memory(keys=("params", "grads", "optimizer")), ["missing ['optimizer_state']"]),
    ("08.saved_activation_bytes", _saved(key="none"), ["count each storage once"]),
    ("08.saved_activation_bytes", _saved(key="id"), ["test case 4", "untyped_storage().data_ptr()"]),
    ("08.saved_activation_bytes", _saved(key="data_ptr", size="storage"), ["test case 4", "expected 384"]),
    ("08.saved_activation_bytes", _saved(size="view"), ["test case 4", "whole storage"]),
    ("08.saved_activation_bytes", _saved(params="count"), ["model.parameters()"]),
    ("08.saved_activation_bytes", _saved(unit="elements"), ["numel() counts elements"]),
    ("08.saved_activation_bytes", _saved(detach=False), ["never freed", "t.detach()"]),
    ("08.saved_activation_bytes", _saved(grad=False), ["no_grad"]),
    ("08.saved_activation_bytes", _saved_no_return, ["forget `return`"]),
    ("08.amp_train_step", _amp(zero="none"), ["test case 4", "clear the gradients first"]),
    ("08.amp_train_step", _amp(zero="end"), ["test case 4", "clear the gradients first"]),
    ("08.amp_train_step", _amp(dtype="fp16"), ["bfloat16 on 'cpu'"]),
    ("08.amp_train_step", _amp(dtype="bf16"), ["device_type='cuda'", "float16 on 'cuda'"]),
    ("08.amp_train_step", _amp(device="cpu"), ["device_type=device_type"]),
    ("08.amp_train_step", _amp(scaled=False), ["scaler.scale(loss).backward()"]),
    ("08.amp_train_step", _amp(step="optimizer"), ["scaler.step(optimizer)"]),
    ("08.amp_train_step", _amp(step="both"), ["optimizer.step() was called directly"]),
    ("08.amp_train_step", _amp(update=False), ["scaler.update()"]),
    ("08.amp_train_step", _amp(order="update first"), ["before scaler.update()"]),
    ("08.amp_train_step", _amp(ret="scaled"), ["loss before scaling"]),
    ("08.amp_train_step", _amp(ret="tensor"), ["Python float"]),
    ("08.amp_train_step", _amp(autocast=False), ["autocast"]),
    ("08.amp_train_step", _amp(ret="none"), ["forget `return`"]),
]


@pytest.mark.parametrize(("exercise_id", "wrong", "words"), WRONG,
                         ids=[f"{e}-{i}" for i, (e, _, _) in enumerate(WRONG)])
def test_learners_wrong_answers_fail_with_a_message_naming_the_fix(exercise_id, wrong, words) -> None:
    result = check(exercise_id, wrong)
    assert result.status == "fail", result.message
    assert "Traceback" not in result.message
    for word in words:
        assert word in result.message, result.message


def _memory_loops(model, optimizer, dtype):
    per_param = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}[optimizer]
    out = {"params": 0, "grads": 0, "optimizer_state": 0}
    for p in model.parameters():
        nbytes = p.numel() * torch.empty((), dtype=dtype).element_size()
        out["params"] += nbytes
        if p.requires_grad:
            out["grads"] += nbytes
            out["optimizer_state"] += per_param * nbytes
    return out


def _saved_setdefault(model, x):
    skip = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages = {}

    def pack(t):
        s = t.untyped_storage()
        if s.data_ptr() not in skip:
            storages.setdefault(s.data_ptr(), s.nbytes())
        return t.detach()

    def unpack(t):
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        out = model(x)
    del out
    return int(sum(storages.values()))


RIGHT = [
    ("08.training_memory", _memory()),
    ("08.training_memory", _memory_loops),
    ("08.saved_activation_bytes", _saved()),
    ("08.saved_activation_bytes", _saved_setdefault),
    ("08.amp_train_step", _amp()),
    ("08.amp_train_step", lambda m, x, y, lf, opt, sc, dt: _amp()(m, x, y, lf, opt, sc, dt)),
]


@pytest.mark.parametrize(("exercise_id", "right"), RIGHT, ids=[f"{e}-{i}" for i, (e, _) in enumerate(RIGHT)])
def test_learners_right_answers_pass(exercise_id, right) -> None:
    result = check(exercise_id, right)
    assert result.passed, result.message


def test_amp_zero_grad_keeping_zeros_passes() -> None:
    def keep_zeros(model, x, y, loss_fn, optimizer, scaler, device_type):
        optimizer.zero_grad(set_to_none=False)
        with torch.autocast(device_type=device_type):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return float(loss)
    assert check("08.amp_train_step", keep_zeros).passed
