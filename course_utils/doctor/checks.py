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


def registration_findings(model: nn.Module, optimizer: torch.optim.Optimizer,
                          reached: set[int] | None = None) -> list[Finding]:
    """PARAMS_NOT_REGISTERED: layers kept in a plain Python list/dict, or tensors with
    requires_grad=True stored on the model, that model.parameters() does not see.

    ``reached``: ids of the leaf tensors the loss depends on, when a step ran; then only hidden
    tensors that the loss reaches count (a frozen teacher hidden in a list on purpose does not)."""
    registered = {id(m) for m in model.modules()}
    params = {id(p) for p in model.parameters()}
    in_opt = {id(p) for group in optimizer.param_groups for p in group["params"]}
    hidden: list[tuple[str, list[torch.Tensor]]] = []
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
            if reached is not None:
                found = [t for t in found if id(t) in reached]
            if found:
                hidden.append((f"model.{name + '.' if name else ''}{attr}", found))
    if not hidden:
        return []
    tensors = [t for _, ts in hidden for t in ts]
    covered = all(id(t) in in_opt for t in tensors)
    where = "; ".join(f"{label} ({type(getattr_path(model, label)).__name__}, {len(ts)} tensor(s), "
                      f"{sum(t.numel() for t in ts):,} values)" for label, ts in hidden[:4])
    observed = (f"{len(tensors)} tensor(s) that require gradients are not registered parameters of the model: "
                f"{where}. model.parameters() does not list them"
                + (", but the optimizer holds them." if covered else ", and the optimizer does not hold them."))
    why = ("nn.Module only registers layers assigned directly as attributes or kept in nn.ModuleList / "
           "nn.ModuleDict (tensors: nn.Parameter). Layers in a plain Python list or dict "
           + ("are trained here only because you passed them to the optimizer by hand, but " if covered else
              "keep their random initial weights (an optimizer built from model.parameters() never updates "
              "them), and ")
           + "model.to(device), model.train()/eval() and state_dict() skip them.")
    return [finding("PARAMS_NOT_REGISTERED", "warning" if covered else "error", observed, why,
                    "wrap the list: self.layers = nn.ModuleList([...]) (a dict: nn.ModuleDict({...})); wrap "
                    "tensors: self.w = nn.Parameter(torch.randn(...)); then build the optimizer from "
                    "model.parameters().")]


def getattr_path(model: nn.Module, label: str) -> Any:
    obj: Any = model
    for part in label.split(".")[1:]:
        obj = getattr(obj, part, None)
    return obj


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
    if not isinstance(x, torch.Tensor) or not _has_values(x):
        return []
    param = next((p for p in model.parameters() if p.is_floating_point()), None)
    if x.dtype == torch.uint8 and x.dim() >= 3 and param is not None:
        return [finding(
            "DTYPE_MISMATCH", "error",
            f"the inputs are uint8 {tuple(x.shape)} with values {int(x.min())}..{int(x.max())} (raw image "
            f"pixels), but the model's parameters are {param.dtype}.",
            "layers need float inputs ('Input type (unsigned char) and bias type (float) should be the "
            "same'); and converting with .float() alone leaves values up to 255, far too large for the "
            "initial weights: the loss explodes or stalls.",
            "convert and scale once: x = x.float() / 255 (torchvision: transforms.v2.ToDtype(torch.float32, "
            "scale=True)), then normalise with the training set's mean and std.")]
    if not x.is_floating_point():
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
    low, high = float(data.min()), float(data.max())
    if data.dim() in (3, 4) and low >= 0 and 1.5 < high <= 255 and bool((data == data.round()).float().mean() > 0.9):
        return [finding("INPUT_NOT_NORMALIZED", "warning",
                        observed + "): whole numbers from 0 to 255, raw image pixels never scaled.",
                        "the first layer's weights are initialised for inputs of size about 1: with pixels "
                        "up to 255 the activations and gradients are 100 times too large, so training "
                        "diverges or saturates (and a loss stuck at chance level often follows).",
                        "scale the images: x = x / 255 (torchvision: transforms.v2.ToDtype(torch.float32, "
                        "scale=True)), then transforms.v2.Normalize(mean, std) with the training set's "
                        "statistics; use the same for validation.")]
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


def loss_input_findings(pred: Any, target: Any, loss_fn: Any, autocast: bool, made_by: str | None = None,
                        reshaped_same: bool | None = None) -> list[Finding]:
    """SOFTMAX_BEFORE_CE, BROADCAST_IN_LOSS, TARGET_SHAPE and DTYPE_MISMATCH from the loss's two inputs.

    ``made_by``: the operation that produced ``pred`` (see :func:`.graph.producer`);
    ``reshaped_same``: whether the loss gives the same value with the target reshaped to the
    prediction's shape (then it reshapes internally and nothing broadcasts)."""
    if not (isinstance(pred, torch.Tensor) and isinstance(target, torch.Tensor)):
        return []
    found = [f for f in (label_finding(pred, target, loss_fn), target_shape_finding(pred, target, loss_fn),
                         _softmax_finding(pred, target, loss_fn, made_by),
                         _broadcast_finding(pred, target, loss_fn, reshaped_same),
                         _dtype_finding(pred, target, loss_fn, autocast))
             if f is not None]
    return found


_SOFTMAX_OPS = ("SoftmaxBackward0", "SafeSoftmaxBackward0")
_SIGMOID_OPS = ("SigmoidBackward0",)


def _softmax_finding(pred: torch.Tensor, target: torch.Tensor, loss_fn: Any, made_by: str | None) -> Finding | None:
    """Decided from the operation that produced the loss input (its grad_fn), never from values."""
    if made_by is None or not pred.is_floating_point():
        return None
    if isinstance(loss_fn, nn.BCEWithLogitsLoss) or loss_fn is F.binary_cross_entropy_with_logits:
        if made_by not in _SIGMOID_OPS:
            return None
        return finding("SOFTMAX_BEFORE_CE", "error",
                       f"the {pred.numel()} scores given to BCEWithLogitsLoss come straight from a sigmoid "
                       f"(the last operation before the loss is {made_by}), but this loss applies the "
                       "sigmoid itself.",
                       "the doubled sigmoid squashes every score into (0.5, 0.73): gradients shrink "
                       "and the loss cannot get near 0.",
                       "return raw logits (remove the final nn.Sigmoid / torch.sigmoid); apply "
                       "torch.sigmoid only to report probabilities. (Or keep the sigmoid and use nn.BCELoss.)")
    ce_like = is_cross_entropy(loss_fn) or (not target.is_floating_point() and class_index_shaped(pred, target))
    if not (ce_like and made_by in _SOFTMAX_OPS and pred.dim() >= 1):
        return None
    classes = pred.shape[1] if pred.dim() >= 2 else pred.shape[0]
    if isinstance(loss_fn, nn.NLLLoss) or loss_fn is F.nll_loss:
        return finding("SOFTMAX_BEFORE_CE", "error",
                       f"NLLLoss received the output of a softmax over {classes} classes (the last operation "
                       f"before the loss is {made_by}) instead of log-probabilities.",
                       "NLLLoss returns -input[label]: on probabilities that is -p, not -log p, so the "
                       "gradients are wrong and confident mistakes are barely punished.",
                       "end the model with log_softmax(dim=1) instead of softmax, or return logits and "
                       "use nn.CrossEntropyLoss.")
    floor = math.log(1 + (classes - 1) / math.e) if classes >= 2 else 0.0
    return finding("SOFTMAX_BEFORE_CE", "error",
                   f"the scores given to the loss come straight from a softmax (the last operation before "
                   f"the loss is {made_by}): they are probabilities over {classes} classes. CrossEntropyLoss "
                   f"applies log_softmax itself, so with {classes} classes the loss can never fall below "
                   f"{floor:.3f}.",
                   "softmax is applied twice: the scores are squashed into [0, 1], gradients shrink "
                   "and training crawls, then stalls at a high loss.",
                   "return raw logits from the model (remove the final nn.Softmax / .softmax(dim=1)); "
                   "CrossEntropyLoss expects logits. Use softmax only to report probabilities.")


def _shape_fix(pred: torch.Tensor, target: torch.Tensor) -> str:
    p, t = tuple(pred.shape), tuple(target.shape)
    if p == t + (1,):
        return (f"give the target the prediction's shape: y = y.unsqueeze(1) (or compare pred.squeeze(1) with y); "
                f"both are then {p}")
    if t == p + (1,):
        return f"drop the target's extra dimension: y = y.squeeze(1), so both are {p}"
    if pred.numel() == target.numel():
        return f"reshape one to the other: y = y.view_as(pred) (both {p})"
    return "make the shapes equal before the loss (check which dimension is the batch)"


def _broadcast_finding(pred: torch.Tensor, target: torch.Tensor, loss_fn: Any,
                       reshaped_same: bool | None) -> Finding | None:
    if pred.shape == target.shape or pred.dim() == 0 or target.dim() == 0:
        return None
    if not target.is_floating_point() and class_index_shaped(pred, target):
        return None
    if reshaped_same:  # the loss reshapes internally: same value with matching shapes
        return None
    known = isinstance(loss_fn, _REGRESSION_LOSSES) or loss_fn in (F.mse_loss, F.l1_loss, F.smooth_l1_loss)
    if reshaped_same is None and not known and pred.numel() != target.numel():
        return None
    try:
        shape = torch.broadcast_shapes(pred.shape, target.shape)
    except RuntimeError:
        return None
    if tuple(shape) in (tuple(pred.shape), tuple(target.shape)) and pred.numel() != target.numel():
        return None  # one side is expanded on purpose (e.g. one target for many predictions)
    terms = math.prod(shape)
    return finding("BROADCAST_IN_LOSS", "error",
                   f"prediction shape {tuple(pred.shape)} and target shape {tuple(target.shape)} differ; "
                   f"inside the loss they broadcast to {tuple(shape)}: {terms} terms instead of "
                   f"{max(pred.numel(), target.numel())}.",
                   "every prediction is compared with every target instead of its own: the loss looks "
                   "plausible, but its gradient pulls all predictions toward the average target, so the "
                   "model cannot fit (MSELoss only warns once).",
                   _shape_fix(pred, target) + "; keep `assert pred.shape == y.shape` in your training step.")


def target_shape_finding(pred: Any, target: Any, loss_fn: Any) -> Finding | None:
    """TARGET_SHAPE: class-index targets shaped (N, 1) for a (N, C) prediction (checked before the loss)."""
    if not (isinstance(pred, torch.Tensor) and isinstance(target, torch.Tensor) and is_cross_entropy(loss_fn)):
        return None
    if (pred.is_floating_point() and not target.is_floating_point() and pred.dim() >= 2
            and target.dim() == pred.dim() and target.shape[1] == 1 and target.shape[0] == pred.shape[0]
            and target.shape[2:] == pred.shape[2:] and pred.shape[1] >= 2):
        want = (pred.shape[0], *pred.shape[2:])
        return finding("TARGET_SHAPE", "error",
                       f"the class labels have shape {tuple(target.shape)} for a prediction of shape "
                       f"{tuple(pred.shape)}; {type(loss_fn).__name__ if isinstance(loss_fn, nn.Module) else 'cross_entropy'} "
                       f"expects one class index per sample, shape {want}.",
                       "with an extra dimension of size 1 the loss reads the target as a multi-dimensional "
                       "one and raises '0D or 1D target tensor expected, multi-target not supported'.",
                       "drop the extra dimension: y = y.squeeze(1) (or y.view(-1)); best in the dataset, "
                       "so each label is a plain integer.")
    return None


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
