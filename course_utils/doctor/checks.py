"""Stage 1 of the training doctor: static checks of the objects handed to
:func:`course_utils.doctor.diagnose` (no training runs here).

:func:`static_checks` takes the :class:`.records.Inputs` and returns a :class:`.records.StaticRecord`:
findings about the optimizer's coverage, devices and the input batch (dtype, NaN, scale,
unscaled image pixels), the tensors ``model.parameters()`` does not see, and whether a step
can run at all.

Example:
    >>> import torch
    >>> from torch import nn
    >>> pixels = torch.randint(0, 256, (8, 1, 28, 28)).float()  # uint8 pixels, .float() but never / 255
    >>> [f.code for f in input_findings(pixels, nn.Conv2d(1, 4, 3))]
    ['INPUT_NOT_NORMALIZED']
    >>> [f.code for f in input_findings(pixels / 255, nn.Conv2d(1, 4, 3))]
    []
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from ..i18n import t
from .common import has_values, leaves, names
from .records import Finding, Hidden, Inputs, StaticRecord, finding


# --- the objects -----------------------------------------------------------------------------

def optimizer_findings(model: nn.Module, optimizer: torch.optim.Optimizer) -> list[Finding]:
    """PARAM_NOT_IN_OPTIMIZER: trainable parameters that optimizer.step() never touches."""
    in_optimizer = {id(p) for group in optimizer.param_groups for p in group["params"]}
    named = list(model.named_parameters())
    trainable = [(n, p) for n, p in named if p.requires_grad]
    missing = [(n, p) for n, p in trainable if id(p) not in in_optimizer]
    if not missing:
        return []
    model_ids = {id(p) for _, p in named}
    foreign = sum(1 for g in optimizer.param_groups for p in g["params"] if id(p) not in model_ids)
    observed = t("{n} of {total} trainable parameter tensors ({values:,} of {all_values:,} values) are not in "
                 "the optimizer: {names}.", n=len(missing), total=len(trainable),
                 values=sum(p.numel() for _, p in missing), all_values=sum(p.numel() for _, p in trainable),
                 names=names([n for n, _ in missing]))
    if foreign:
        observed += t(" The optimizer holds {foreign} tensor(s) that are not parameters of this model: "
                      "was it created before a layer was replaced?", foreign=foreign)
    return [finding("PARAM_NOT_IN_OPTIMIZER", "error", observed,
                    t("optimizer.step() only updates the tensors it was given, so these layers keep their "
                      "initial random weights while their gradients are computed for nothing."),
                    t("create the optimizer after the model is complete, from all of its parameters: "
                      "torch.optim.Adam(model.parameters(), lr=...); rebuild it after replacing a layer. "
                      "To freeze layers on purpose, call layer.requires_grad_(False)."))]


_TYPOS = ("require_grad", "requires_grads", "require_grads", "requiresgrad", "requires_gradient")


def frozen_findings(model: nn.Module, optimizer: torch.optim.Optimizer) -> list[Finding]:
    """NO_GRAD_FLOW from the flags alone: every tensor the optimizer holds is frozen
    (requires_grad=False), or a module carries a plain ``requires_grad`` attribute (``model.requires_grad
    = True`` sets an attribute and changes no parameter) that disagrees with its parameters; a warning
    when most of what the optimizer holds is frozen."""
    held = [p for group in optimizer.param_groups for p in group["params"]]
    names_of = {id(p): n for n, p in model.named_parameters()}
    frozen = [p for p in held if not p.requires_grad]
    found: list[Finding] = []
    for name, module in model.named_modules():
        flag = vars(module).get("requires_grad")
        params = list(module.parameters())
        if not isinstance(flag, bool) or not params:
            continue
        off = [n for n, p in module.named_parameters() if p.requires_grad != flag]
        if not off:
            continue
        label = f"model{'.' + name if name else ''}"
        found.append(finding(  # frozen parameters that stay frozen: an error; meant to freeze but trains: a warning
            "NO_GRAD_FLOW", "error" if flag else "warning",
            t("{label}.requires_grad is a plain attribute set to {flag}, but {n} of {total} parameter tensors "
              "of {label} have requires_grad={other}: {names}.", label=label, flag=flag, n=len(off),
              total=len(params), other=not flag, names=names(off)),
            t("an nn.Module has no requires_grad switch: `module.requires_grad = ...` only stores a new "
              "attribute, so the frozen parameters stay frozen and never train.") if flag else
            t("an nn.Module has no requires_grad switch: `module.requires_grad = ...` only stores a new "
              "attribute, so the parameters you meant to freeze still train."),
            t("call {label}.requires_grad_({flag}) (with the underscore: it sets the flag on every parameter), "
              "or loop: for p in {label}.parameters(): p.requires_grad = {flag}.", label=label, flag=flag)))
    typos = [(n, key, value) for n, p in model.named_parameters() for key, value in vars(p).items()
             if key in _TYPOS and isinstance(value, bool) and value != p.requires_grad]
    if typos:
        n, key, value = typos[0]
        found.append(finding(
            "NO_GRAD_FLOW", "error" if value else "warning",
            t("{n} parameter tensor(s) carry a plain attribute `{key}` = {value} (a misspelling of "
              "requires_grad) while their requires_grad is {other}: {names}.", n=len(typos), key=key,
              value=value, other=not value, names=names([item[0] for item in typos])),
            t("assigning `p.{key} = ...` creates a new attribute and changes nothing, so these parameters "
              "stay frozen and never train.", key=key) if value else
            t("assigning `p.{key} = ...` creates a new attribute and changes nothing, so these parameters "
              "still train although you meant to freeze them.", key=key),
            t("spell it requires_grad: for p in ...parameters(): p.requires_grad = {value} (or "
              "module.requires_grad_({value})).", value=value)))
    if held and len(frozen) == len(held):
        found.append(finding(
            "NO_GRAD_FLOW", "error",
            t("all {n} parameter tensors the optimizer holds ({values:,} values) have requires_grad=False: "
              "{names}.", n=len(held), values=sum(p.numel() for p in held),
              names=names([names_of.get(id(p), '?') for p in held])),
            t("backward() computes no gradient for frozen tensors, so optimizer.step() has nothing to apply "
              "and the model never changes (or loss.backward() raises 'element 0 of tensors does not require "
              "grad')."),
            t("unfreeze what should train: model.requires_grad_(True) (or layer.requires_grad_(True) for the "
              "layers to fine-tune); check that a freeze/unfreeze helper really sets p.requires_grad on each "
              "parameter.")))
    elif held and sum(p.numel() for p in frozen) > 0.5 * sum(p.numel() for p in held):
        found.append(finding(
            "NO_GRAD_FLOW", "warning",
            t("{n} of {total} parameter tensors the optimizer holds ({values:,} of {all_values:,} values) have "
              "requires_grad=False: {names}. They will never change.", n=len(frozen), total=len(held),
              values=sum(p.numel() for p in frozen), all_values=sum(p.numel() for p in held),
              names=names([names_of.get(id(p), '?') for p in frozen])),
            t("frozen on purpose (fine-tuning only a head) this is fine; but if a freeze/unfreeze helper was "
              "meant to make them trainable, most of the model is not learning."),
            t("to train them: layer.requires_grad_(True); frozen on purpose: build the optimizer from the "
              "trainable ones only, torch.optim.Adam((p for p in model.parameters() if p.requires_grad), ...).")))
    return found


def _containers(value: Any, depth: int = 0) -> Iterator[Any]:
    """Items of a plain list/tuple/dict attribute (two levels deep), or the value itself."""
    if isinstance(value, (list, tuple)) and depth < 2:
        for item in value:
            yield from _containers(item, depth + 1)
    elif isinstance(value, dict) and depth < 2:
        for item in value.values():
            yield from _containers(item, depth + 1)
    else:
        yield value


def hidden_tensors(model: nn.Module, optimizer: torch.optim.Optimizer) -> list[Hidden]:
    """Tensors that require gradients but that ``model.parameters()`` does not see: layers kept in
    a plain Python list/dict, tensors with requires_grad=True stored on the model. Whether the loss
    reaches them is decided after the probes (a frozen teacher hidden on purpose is fine)."""
    registered = {id(m) for m in model.modules()}
    params = {id(p) for p in model.parameters()}
    in_opt = {id(p) for group in optimizer.param_groups for p in group["params"]}
    hidden: list[Hidden] = []
    seen: set[int] = set()
    for name, module in model.named_modules():
        for attr, value in vars(module).items():
            if attr in ("_parameters", "_buffers", "_modules") or isinstance(value, (nn.Module, str, int, float)):
                continue
            found: list[torch.Tensor] = []
            for item in _containers(value):
                if isinstance(item, nn.Module) and id(item) not in registered:
                    found += [p for p in item.parameters() if id(p) not in params and id(p) not in seen]
                elif (isinstance(item, torch.Tensor) and item.requires_grad and item.is_leaf
                      and id(item) not in params and id(item) not in seen):
                    found.append(item)
            seen.update(id(t) for t in found)
            if found:
                hidden.append(Hidden(f"model.{name + '.' if name else ''}{attr}", type(value).__name__,
                                     [id(t) for t in found], [t.numel() for t in found],
                                     [id(t) in in_opt for t in found]))
    return hidden


def device_findings(model: nn.Module, batch: Any, loss_fn: Any) -> list[Finding]:
    """DEVICE_MISMATCH: model, batch and loss tensors not all on one device."""
    places: dict[str, set[str]] = {}
    for tensor in list(model.parameters()) + list(model.buffers()):
        places.setdefault("model", set()).add(str(tensor.device))
    for path, tensor in leaves(batch):
        places.setdefault(path, set()).add(str(tensor.device))
    if isinstance(loss_fn, nn.Module):
        for tensor in list(loss_fn.parameters()) + list(loss_fn.buffers()):
            places.setdefault("loss_fn", set()).add(str(tensor.device))
    devices = set().union(*places.values()) if places else set()
    if len(devices) <= 1:
        return []
    where = "; ".join(t("{name} on {devices}", name=name, devices=", ".join(sorted(devs)))
                       for name, devs in places.items())
    return [finding("DEVICE_MISMATCH", "error", t("tensors live on {n} devices: {where}.", n=len(devices), where=where),
                    t("PyTorch never moves data between devices by itself: an operation whose inputs sit "
                      "on different devices raises 'Expected all tensors to be on the same device' (or "
                      "'not on the expected device')."),
                    t("choose one device, e.g. device = torch.device('cuda' if torch.cuda.is_available() "
                      "else 'cpu'); call model.to(device) once and move every batch in the loop: "
                      "x, y = x.to(device), y.to(device) (and loss_fn.to(device) if it holds weights)."))]


def input_findings(x: Any, model: nn.Module) -> list[Finding]:
    """NAN_OR_INF in the inputs, DTYPE_MISMATCH of float inputs, INPUT_NOT_NORMALIZED."""
    if not isinstance(x, torch.Tensor) or not has_values(x):
        return []
    param = next((p for p in model.parameters() if p.is_floating_point()), None)
    if x.dtype == torch.uint8 and x.dim() >= 3 and param is not None:
        return [finding(
            "DTYPE_MISMATCH", "error",
            t("the inputs are uint8 {shape} with values {low}..{high} (raw image pixels), but the model's "
              "parameters are {dtype}.", shape=tuple(x.shape), low=int(x.min()), high=int(x.max()),
              dtype=param.dtype),
            t("layers need float inputs ('Input type (unsigned char) and bias type (float) should be the "
              "same'); and converting with .float() alone leaves values up to 255, far too large for the "
              "initial weights: the loss explodes or stalls."),
            t("convert and scale once: x = x.float() / 255 (torchvision: transforms.v2.ToDtype(torch.float32, "
              "scale=True)), then normalise with the training set's mean and std."))] + (
            _scale_findings(x.float()) if int(x.max()) > 15 else [])
    if not x.is_floating_point():
        return []
    found: list[Finding] = []
    finite = torch.isfinite(x)
    if not bool(finite.all()):
        n_nan, n_inf = int(torch.isnan(x).sum()), int(torch.isinf(x).sum())
        bad_rows = int((~finite).reshape(x.shape[0], -1).any(dim=1).sum()) if x.dim() else 1
        found.append(finding(
            "NAN_OR_INF", "error",
            t("the input batch contains {nan} NaN and {inf} Inf values (in {rows} of {n} samples).",
              nan=n_nan, inf=n_inf, rows=bad_rows, n=x.shape[0] if x.dim() else 1),
            t("the loss averages all samples, so one NaN input makes the loss NaN, and after one "
              "optimizer step every weight is NaN."),
            t("find them in the data: torch.isfinite(x).all(dim=1) marks good rows; fix the "
              "preprocessing (division by zero, log of 0) or drop/fill those samples before training.")))
    if param is not None and param.dtype != x.dtype:
        found.append(finding(
            "DTYPE_MISMATCH", "error",
            t("the inputs are {got} but the model's parameters are {want}.", got=x.dtype, want=param.dtype),
            t("layers need inputs and weights of one dtype ('mat1 and mat2 must have the same dtype'); "
              "NumPy arrays are float64 by default, so torch.from_numpy(array) gives float64 tensors."),
            t("convert the data once: x = x.to({dtype}) (e.g. torch.tensor(array, dtype=torch.float32)); "
              "do not convert the model to float64: slower, twice the memory.", dtype=param.dtype)))
    if bool(finite.all()) and x.dim() >= 1 and x.shape[0] >= 2:
        found += _scale_findings(x)
    return found


def _pixel_share(data: torch.Tensor) -> float:
    return float((data == data.round()).double().mean())


def _pixels(data: torch.Tensor) -> bool:
    """Values that look like 8-bit pixels: all in 0..255, most of them whole numbers, the largest
    above 15, and image-shaped: (N, C, H, W), (N, H, W), or (N, D) with D >= 64 flattened pixels."""
    low, high = float(data.min()), float(data.max())
    shaped = data.dim() in (3, 4) or (data.dim() == 2 and data.shape[1] >= 64)
    return shaped and low >= 0 and 15 < high <= 255 and _pixel_share(data) > 0.9


def _scale_findings(x: torch.Tensor) -> list[Finding]:
    data = x.detach().double()
    if data.dim() in (2, 3, 4):  # (N, features) or (N, channels, ...): statistics per feature/channel
        per = data.transpose(0, 1).reshape(data.shape[1], -1)
    else:
        per = data.reshape(1, -1)
    means, stds = per.mean(dim=1), per.std(dim=1)
    scale = float(torch.maximum(means.abs(), stds).max())
    spread = 0.0
    if data.dim() == 2 and data.shape[1] >= 2 and bool((stds > 0).any()):
        positive = stds[stds > 0]
        spread = float(positive.max() / positive.min())
    if scale <= 5 and spread <= 100:
        return []
    stats = t("mean {mean:.4g}, std {std:.4g}", mean=float(data.mean()), std=float(data.std()))
    if spread > 100:
        stats += t("; feature {wide} has std {high:.4g} while feature {narrow} has std {low:.4g}",
                   wide=int(stds.argmax()), high=float(stds.max()),
                   narrow=int(torch.where(stds > 0, stds, math.inf).argmin()), low=float(positive.min()))
    low, high = float(data.min()), float(data.max())
    if _pixels(data):
        return [finding("INPUT_NOT_NORMALIZED", "warning",
                        t("input values range from {low:.4g} to {high:.4g} ({stats}): {share:.0%} of the values are "
                          "whole numbers from 0 to 255, raw 8-bit image pixels (a uint8 source) converted to float "
                          "but never scaled to [0, 1].", low=low, high=high, stats=stats, share=_pixel_share(data)),
                        t("the first layer's weights are initialised for inputs of size about 1: with pixels "
                          "up to 255 the activations and gradients are 100 times too large, so training "
                          "diverges or saturates (and a loss stuck at chance level often follows)."),
                        t("scale the images: x = x.float() / 255 (torchvision: transforms.ToTensor() or "
                          "transforms.v2.ToDtype(torch.float32, scale=True)), then transforms.v2.Normalize(mean, "
                          "std) with the training set's statistics; use the same for validation."))]
    return [finding("INPUT_NOT_NORMALIZED", "warning",
                    t("input values range from {low:.4g} to {high:.4g} ({stats}).", low=low, high=high, stats=stats),
                    t("a layer's outputs and its weight gradients scale with its inputs: with large "
                      "inputs a learning rate that suits normalised data makes updates far too big "
                      "(oscillation, divergence, saturated activations), and large-scale features "
                      "drown out small ones."),
                    t("standardise with statistics of the training split: x = (x - mean) / std per "
                      "feature or channel (images: transforms.v2.ToDtype(torch.float32, scale=True) "
                      "then transforms.v2.Normalize(mean, std)); use the same numbers for validation."))]




def static_checks(inputs: Inputs) -> StaticRecord:
    """Stage 1: what can be seen without running a step."""
    model, batch = inputs.model, inputs.batch
    record = StaticRecord(optimizer_findings(model, inputs.optimizer) + frozen_findings(model, inputs.optimizer)
                          + device_findings(model, batch, inputs.loss_fn))
    x = inputs.x if inputs.x is not None or not isinstance(batch, torch.Tensor) else batch
    if "DEVICE_MISMATCH" in record.codes:
        record.stop = "devices"
    else:
        if inputs.standard:
            record.findings += input_findings(x, model)
        else:  # the step may convert the batch: judged on what reaches the model (see analysis)
            record.deferred = input_findings(x, model)
        if any(t.device.type == "meta" for _, t in leaves(batch)):
            record.stop = "meta"
            record.notes.append(t("the batch is on the meta device (shapes only): no step could run."))
    record.hidden = hidden_tensors(model, inputs.optimizer)
    return record
