"""The training doctor's checks on objects and tensors (no training runs here).

Each function looks at something the learner handed to :func:`course_utils.doctor.diagnose`
(or at what reached the loss during a probe) and returns findings; :mod:`.probes` runs
the training step, :mod:`.diagnose` puts everything together.

Example:
    >>> import torch
    >>> from torch import nn
    >>> pred, target = torch.randn(8, 1), torch.randn(8)
    >>> [f.code for f in loss_input_findings(pred, target, nn.MSELoss(), autocast=False)]
    ['BROADCAST_IN_LOSS']
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .report import Finding, finding

_CE_LOSSES = (nn.CrossEntropyLoss, nn.NLLLoss)
_REGRESSION_LOSSES = (nn.MSELoss, nn.L1Loss, nn.HuberLoss, nn.SmoothL1Loss, nn.BCELoss, nn.BCEWithLogitsLoss)


def leaves(obj: Any, path: str = "batch") -> Iterator[tuple[str, torch.Tensor]]:
    """(path, tensor) for every tensor in a nested tuple/list/dict."""
    if isinstance(obj, torch.Tensor):
        yield path, obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from leaves(value, f"{path}[{key!r}]")
    elif isinstance(obj, (list, tuple)):
        for index, value in enumerate(obj):
            yield from leaves(value, f"{path}[{index}]")


def _names(items: list[str], limit: int = 4) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _has_values(t: torch.Tensor) -> bool:
    return t.device.type != "meta" and t.numel() > 0


def is_cross_entropy(loss_fn: Any) -> bool:
    return isinstance(loss_fn, _CE_LOSSES) or loss_fn in (F.cross_entropy, F.nll_loss)


def class_index_shaped(pred: torch.Tensor, target: torch.Tensor) -> bool:
    """True when target looks like class indices for pred: pred (N, C, ...) and target (N, ...)."""
    return (pred.dim() >= 2 and target.dim() == pred.dim() - 1 and target.shape[0] == pred.shape[0]
            and target.shape[1:] == pred.shape[2:])


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
    observed = (f"{len(missing)} of {len(trainable)} trainable parameter tensors "
                f"({sum(p.numel() for _, p in missing):,} of {sum(p.numel() for _, p in trainable):,} "
                f"values) are not in the optimizer: {_names([n for n, _ in missing])}.")
    if foreign:
        observed += (f" The optimizer holds {foreign} tensor(s) that are not parameters of this model: "
                     "was it created before a layer was replaced?")
    return [finding("PARAM_NOT_IN_OPTIMIZER", "error", observed,
                    "optimizer.step() only updates the tensors it was given, so these layers keep their "
                    "initial random weights while their gradients are computed for nothing.",
                    "create the optimizer after the model is complete, from all of its parameters: "
                    "torch.optim.Adam(model.parameters(), lr=...); rebuild it after replacing a layer. "
                    "To freeze layers on purpose, call layer.requires_grad_(False).")]


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
    where = "; ".join(f"{name} on {', '.join(sorted(devs))}" for name, devs in places.items())
    return [finding("DEVICE_MISMATCH", "error", f"tensors live on {len(devices)} devices: {where}.",
                    "PyTorch never moves data between devices by itself: an operation whose inputs sit "
                    "on different devices raises 'Expected all tensors to be on the same device' (or "
                    "'not on the expected device').",
                    "choose one device, e.g. device = torch.device('cuda' if torch.cuda.is_available() "
                    "else 'cpu'); call model.to(device) once and move every batch in the loop: "
                    "x, y = x.to(device), y.to(device) (and loss_fn.to(device) if it holds weights).")]


def input_findings(x: Any, model: nn.Module) -> list[Finding]:
    """NAN_OR_INF in the inputs, DTYPE_MISMATCH of float inputs, INPUT_NOT_NORMALIZED."""
    if not isinstance(x, torch.Tensor) or not _has_values(x) or not x.is_floating_point():
        return []
    found: list[Finding] = []
    finite = torch.isfinite(x)
    if not bool(finite.all()):
        n_nan, n_inf = int(torch.isnan(x).sum()), int(torch.isinf(x).sum())
        bad_rows = int((~finite).reshape(x.shape[0], -1).any(dim=1).sum()) if x.dim() else 1
        found.append(finding(
            "NAN_OR_INF", "error",
            f"the input batch contains {n_nan} NaN and {n_inf} Inf values (in {bad_rows} of "
            f"{x.shape[0] if x.dim() else 1} samples).",
            "the loss averages all samples, so one NaN input makes the loss NaN, and after one "
            "optimizer step every weight is NaN.",
            "find them in the data: torch.isfinite(x).all(dim=1) marks good rows; fix the "
            "preprocessing (division by zero, log of 0) or drop/fill those samples before training."))
    param = next((p for p in model.parameters() if p.is_floating_point()), None)
    if param is not None and param.dtype != x.dtype:
        found.append(finding(
            "DTYPE_MISMATCH", "error",
            f"the inputs are {x.dtype} but the model's parameters are {param.dtype}.",
            "layers need inputs and weights of one dtype ('mat1 and mat2 must have the same dtype'); "
            "NumPy arrays are float64 by default, so torch.from_numpy(array) gives float64 tensors.",
            f"convert the data once: x = x.to({param.dtype}) (e.g. torch.tensor(array, "
            "dtype=torch.float32)); do not convert the model to float64: slower, twice the memory."))
    if bool(finite.all()) and x.dim() >= 1 and x.shape[0] >= 2:
        found += _scale_findings(x)
    return found


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
    observed = (f"input values range from {float(data.min()):.4g} to {float(data.max()):.4g} "
                f"(mean {float(data.mean()):.4g}, std {float(data.std()):.4g}")
    if spread > 100:
        observed += (f"; feature {int(stds.argmax())} has std {float(stds.max()):.4g} while feature "
                     f"{int(torch.where(stds > 0, stds, math.inf).argmin())} has std "
                     f"{float(positive.min()):.4g}")
    return [finding("INPUT_NOT_NORMALIZED", "warning", observed + ").",
                    "a layer's outputs and its weight gradients scale with its inputs: with large "
                    "inputs a learning rate that suits normalised data makes updates far too big "
                    "(oscillation, divergence, saturated activations), and large-scale features "
                    "drown out small ones.",
                    "standardise with statistics of the training split: x = (x - mean) / std per "
                    "feature or channel (images: transforms.v2.ToDtype(torch.float32, scale=True) "
                    "then transforms.v2.Normalize(mean, std)); use the same numbers for validation.")]


# --- what reaches the loss ---------------------------------------------------------------------

def label_finding(pred: torch.Tensor, target: torch.Tensor, loss_fn: Any) -> Finding | None:
    """LABEL_OUT_OF_RANGE, checked *before* the loss runs (a GPU would hit a device-side assert)."""
    if not (pred.is_floating_point() and not target.is_floating_point() and target.dtype != torch.bool
            and class_index_shaped(pred, target) and _has_values(target)):
        return None
    classes = pred.shape[1]
    valid = target[target != getattr(loss_fn, "ignore_index", -100)]
    if valid.numel() == 0:
        return None
    low, high = int(valid.min()), int(valid.max())
    if low >= 0 and high < classes:
        return None
    bad = int(((valid < 0) | (valid >= classes)).sum())
    observed = (f"labels range from {low} to {high} ({bad} of {valid.numel()} out of range), but the "
                f"model outputs {classes} scores per sample, so valid labels are 0..{classes - 1}.")
    if low >= 1 and high == classes:
        observed += " They look 1-based."
    return finding("LABEL_OUT_OF_RANGE", "error", observed,
                   f"the loss uses each label as an index into the scores: on the CPU it raises 'Target "
                   f"{high if high >= classes else low} is out of bounds', on a GPU a device-side assert "
                   "that breaks the whole CUDA session.",
                   "map the labels to 0..C-1 (y - 1 for 1-based labels, or a dict from class name to "
                   "index), or give the last layer one output per class.")


def loss_input_findings(pred: Any, target: Any, loss_fn: Any, autocast: bool) -> list[Finding]:
    """SOFTMAX_BEFORE_CE, BROADCAST_IN_LOSS and DTYPE_MISMATCH from the loss's two inputs."""
    if not (isinstance(pred, torch.Tensor) and isinstance(target, torch.Tensor)):
        return []
    found = [f for f in (label_finding(pred, target, loss_fn), _softmax_finding(pred, target, loss_fn),
                         _broadcast_finding(pred, target), _dtype_finding(pred, target, loss_fn, autocast))
             if f is not None]
    return found


def _softmax_finding(pred: torch.Tensor, target: torch.Tensor, loss_fn: Any) -> Finding | None:
    if not (pred.is_floating_point() and _has_values(pred) and pred.dim() >= 1):
        return None
    p = pred.detach().float()
    in_unit = bool(p.min() >= -1e-6) and bool(p.max() <= 1 + 1e-6)
    if isinstance(loss_fn, nn.BCEWithLogitsLoss) or loss_fn is F.binary_cross_entropy_with_logits:
        if in_unit and p.numel() >= 16 and bool(p.min() > 0):
            return finding("SOFTMAX_BEFORE_CE", "error",
                           f"all {p.numel()} scores given to BCEWithLogitsLoss lie in (0, 1): they look "
                           "like sigmoid outputs, but this loss applies the sigmoid itself.",
                           "the doubled sigmoid squashes every score into (0.5, 0.73): gradients shrink "
                           "and the loss cannot get near 0.",
                           "return raw logits (remove the final sigmoid); apply torch.sigmoid only to "
                           "report probabilities.")
        return None
    ce_like = is_cross_entropy(loss_fn) or (not target.is_floating_point() and class_index_shaped(pred, target))
    if not (ce_like and p.dim() >= 2 and p.shape[1] >= 2 and in_unit):
        return None
    row_error = float((p.sum(dim=1) - 1).abs().max())
    if row_error > 1e-3:
        return None
    classes = p.shape[1]
    if isinstance(loss_fn, nn.NLLLoss) or loss_fn is F.nll_loss:
        return finding("SOFTMAX_BEFORE_CE", "error",
                       "NLLLoss received probabilities (in [0, 1], every row sums to 1) "
                       "instead of log-probabilities.",
                       "NLLLoss returns -input[label]: on probabilities that is -p, not -log p, so the "
                       "gradients are wrong and confident mistakes are barely punished.",
                       "end the model with log_softmax(dim=1) instead of softmax, or return logits and "
                       "use nn.CrossEntropyLoss.")
    floor = math.log(1 + (classes - 1) / math.e)
    return finding("SOFTMAX_BEFORE_CE", "error",
                   f"the scores given to the loss are probabilities: all in [0, 1] and every row sums to 1 "
                   f"over {classes} classes. CrossEntropyLoss applies log_softmax "
                   f"itself, so with {classes} classes the loss can never fall below {floor:.3f}.",
                   "softmax is applied twice: the scores are squashed into [0, 1], gradients shrink "
                   "and training crawls, then stalls at a high loss.",
                   "return raw logits from the model (remove the final nn.Softmax / .softmax(dim=1)); "
                   "CrossEntropyLoss expects logits. Use softmax only to report probabilities.")


def _broadcast_finding(pred: torch.Tensor, target: torch.Tensor) -> Finding | None:
    if pred.shape == target.shape or pred.dim() == 0 or target.dim() == 0:
        return None
    if not target.is_floating_point() and class_index_shaped(pred, target):
        return None
    try:
        shape = torch.broadcast_shapes(pred.shape, target.shape)
    except RuntimeError:
        return None
    terms = math.prod(shape)
    return finding("BROADCAST_IN_LOSS", "error",
                   f"prediction shape {tuple(pred.shape)} and target shape {tuple(target.shape)} differ; "
                   f"inside the loss they broadcast to {tuple(shape)}: {terms} terms instead of "
                   f"{max(pred.numel(), target.numel())}.",
                   "every prediction is compared with every target instead of its own: the loss looks "
                   "plausible, but its gradient pulls all predictions toward the average target, so the "
                   "model cannot fit (MSELoss only warns once).",
                   "make the shapes equal before the loss, e.g. pred.squeeze(1) or y.unsqueeze(1), and "
                   "keep `assert pred.shape == y.shape` in your training step.")


def _dtype_finding(pred: torch.Tensor, target: torch.Tensor, loss_fn: Any, autocast: bool) -> Finding | None:
    if not pred.is_floating_point():
        return None
    if is_cross_entropy(loss_fn) and target.is_floating_point() and class_index_shaped(pred, target):
        return finding("DTYPE_MISMATCH", "error",
                       f"the class labels are {target.dtype} with shape {tuple(target.shape)}, but "
                       f"{type(loss_fn).__name__} expects int64 class indices for that shape.",
                       "float targets are read as per-class probabilities, which must have the "
                       "prediction's shape; this call raises 'expected target dtype to be Long'.",
                       "convert the labels: y = y.long() (and create them as torch.int64 in the dataset).")
    if isinstance(loss_fn, _REGRESSION_LOSSES) and not target.is_floating_point():
        return finding("DTYPE_MISMATCH", "warning" if isinstance(loss_fn, (nn.MSELoss, nn.L1Loss)) else "error",
                       f"the targets are {target.dtype} but {type(loss_fn).__name__} compares them with "
                       f"{pred.dtype} predictions.",
                       "losses on continuous values expect float targets: some promote silently, "
                       "BCE losses raise a dtype error.",
                       f"convert the targets: y = y.to({pred.dtype}).")
    if target.is_floating_point() and target.dtype != pred.dtype and not autocast:
        return finding("DTYPE_MISMATCH", "warning",
                       f"the prediction is {pred.dtype} but the target is {target.dtype}, so the loss is "
                       f"computed in {torch.promote_types(pred.dtype, target.dtype)}.",
                       "silent type promotion: slower, more memory, and usually a sign that the targets "
                       "came from a NumPy float64 array.",
                       f"convert the targets once: y = y.to({pred.dtype}).")
    return None
