"""Small helpers every stage of the training doctor uses: the batch's layout, the kind of loss,
the rule that says a loss diverged, and the guard that stops a loss call before it does damage.

Example:
    >>> split_batch((1, 2)), split_batch({"image": 1, "label": 2}), split_batch([1, 2, 3])
    ((1, 2), (1, 2), None)
    >>> divergence([2.3, 1.0, 0.9, 4.0, 30.0])  # halved first, then exploded
    'fell to 0.9, then rose to 4 (1.74x its start) at step 4, peaking at 30'
"""

from __future__ import annotations

import math
import traceback
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..i18n import t

#: The one-batch overfitting probe trains on this many samples (fast, and easy to memorise).
OVERFIT_SAMPLES = 16
#: The most steps the one-batch probe runs (small models; larger ones get fewer, see probes.step_budget).
MAX_STEPS = 60
_PAIRS = [("x", "y"), ("input", "target"), ("inputs", "targets"), ("image", "label"),
          ("images", "labels"), ("features", "target"), ("features", "targets")]
_CE_LOSSES = (nn.CrossEntropyLoss, nn.NLLLoss)
#: Losses whose target has the prediction's shape.
REGRESSION_LOSSES = (nn.MSELoss, nn.L1Loss, nn.HuberLoss, nn.SmoothL1Loss, nn.BCELoss, nn.BCEWithLogitsLoss)


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


def split_batch(batch: Any) -> tuple[Any, Any] | None:
    """(inputs, targets) from a batch: a pair ``(x, y)`` or a dict such as ``{"x": ..., "y": ...}``."""
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        return batch[0], batch[1]
    if isinstance(batch, dict):
        for x_key, y_key in _PAIRS:
            if x_key in batch and y_key in batch:
                return batch[x_key], batch[y_key]
    return None


def _sample_list(batch: Any) -> bool:
    """A list of samples: every item a dict, or every item a tuple/list (one sample each)."""
    return (isinstance(batch, list) and len(batch) >= 2
            and (all(isinstance(v, dict) for v in batch) or all(isinstance(v, (tuple, list)) for v in batch)))


def _per_sample_lists(batch: Any) -> int:
    """The common length of the per-sample lists at the top of a batch (detection style:
    ``(list of images, list of target dicts)``, or a list of sample dicts), or 0."""
    if _sample_list(batch):
        return len(batch)
    items = list(batch.values()) if isinstance(batch, dict) else list(batch) if isinstance(batch, (tuple, list)) else []
    lists = {len(v) for v in items if isinstance(v, list) and v}
    return lists.pop() if len(lists) == 1 else 0


def samples(batch: Any) -> int:
    """The batch size: the leading size all tensors share, or the length of the per-sample lists
    (a list of images and a list of target dicts); 0 when neither can be read."""
    if _sample_list(batch):
        return len(batch)
    sizes = {t.shape[0] for _, t in leaves(batch) if t.dim() > 0}
    if len(sizes) == 1:
        return sizes.pop()
    return _per_sample_lists(batch)


def first_samples(batch: Any, n: int) -> Any:
    """The first ``n`` samples of every tensor in the batch (the batch itself when it is not larger,
    or when its size cannot be read). Per-sample lists (detection style) are cut to ``n`` items.

    >>> x, y = first_samples((torch.zeros(64, 3), torch.zeros(64)), 16)
    >>> x.shape, y.shape
    (torch.Size([16, 3]), torch.Size([16]))
    >>> images, targets = first_samples(([torch.zeros(3, 8, 8)] * 20, [{"boxes": torch.zeros(2, 4)}] * 20), 4)
    >>> len(images), len(targets)
    (4, 4)
    """
    total = samples(batch)
    if total <= n:
        return batch
    if _sample_list(batch):
        return batch[:n]
    if len({t.shape[0] for _, t in leaves(batch) if t.dim() > 0}) != 1:  # per-sample lists
        if isinstance(batch, dict):
            return {k: v[:n] if isinstance(v, list) and len(v) == total else v for k, v in batch.items()}
        items = [v[:n] if isinstance(v, list) and len(v) == total else v for v in batch]
        return type(batch)(*items) if hasattr(batch, "_fields") else type(batch)(items)

    def cut(obj: Any) -> Any:
        if isinstance(obj, torch.Tensor):
            return obj[:n] if obj.dim() > 0 else obj
        if isinstance(obj, dict):
            return {key: cut(value) for key, value in obj.items()}
        if isinstance(obj, (list, tuple)):
            items = [cut(value) for value in obj]
            return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
        return obj
    return cut(batch)


def describe(batch: Any, depth: int = 0) -> str:
    """A short description of a batch's structure.

    >>> describe((torch.zeros(4, 3), [{"boxes": torch.zeros(1, 4)}, {"boxes": torch.zeros(2, 4)}]))
    "tuple(tensor float32 (4, 3), list of 2 dicts with keys 'boxes')"
    """
    if isinstance(batch, torch.Tensor):
        return f"tensor {str(batch.dtype).replace('torch.', '')} {tuple(batch.shape)}"
    if depth >= 3:
        return type(batch).__name__
    if isinstance(batch, dict):
        return "dict(" + ", ".join(f"{k!r}: {describe(v, depth + 1)}" for k, v in list(batch.items())[:6]) + ")"
    if isinstance(batch, list) and batch and len({type(v) for v in batch}) == 1 and (
            len(batch) > 2 or isinstance(batch[0], dict)):
        first = batch[0]
        if isinstance(first, torch.Tensor):
            shapes = {tuple(v.shape) for v in batch}
            if len(shapes) == 1:
                return t("list of {n} tensors {shape}", n=len(batch), shape=str(shapes.pop()))
            return t("list of {n} tensors of different shapes", n=len(batch))
        if isinstance(first, dict):
            return t("list of {n} dicts with keys {keys}", n=len(batch),
                     keys=", ".join(repr(k) for k in list(first)[:6]))
        return t("list of {n} {kind} items", n=len(batch), kind=type(first).__name__)
    if isinstance(batch, (list, tuple)):
        return f"{type(batch).__name__}(" + ", ".join(describe(v, depth + 1) for v in batch[:6]) + ")"
    return type(batch).__name__


def standard_step(model: nn.Module, batch: Any, optimizer: torch.optim.Optimizer, loss_fn: Any) -> Any:
    """The textbook step diagnose() runs without a ``train_step``. It leaves the model's
    train/eval mode as it is (so a model passed in eval mode trains in eval mode)."""
    x, y = split_batch(batch)  # type: ignore[misc]
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


def names(items: list[str], limit: int = 4) -> str:
    shown = ", ".join(items[:limit])
    return shown + (t(" and {n} more", n=len(items) - limit) if len(items) > limit else "")


def has_values(t: torch.Tensor) -> bool:
    return t.device.type != "meta" and t.numel() > 0


def is_cross_entropy(loss_fn: Any) -> bool:
    return isinstance(loss_fn, _CE_LOSSES) or loss_fn in (F.cross_entropy, F.nll_loss)


def is_nll(loss_fn: Any) -> bool:
    return isinstance(loss_fn, nn.NLLLoss) or loss_fn is F.nll_loss


def is_bce(loss_fn: Any) -> bool:
    """BCELoss (probabilities in), not BCEWithLogitsLoss."""
    return isinstance(loss_fn, nn.BCELoss) or loss_fn is F.binary_cross_entropy


def is_regression(loss_fn: Any) -> bool:
    return (isinstance(loss_fn, (nn.MSELoss, nn.L1Loss, nn.HuberLoss, nn.SmoothL1Loss))
            or loss_fn in (F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss))


def class_index_shaped(pred: torch.Tensor, target: torch.Tensor) -> bool:
    """True when target looks like class indices for pred: pred (N, C, ...) and target (N, ...)."""
    return (pred.dim() >= 2 and target.dim() == pred.dim() - 1 and target.shape[0] == pred.shape[0]
            and target.shape[1:] == pred.shape[2:])


def ignored_label(loss_fn: Any, ignore_index: int | None = None) -> int:
    """The label the loss skips: the ``ignore_index`` passed to the call, else the loss object's,
    else PyTorch's default -100."""
    if ignore_index is not None:
        return int(ignore_index)
    return int(getattr(loss_fn, "ignore_index", -100))


def labels_out_of_range(pred: torch.Tensor, target: torch.Tensor, loss_fn: Any,
                        ignore_index: int | None = None) -> bool:
    """Class-index labels outside 0..C-1 (the ignored label excluded), for a cross-entropy loss
    (CrossEntropyLoss, NLLLoss, F.cross_entropy, F.nll_loss). Other losses may mask labels
    themselves (-1 for "no label"), so their labels are not judged before the call."""
    if not (is_cross_entropy(loss_fn) and pred.is_floating_point() and not target.is_floating_point()
            and target.dtype != torch.bool and class_index_shaped(pred, target) and has_values(target)):
        return False
    valid = target[target != ignored_label(loss_fn, ignore_index)]
    return valid.numel() > 0 and (int(valid.min()) < 0 or int(valid.max()) >= pred.shape[1])


def targets_shaped_n1(pred: torch.Tensor, target: torch.Tensor, loss_fn: Any) -> bool:
    """Class-index targets shaped (N, 1, ...) for a (N, C, ...) prediction of a cross-entropy loss."""
    return bool(is_cross_entropy(loss_fn) and pred.is_floating_point() and not target.is_floating_point()
                and pred.dim() >= 2 and target.dim() == pred.dim() and target.shape[1] == 1
                and target.shape[0] == pred.shape[0] and target.shape[2:] == pred.shape[2:] and pred.shape[1] >= 2)


def classes_last(pred: torch.Tensor, target: torch.Tensor, loss_fn: Any) -> bool:
    """A cross-entropy prediction (N, T, C) for targets (N, T): the classes are in the last
    dimension, but the loss reads dimension 1 as the classes (T != C, so it is not ambiguous)."""
    return bool(is_cross_entropy(loss_fn) and pred.is_floating_point() and not target.is_floating_point()
                and pred.dim() == 3 and target.dim() == 2 and tuple(target.shape) == tuple(pred.shape[:2])
                and pred.shape[1] != pred.shape[2] and pred.shape[2] >= 2)


def one_hot_targets(pred: torch.Tensor, target: torch.Tensor, loss_fn: Any) -> bool:
    """Integer one-hot targets (N, C) of 0/1 with one 1 per row, for a cross-entropy loss that
    expects class indices (N,) (the loss would raise 'multi-target not supported')."""
    if not (is_cross_entropy(loss_fn) and pred.is_floating_point() and not target.is_floating_point()
            and target.dtype != torch.bool and pred.dim() == 2 and target.shape == pred.shape
            and pred.shape[1] >= 2 and has_values(target)):
        return False
    return bool(((target == 0) | (target == 1)).all() and (target.sum(dim=1) == 1).all())


def regression_on_labels(pred: torch.Tensor, target: torch.Tensor, loss_fn: Any) -> bool:
    """A regression loss (MSE, L1, ...) comparing (N, C) class scores with (N,) integer class labels."""
    return bool(is_regression(loss_fn) and pred.is_floating_point() and not target.is_floating_point()
                and target.dtype != torch.bool and pred.dim() == 2 and pred.shape[1] >= 2
                and class_index_shaped(pred, target))


def bce_out_of_range(pred: torch.Tensor, loss_fn: Any) -> bool:
    """BCELoss inputs outside [0, 1] (the loss would raise; on a GPU, a device-side assert)."""
    return bool(is_bce(loss_fn) and pred.is_floating_point() and has_values(pred)
                and bool(((pred < 0) | (pred > 1)).any()))


def loss_guard(pred: torch.Tensor, target: torch.Tensor, loss_fn: Any, ignore_index: int | None = None) -> str | None:
    """What must stop a loss call *before* it runs (labels out of range would hit a device-side
    assert on a GPU; the others raise an error that names no cause), or None."""
    if labels_out_of_range(pred, target, loss_fn, ignore_index):
        return "labels"
    if targets_shaped_n1(pred, target, loss_fn):
        return "target_n1"
    if classes_last(pred, target, loss_fn):
        return "class_dim"
    if one_hot_targets(pred, target, loss_fn):
        return "one_hot"
    if regression_on_labels(pred, target, loss_fn):
        return "regression_labels"
    if bce_out_of_range(pred, loss_fn):
        return "bce_range"
    return None


def learner_line(exc: BaseException) -> str:
    """The last line of the traceback that is neither torch nor course_utils code."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        name = frame.filename.replace("\\", "/")
        if "/torch/" not in name and "course_utils" not in name and frame.line:
            return f" (at `{frame.line.strip()}`)"
    return ""


def divergence(losses: list[float]) -> str | None:
    """How the loss diverged ("became nan at step 4", "rose to ... at step 2"), or None.

    Diverged: a non-finite loss, a loss above twice its start, or a loss that first halved and
    then climbed back above 1.5 times its start."""
    start = losses[0]
    best = math.inf
    for step, value in enumerate(losses, start=1):
        if not math.isfinite(value):
            if start > 0 and best <= 0.5 * start:
                return t("after falling to {best:.4g}, became {value} at step {step}", best=best, value=value,
                         step=step)
            return t("became {value} at step {step}", value=value, step=step)
        halved = start > 0 and best <= 0.5 * start
        if start > 0 and (value > 2 * start or (halved and value > 1.5 * start)):
            how = (t("fell to {best:.4g}, then rose to {value:.4g} ({ratio:.3g}x its start) at step {step}",
                     best=best, value=value, ratio=value / start, step=step) if halved else
                   t("rose to {value:.4g} ({ratio:.3g}x its start) at step {step}", value=value,
                     ratio=value / start, step=step))
            later = next(((n, v) for n, v in enumerate(losses, start=1) if not math.isfinite(v)), None)
            if later:
                return how + t(" and became {value} at step {step}", value=later[1], step=later[0])
            peak = max(losses)
            return how + (t(", peaking at {peak:.4g}", peak=peak) if peak > value else "")
        best = min(best, value)
    return None
