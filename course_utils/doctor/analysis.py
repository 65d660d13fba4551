"""Stage 3 of the training doctor: turn the records of the static checks and the probes into
findings (:func:`analyse` returns a :class:`.records.Analysis`).

What reached the loss is judged from the graph (the ``grad_fn`` of the loss input: a softmax or
sigmoid before a loss that expects logits, NLLLoss without log_softmax, BCELoss without sigmoid,
a ReLU on a regression output), from the shapes and dtypes, and from what the step did to the
gradients; the one-batch run says whether the loss falls, diverges or settles at chance level.

Example:
    >>> record = OverfitRecord(losses=[2.3, 2.0, 1.1], lrs=[0.1], step_calls=3, changed=0.2, samples=16, budget=30)
    >>> found, notes = overfit_findings(record, None, blocked=False, input_warning=False)
    >>> found, notes[0]
    ([], 'one-batch overfit (first 16 samples, at most 30 steps): the loss fell from 2.3 to 1.1 in 3 steps (48% of the start) at lr 0.1.')
    >>> found, _ = overfit_findings(OverfitRecord([2.3, 9.0, float("nan")], [10.0], 3, 1.0, 8), None, False, False)
    >>> found[0].code, "became nan at step 3" in found[0].message
    ('LR_TOO_HIGH', True)
    >>> import torch
    >>> from torch import nn
    >>> pred, target = torch.randn(8, 1), torch.randn(8)
    >>> [f.code for f in loss_input_findings(pred, target, nn.MSELoss(), autocast=False)]
    ['BROADCAST_IN_LOSS']
    >>> logits = torch.randn(8, 3, requires_grad=True) * 2  # raw scores, no log_softmax
    >>> [f.code for f in loss_input_findings(logits, torch.zeros(8, dtype=torch.long), nn.NLLLoss(), False,
    ...                                      made_by="MulBackward0")]
    ['NLL_ON_LOGITS']
"""

from __future__ import annotations

import functools
import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .common import (
    OVERFIT_SAMPLES,
    REGRESSION_LOSSES,
    class_index_shaped,
    classes_last,
    describe,
    divergence,
    has_values,
    ignored_label,
    is_bce,
    is_cross_entropy,
    is_nll,
    is_regression,
    leaves,
    one_hot_targets,
    regression_on_labels,
    targets_shaped_n1,
)
from ..i18n import t, tn
from .checks import input_findings
from .errors import classify_exception
from .graph import floor, producer
from .records import (
    Analysis,
    Finding,
    Hidden,
    Inputs,
    OverfitRecord,
    ProbeRecord,
    StaticRecord,
    StepError,
    StepRecord,
    finding,
)


# --- what reaches the loss ---------------------------------------------------------------------

def label_finding(pred: torch.Tensor, target: torch.Tensor, loss_fn: Any, ignore_index: int | None = None,
                  conclusive: bool = False) -> Finding | None:
    """LABEL_OUT_OF_RANGE, checked *before* the loss runs (a GPU would hit a device-side assert).

    Only for the cross-entropy losses, whose convention is known (the ``ignore_index`` of the call
    or of the loss, else -100, is skipped); a loss of your own may mask labels itself (-1 for "no
    label"), so its labels are judged only when ``conclusive`` (the loss raised an index error)."""
    if not (pred.is_floating_point() and not target.is_floating_point() and target.dtype != torch.bool
            and class_index_shaped(pred, target) and has_values(target)):
        return None
    if not (conclusive or is_cross_entropy(loss_fn)):
        return None
    classes = pred.shape[1]
    valid = target[target != ignored_label(loss_fn, ignore_index)]
    if valid.numel() == 0:
        return None
    low, high = int(valid.min()), int(valid.max())
    if low >= 0 and high < classes:
        return None
    bad = int(((valid < 0) | (valid >= classes)).sum())
    observed = (t("labels range from {low} to {high} ({bad} of {valid_numel} out of range), but the model "
                  "outputs {classes} scores per sample, so valid labels are 0..{classes_1}.", low=low, high=high, bad=bad, valid_numel=valid.numel(), classes=classes, classes_1=classes - 1))
    if low >= 1 and high == classes:
        observed += t(" They look 1-based.")
    return finding("LABEL_OUT_OF_RANGE", "error", observed,
                   t("the loss uses each label as an index into the scores: on the CPU it raises 'Target "
                     "{index} is out of bounds', on a GPU a device-side assert that breaks "
                     "the whole CUDA session.", index=high if high >= classes else low),
                   t("map the labels to 0..C-1 (y - 1 for 1-based labels, or a dict from class name to "
                     "index), or give the last layer one output per class."))


def loss_input_findings(pred: Any, target: Any, loss_fn: Any, autocast: bool, made_by: str | None = None,
                        reshaped_same: bool | None = None, ignore_index: int | None = None,
                        floor: tuple[str, float] | None = None, labels: bool = True) -> list[Finding]:
    """SOFTMAX_BEFORE_CE, NLL_ON_LOGITS, BCE_ON_LOGITS, RELU_ON_OUTPUT, BROADCAST_IN_LOSS,
    TARGET_SHAPE and DTYPE_MISMATCH from the loss's two inputs.

    ``made_by``: the operation that produced ``pred`` (see :func:`.graph.producer`);
    ``reshaped_same``: whether the loss gives the same value with the target reshaped to the
    prediction's shape (then it reshapes internally and nothing broadcasts); ``ignore_index``: the
    one passed to the call; ``floor``: a ReLU or clamp that bounds the prediction below (see
    :func:`.graph.floor`); ``labels``: False when the loss that really ran is unknown (the step
    computed its own), so the label range cannot be judged."""
    if not (isinstance(pred, torch.Tensor) and isinstance(target, torch.Tensor)):
        return []
    found = [f for f in (label_finding(pred, target, loss_fn, ignore_index) if labels else None,
                         target_shape_finding(pred, target, loss_fn),
                         class_dim_finding(pred, target, loss_fn), label_layout_finding(pred, target, loss_fn),
                         _softmax_finding(pred, target, loss_fn, made_by),
                         _nll_finding(pred, target, loss_fn, made_by),
                         _bce_finding(pred, loss_fn, made_by),
                         _relu_finding(pred, target, loss_fn, made_by, floor),
                         _broadcast_finding(pred, target, loss_fn, reshaped_same),
                         _dtype_finding(pred, target, loss_fn, autocast))
             if f is not None]
    return found


#: Operations that end a linear or convolution layer (with its bias): their output can be any real
#: number. (A product of probabilities, mm/bmm without a bias, may be a probability: not listed.)
_UNBOUNDED_OPS = ("AddmmBackward0", "ConvolutionBackward0", "LinearBackward0")


def _nll_finding(pred: torch.Tensor, target: torch.Tensor, loss_fn: Any, made_by: str | None) -> Finding | None:
    """NLLLoss on raw scores: log-probabilities are never positive, and the graph shows no log_softmax."""
    if not (is_nll(loss_fn) and pred.is_floating_point() and has_values(pred) and not target.is_floating_point()):
        return None
    if made_by is None or made_by in _SOFTMAX_OPS:  # softmax: SOFTMAX_BEFORE_CE
        return None
    positive = int((pred.detach() > 1e-4).sum())
    if positive == 0:  # every value <= 0: log-probabilities (however they were made)
        return None
    classes = pred.shape[1] if pred.dim() >= 2 else pred.shape[0]
    return finding("NLL_ON_LOGITS", "error",
                   t("NLLLoss received {pred_numel} scores over {classes} classes, {positive} of them "
                     "positive (up to {float_pred_detach_max:.4g}), made by {made_by}: raw scores, not "
                     "log-probabilities (log p is never above 0) and there is no log_softmax before the loss.", pred_numel=pred.numel(), classes=classes, positive=positive, float_pred_detach_max=float(pred.detach().max()), made_by=made_by),
                   t("NLLLoss only returns -input[label]: on raw scores the loss is unbounded below (it goes "
                     "negative and keeps falling by making one score huge) and nothing normalises across "
                     "classes."),
                   t("end the model with nn.LogSoftmax(dim=1) / F.log_softmax(x, dim=1), or return the raw "
                     "scores and use nn.CrossEntropyLoss (log_softmax + NLLLoss in one, numerically stable)."))


def _bce_finding(pred: torch.Tensor, loss_fn: Any, made_by: str | None) -> Finding | None:
    """BCELoss on the output of a linear layer (no sigmoid): decided from the graph."""
    if not (is_bce(loss_fn) and pred.is_floating_point() and made_by in _UNBOUNDED_OPS):
        return None
    low, high = float(pred.detach().min()), float(pred.detach().max())
    return finding("BCE_ON_LOGITS", "error",
                   t("BCELoss received {pred_numel} scores made by {made_by} (values {low:.4g} to {high:.4g}) "
                     "with no sigmoid in between: raw scores, not probabilities.", pred_numel=pred.numel(), made_by=made_by, low=low, high=high),
                   t("BCELoss takes probabilities in [0, 1]: raw scores make it raise ('all elements of input "
                     "should be between 0 and 1'; on a GPU a device-side assert), or, while they happen to "
                     "lie in [0, 1], train a model whose outputs are not probabilities at all."),
                   t("return the raw scores and use nn.BCEWithLogitsLoss (it applies the sigmoid itself, "
                     "numerically stable), or end the model with torch.sigmoid for nn.BCELoss."))


def _relu_finding(pred: torch.Tensor, target: torch.Tensor, loss_fn: Any, made_by: str | None,
                  bounded: tuple[str, float] | None = None) -> Finding | None:
    """RELU_ON_OUTPUT, decided from the graph: the prediction comes from a ReLU or a clamp at 0 or
    above (``bounded``, see :func:`.graph.floor`) and

    - the loss expects logits (cross-entropy, BCEWithLogitsLoss): scores can never go below the
      bound, and a score stuck at it gets no gradient;
    - or it is a regression with targets below the bound, or a dead output (the bound everywhere)."""
    op, bound = bounded if bounded is not None else (("ReluBackward0", 0.0) if made_by == "ReluBackward0" else (None, 0.0))
    if op is None or not (pred.is_floating_point() and has_values(pred) and has_values(target)):
        return None
    at_bound = float((pred.detach() <= bound).double().mean())
    logits = (is_cross_entropy(loss_fn) and not is_nll(loss_fn) and pred.dim() >= 2 and pred.shape[1] >= 2
              and (class_index_shaped(pred, target) or target.shape == pred.shape))
    bce_logits = isinstance(loss_fn, nn.BCEWithLogitsLoss) or loss_fn is F.binary_cross_entropy_with_logits
    if logits or bce_logits:
        name = type(loss_fn).__name__ if isinstance(loss_fn, nn.Module) else getattr(loss_fn, "__name__", t("the loss"))
        seen = (t("the {pred_numel} scores given to {name} come straight from {op} (never below "
                  "{bound:g}); {at_bound:.0%} of them are exactly {bound:g}.", pred_numel=pred.numel(), name=name, op=op, bound=bound, at_bound=at_bound))
        why = (t("this loss expects raw scores (logits) that can be any real number: with scores >= 0 the "
                 "sigmoid is always >= 0.5, so the model can never predict the negative class; training stalls "
                 "or learns only part of the task.") if bce_logits else
               t("this loss expects raw scores (logits) that can be any real number: a wrong class's score "
                 "cannot be pushed below 0, and a score held at 0 by the ReLU gets no gradient at all, so those "
                 "samples stop teaching the model; training stalls or learns only part of the task."))
        return finding("RELU_ON_OUTPUT", "error", seen, why,
                       t("remove the activation after the last linear layer (the classifier returns the linear "
                         "layer's output as logits; the loss applies the softmax/sigmoid itself)."))
    if not (is_regression(loss_fn) and target.is_floating_point()):
        return None
    negative = int((target < bound).sum())
    dead = bool((pred.detach() <= bound).all())
    if negative == 0 and not dead:
        return None
    seen = (t("the prediction comes straight from {op} (>= {bound:g} by construction; {at_bound:.0%} "
              "of its {pred_numel} values are exactly {bound:g})", op=op, bound=bound, at_bound=at_bound, pred_numel=pred.numel()))
    if negative:
        seen += (t(", but {negative} of {target_numel} targets are below {bound:g} (down to "
                   "{float_target_min:.4g}).", negative=negative, target_numel=target.numel(), bound=bound, float_target_min=float(target.min())))
    else:
        seen += (t(": the output is dead, the same {bound:g} for every sample while the targets range from "
                   "{float_target_min:.4g} to {float_target_max:.4g}.", bound=bound, float_target_min=float(target.min()), float_target_max=float(target.max())))
    return finding("RELU_ON_OUTPUT", "error", seen,
                   t("a ReLU output can never be below 0, so negative targets are out of reach, and wherever "
                     "the ReLU outputs 0 its gradient is 0 too: when the last layer's pre-activations are all "
                     "below 0 (an unlucky initialisation, one large step) nothing learns and predictions "
                     "stick at 0."),
                   t("remove the activation after the last layer of a regression model (return the linear "
                     "layer's output); if the target must be positive, use softplus or predict its logarithm."))


def label_layout_finding(pred: Any, target: Any, loss_fn: Any) -> Finding | None:
    """TARGET_SHAPE: one-hot integer targets for a cross-entropy loss, or integer class labels for
    a regression loss (checked before the loss runs)."""
    if not (isinstance(pred, torch.Tensor) and isinstance(target, torch.Tensor)):
        return None
    name = type(loss_fn).__name__ if isinstance(loss_fn, nn.Module) else getattr(loss_fn, "__name__", t("the loss"))
    n, c = pred.shape[0], pred.shape[1] if pred.dim() >= 2 else 0
    if one_hot_targets(pred, target, loss_fn):
        return finding("TARGET_SHAPE", "error",
                       t("the targets are one-hot {target_dtype} {target_shape} (one 1 per row), but {name} "
                         "expects one class index per sample, shape {n}, for {pred_shape} scores.", target_dtype=target.dtype, target_shape=tuple(target.shape), name=name, n=(n,), pred_shape=tuple(pred.shape)),
                       t("integer targets with the prediction's shape are read as several targets per sample: the "
                         "call raises '0D or 1D target tensor expected, multi-target not supported'."),
                       t("turn the one-hot rows into class indices: y = y.argmax(dim=1) (or pass probabilities as "
                         "floats: y.float(), which CrossEntropyLoss also accepts)."))
    if regression_on_labels(pred, target, loss_fn):
        return finding("TARGET_SHAPE", "error",
                       t("{name} compares {pred_shape} class scores with {target_dtype} class labels of "
                         "shape {target_shape}: a regression loss on a classification target.", name=name, pred_shape=tuple(pred.shape), target_dtype=target.dtype, target_shape=tuple(target.shape)),
                       t("a regression loss needs a target of the prediction's shape; class indices broadcast "
                         "against the scores (or raise 'The size of tensor a must match the size of tensor b'), "
                         "so every score is pulled toward the label number itself."),
                       t("use nn.CrossEntropyLoss() on the scores and the labels; to keep {name}, compare with "
                         "one-hot targets: F.one_hot(y, {c}).float().", name=name, c=c))
    return None


def class_dim_finding(pred: Any, target: Any, loss_fn: Any) -> Finding | None:
    """TARGET_SHAPE: a sequence prediction (N, T, C) with targets (N, T), classes in the last dim."""
    if not (isinstance(pred, torch.Tensor) and isinstance(target, torch.Tensor) and classes_last(pred, target, loss_fn)):
        return None
    n, positions, c = pred.shape
    return finding("TARGET_SHAPE", "error",
                   t("the prediction has shape {pred_shape} and the class labels {target_shape}: "
                     "one score per class in the last dimension ({c} classes for {positions} positions), but the "
                     "cross-entropy loss reads dimension 1 as the classes, so it sees {positions} classes and "
                     "expects targets of shape {n_c}.", pred_shape=tuple(pred.shape), target_shape=tuple(target.shape), c=c, positions=positions, n_c=(n, c)),
                   t("for inputs with extra dimensions CrossEntropyLoss expects (N, C, d1, ...): the class "
                     "scores must be in dimension 1. The call raises 'Expected target size ...', and when the "
                     "two sizes happen to be equal it silently mixes positions and classes."),
                   t("move the classes to dimension 1: loss_fn(pred.permute(0, 2, 1), y) (or "
                     "pred.transpose(1, 2)), or flatten both: loss_fn(pred.reshape(-1, {c}), y.reshape(-1)).", c=c))


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
                       t("the {pred_numel} scores given to BCEWithLogitsLoss come straight from a sigmoid (the "
                         "last operation before the loss is {made_by}), but this loss applies the sigmoid itself.", pred_numel=pred.numel(), made_by=made_by),
                       t("the doubled sigmoid squashes every score into (0.5, 0.73): gradients shrink and the "
                         "loss cannot get near 0."),
                       t("return raw logits (remove the final nn.Sigmoid / torch.sigmoid); apply torch.sigmoid "
                         "only to report probabilities. (Or keep the sigmoid and use nn.BCELoss.)"))
    ce_like = is_cross_entropy(loss_fn) or (not target.is_floating_point() and class_index_shaped(pred, target))
    if not (ce_like and made_by in _SOFTMAX_OPS and pred.dim() >= 1):
        return None
    classes = pred.shape[1] if pred.dim() >= 2 else pred.shape[0]
    if isinstance(loss_fn, nn.NLLLoss) or loss_fn is F.nll_loss:
        return finding("SOFTMAX_BEFORE_CE", "error",
                       t("NLLLoss received the output of a softmax over {classes} classes (the last operation "
                         "before the loss is {made_by}) instead of log-probabilities.", classes=classes, made_by=made_by),
                       t("NLLLoss returns -input[label]: on probabilities that is -p, not -log p, so the "
                         "gradients are wrong and confident mistakes are barely punished."),
                       t("end the model with log_softmax(dim=1) instead of softmax, or return logits and use "
                         "nn.CrossEntropyLoss."))
    floor = math.log(1 + (classes - 1) / math.e) if classes >= 2 else 0.0
    return finding("SOFTMAX_BEFORE_CE", "error",
                   t("the scores given to the loss come straight from a softmax (the last operation before "
                     "the loss is {made_by}): they are probabilities over {classes} classes. CrossEntropyLoss "
                     "applies log_softmax itself, so with {classes} classes the loss can never fall below "
                     "{floor:.3f}.", made_by=made_by, classes=classes, floor=floor),
                   t("softmax is applied twice: the scores are squashed into [0, 1], gradients shrink and "
                     "training crawls, then stalls at a high loss."),
                   t("return raw logits from the model (remove the final nn.Softmax / .softmax(dim=1)); "
                     "CrossEntropyLoss expects logits. Use softmax only to report probabilities."))


def _shape_fix(pred: torch.Tensor, target: torch.Tensor) -> str:
    p, q = tuple(pred.shape), tuple(target.shape)
    if p == q + (1,):
        return (t("give the target the prediction's shape: y = y.unsqueeze(1) (or compare pred.squeeze(1) "
                  "with y); both are then {p}", p=p))
    if q == p + (1,):
        return t("drop the target's extra dimension: y = y.squeeze(1), so both are {p}", p=p)
    if pred.numel() == target.numel():
        return t("reshape one to the other: y = y.view_as(pred) (both {p})", p=p)
    return t("make the shapes equal before the loss (check which dimension is the batch)")


def _broadcast_finding(pred: torch.Tensor, target: torch.Tensor, loss_fn: Any,
                       reshaped_same: bool | None) -> Finding | None:
    if pred.shape == target.shape or pred.dim() == 0 or target.dim() == 0:
        return None
    if not target.is_floating_point() and class_index_shaped(pred, target):
        return None
    if reshaped_same:  # the loss reshapes internally: same value with matching shapes
        return None
    if isinstance(loss_fn, (nn.BCELoss, nn.BCEWithLogitsLoss)) or loss_fn in (
            F.binary_cross_entropy, F.binary_cross_entropy_with_logits):
        return None  # these never broadcast: they raise (TARGET_SHAPE), see the BCE size check
    known = isinstance(loss_fn, REGRESSION_LOSSES) or loss_fn in (F.mse_loss, F.l1_loss, F.smooth_l1_loss)
    if reshaped_same is None and not known and pred.numel() != target.numel():
        return None
    try:
        shape = torch.broadcast_shapes(pred.shape, target.shape)
    except RuntimeError:
        return None
    if tuple(shape) == tuple(pred.shape) and pred.numel() != target.numel():
        return None  # the target is expanded on purpose (e.g. one target for many predictions)
    terms = math.prod(shape)
    if tuple(shape) == tuple(target.shape):  # the prediction is the smaller one: it is copied to every target
        return finding("BROADCAST_IN_LOSS", "error",
                       t("prediction shape {pred_shape} and target shape {target_shape} differ: the "
                         "model gives {pred_numel} values for {target_numel} targets, and inside the loss each "
                         "prediction is copied (broadcast) across {target_numel_max_pred_nu} targets.", pred_shape=tuple(pred.shape), target_shape=tuple(target.shape), pred_numel=pred.numel(), target_numel=target.numel(), target_numel_max_pred_nu=target.numel() // max(pred.numel(), 1)),
                       t("the loss compares one output with several different targets, so its gradient pulls that "
                         "output toward their average: the model cannot fit the targets, and nothing raises "
                         "(MSELoss only warns once)."),
                       t("make the two shapes equal. If each sample really has {target_shape_1} target values, "
                         "the model's last layer needs {target_shape_1} outputs (nn.Linear(..., "
                         "{target_shape_1})); if it should have one, the target was built with an extra dimension "
                         "(e.g. a per-dimension log-probability or error not summed: .sum(dim=-1, keepdim=True) "
                         "gives {pred_shape}). Keep `assert pred.shape == y.shape` in your training step.", target_shape_1=target.shape[-1], pred_shape=tuple(pred.shape)))
    return finding("BROADCAST_IN_LOSS", "error",
                   t("prediction shape {pred_shape} and target shape {target_shape} differ; "
                     "inside the loss they broadcast to {tuple_shape}: {terms} terms instead of "
                     "{max_pred_numel_target_nu}.", pred_shape=tuple(pred.shape), target_shape=tuple(target.shape), tuple_shape=tuple(shape), terms=terms, max_pred_numel_target_nu=max(pred.numel(), target.numel())),
                   t("every prediction is compared with every target instead of its own: the loss looks "
                     "plausible, but its gradient pulls all predictions toward the average target, so the "
                     "model cannot fit (MSELoss only warns once)."),
                   _shape_fix(pred, target) + t("; keep `assert pred.shape == y.shape` in your training step."))


def target_shape_finding(pred: Any, target: Any, loss_fn: Any) -> Finding | None:
    """TARGET_SHAPE: class-index targets shaped (N, 1) for a (N, C) prediction (checked before the loss)."""
    if not (isinstance(pred, torch.Tensor) and isinstance(target, torch.Tensor)
            and targets_shaped_n1(pred, target, loss_fn)):
        return None
    want = (pred.shape[0], *pred.shape[2:])
    return finding("TARGET_SHAPE", "error",
                   t("the class labels have shape {target_shape} for a prediction of shape "
                     "{pred_shape}; {loss_name} expects one class index per sample, "
                     "shape {want}.", target_shape=tuple(target.shape), pred_shape=tuple(pred.shape), loss_name=type(loss_fn).__name__ if isinstance(loss_fn, nn.Module) else 'cross_entropy', want=want),
                   t("with an extra dimension of size 1 the loss reads the target as a multi-dimensional one "
                     "and raises '0D or 1D target tensor expected, multi-target not supported'."),
                   t("drop the extra dimension: y = y.squeeze(1) (or y.view(-1)); best in the dataset, so "
                     "each label is a plain integer."))


def _dtype_finding(pred: torch.Tensor, target: torch.Tensor, loss_fn: Any, autocast: bool) -> Finding | None:
    if not pred.is_floating_point():
        return None
    if is_cross_entropy(loss_fn) and target.is_floating_point() and class_index_shaped(pred, target):
        return finding("DTYPE_MISMATCH", "error",
                       t("the class labels are {target_dtype} with shape {target_shape}, but "
                         "{type_loss_fn_name} expects int64 class indices for that shape.", target_dtype=target.dtype, target_shape=tuple(target.shape), type_loss_fn_name=type(loss_fn).__name__),
                       t("float targets are read as per-class probabilities, which must have the prediction's "
                         "shape; this call raises 'expected target dtype to be Long'."),
                       t("convert the labels: y = y.long() (and create them as torch.int64 in the dataset)."))
    if isinstance(loss_fn, REGRESSION_LOSSES) and not target.is_floating_point():
        return finding("DTYPE_MISMATCH", "warning" if isinstance(loss_fn, (nn.MSELoss, nn.L1Loss)) else "error",
                       t("the targets are {target_dtype} but {type_loss_fn_name} compares them with {pred_dtype} "
                         "predictions.", target_dtype=target.dtype, type_loss_fn_name=type(loss_fn).__name__, pred_dtype=pred.dtype),
                       t("losses on continuous values expect float targets: some promote silently, BCE losses "
                         "raise a dtype error."),
                       t("convert the targets: y = y.to({pred_dtype}).", pred_dtype=pred.dtype))
    if target.is_floating_point() and target.dtype != pred.dtype and not autocast:
        return finding("DTYPE_MISMATCH", "warning",
                       t("the prediction is {pred_dtype} but the target is {target_dtype}, so the loss is "
                         "computed in {torch_promote_types_pred}.", pred_dtype=pred.dtype, target_dtype=target.dtype, torch_promote_types_pred=torch.promote_types(pred.dtype, target.dtype)),
                       t("silent type promotion: slower, more memory, and usually a sign that the targets came "
                         "from a NumPy float64 array."),
                       t("convert the targets once: y = y.to({pred_dtype}).", pred_dtype=pred.dtype))
    return None


# --- what the step did ------------------------------------------------------------------------

def _names(ids: list[int], labels: dict[int, str], limit: int = 4) -> str:
    items = [labels.get(i, "?") for i in ids]
    return ", ".join(items[:limit]) + (t(" and {n} more", n=len(items) - limit) if len(items) > limit else "")


def _lr(lrs: list[float]) -> str:
    return " / ".join(f"{lr:.3g}" for lr in lrs)


def registration_findings(hidden: list[Hidden], reached: set[int] | None) -> list[Finding]:
    """PARAMS_NOT_REGISTERED from the static record's hidden tensors: all of them when no step ran
    (``reached`` None), else only those the loss reaches (a frozen teacher hidden on purpose is fine)."""
    kept = []
    for item in hidden:
        keep = [i for i, tid in enumerate(item.ids) if reached is None or tid in reached]
        if keep:
            kept.append((item, keep))
    if not kept:
        return []
    count = sum(len(keep) for _, keep in kept)
    covered = all(item.in_optimizer[i] for item, keep in kept for i in keep)
    where = "; ".join(t("{label} ({kind}, {n} tensor(s), {values:,} values)", label=item.label, kind=item.kind,
                        n=len(keep), values=sum(item.numels[i] for i in keep)) for item, keep in kept[:4])
    if covered:
        observed = t("{count} tensor(s) that require gradients are not registered parameters of the model: "
                     "{where}. model.parameters() does not list them, but the optimizer holds them.",
                     count=count, where=where)
        why = t("nn.Module only registers layers assigned directly as attributes or kept in nn.ModuleList / "
                "nn.ModuleDict (tensors: nn.Parameter). Layers in a plain Python list or dict are trained here "
                "only because you passed them to the optimizer by hand, but model.to(device), "
                "model.train()/eval() and state_dict() skip them.")
    else:
        observed = t("{count} tensor(s) that require gradients are not registered parameters of the model: "
                     "{where}. model.parameters() does not list them, and the optimizer does not hold them.",
                     count=count, where=where)
        why = t("nn.Module only registers layers assigned directly as attributes or kept in nn.ModuleList / "
                "nn.ModuleDict (tensors: nn.Parameter). Layers in a plain Python list or dict keep their random "
                "initial weights (an optimizer built from model.parameters() never updates them), and "
                "model.to(device), model.train()/eval() and state_dict() skip them.")
    return [finding("PARAMS_NOT_REGISTERED", "warning" if covered else "error", observed, why,
                    t("wrap the list: self.layers = nn.ModuleList([...]) (a dict: nn.ModuleDict({...})); "
                      "wrap tensors: self.w = nn.Parameter(torch.randn(...)); then build the optimizer from "
                      "model.parameters()."))]


def _context(inputs: Inputs) -> str:
    """The shapes and dtypes that an error message is read against."""
    param = next((p for p in inputs.model.parameters()), None)
    parts = [t("inputs are {dtype} {shape}", dtype=inputs.x.dtype, shape=tuple(inputs.x.shape))] \
        if isinstance(inputs.x, torch.Tensor) else []
    if isinstance(inputs.y, torch.Tensor):
        parts.append(t("targets are {dtype} {shape}", dtype=inputs.y.dtype, shape=tuple(inputs.y.shape)))
    if param is not None:
        parts.append(t("parameters are {dtype} on {device}", dtype=param.dtype, device=param.device))
    return t("Here {parts}.", parts=functools.reduce(lambda a, b: t("{first}, {second}", first=a, second=b), parts)) \
        if parts else ""


def step_findings(record: StepRecord, static: StaticRecord, inputs: Inputs) -> list[Finding]:
    """Findings from :func:`.probes.probe_step`: loss inputs, NaN/Inf, gradient flow, zero_grad, eval mode."""
    loss_fn, target = inputs.loss_fn, inputs.y
    found: list[Finding] = []
    call = (record.loss_calls[0] if record.loss_calls else
            record.error.call if record.error is not None and record.error.call is not None else None)
    if call is not None:
        found += loss_input_findings(call.pred, call.target, loss_fn, call.autocast, call.producer,
                                     call.reshaped_same, call.ignore_index, call.floor)
    elif record.model_outputs and isinstance(target, torch.Tensor):  # the step bypassed loss_fn
        out = record.model_outputs[0]
        if isinstance(out, torch.Tensor):
            found += loss_input_findings(out.detach(), target, loss_fn, autocast=True, made_by=producer(out),
                                         floor=floor(out), labels=record.error is not None)
    if not record.loss_calls and record.graph is not None and record.graph.softmax_then_log:
        found.append(finding(
            "SOFTMAX_BEFORE_CE", "error",
            t("the graph of the loss your step back-propagates shows a log_softmax (cross_entropy / "
              "NLLLoss) applied to the output of a softmax: the loss is computed on probabilities."),
            t("cross_entropy applies log_softmax itself: on probabilities the softmax is applied "
              "twice, the scores are squashed into [0, 1], gradients shrink and training stalls at a "
              "high loss."),
            t("return raw logits from the model (remove the final softmax) and give them to "
              "cross_entropy; use softmax only to report probabilities.")))
    found += registration_findings(static.hidden, record.reached)
    if record.error is not None:
        return found + [_explain_error(record, loss_fn, _context(inputs), target)]
    if record.returned is not None:
        return found + [finding("STEP_FAILED", "error",
                                t("your train_step returned {returned}, not the loss, and never called the loss_fn it was "
                                  "given.", returned=record.returned),
                                t("the doctor (and your training log) needs each step's loss to see whether training works."),
                                t("compute the loss with the loss_fn argument and end the step with `return loss.item()`."))]
    found += _nonfinite(record)
    found += _graph_reused(record)
    found += _rnn_layout(record)
    found += _foreign_leaves(record, static.hidden)
    found += _gradient_flow(record, loss_fn)
    found += _zero_grad(record)
    found += _eval_mode(record, inputs.standard)
    return found


def guard_finding(error: StepError, loss_fn: Any) -> Finding | None:
    """The finding for a loss call the probes stopped before it ran (see :func:`.common.loss_guard`)."""
    call = error.call
    if call is None:
        return None
    pred, target = call.pred, call.target
    if error.guard == "labels":
        return label_finding(pred, target, loss_fn, call.ignore_index, conclusive=not is_cross_entropy(loss_fn))
    if error.guard == "target_n1":
        return target_shape_finding(pred, target, loss_fn)
    if error.guard == "class_dim":
        return class_dim_finding(pred, target, loss_fn)
    if error.guard in ("one_hot", "regression_labels"):
        return label_layout_finding(pred, target, loss_fn)
    if error.guard == "bce_range":
        made = t(" made by {producer}", producer=call.producer) if call.producer else ""
        return finding("BCE_ON_LOGITS", "error",
                       t("BCELoss received {pred_numel} scores{made} with values from {float_pred_min:.4g} to "
                         "{float_pred_max:.4g}, outside [0, 1]: raw scores, not probabilities.", pred_numel=pred.numel(), made=made, float_pred_min=float(pred.min()), float_pred_max=float(pred.max())),
                       t("BCELoss takes probabilities: here it raises 'all elements of input should be between 0 "
                         "and 1', and on a GPU the same call is a device-side assert that breaks the CUDA session."),
                       t("return the raw scores and use nn.BCEWithLogitsLoss (it applies the sigmoid itself, "
                         "numerically stable), or end the model with torch.sigmoid for nn.BCELoss."))
    return None


def _output_requires_grad(record: StepRecord) -> bool | None:
    if not record.model_outputs:
        return None
    return any(t.requires_grad for _, t in leaves(record.model_outputs[0]))


def _explain_error(record: StepRecord, loss_fn: Any, context: str, target: Any = None) -> Finding:
    """The step's error, made specific where the records say more than the exception."""
    assert record.error is not None
    guarded = guard_finding(record.error, loss_fn) if record.error.guard else None
    if guarded is not None:
        return guarded
    error = classify_exception(record.error, context)
    out = record.model_outputs[0] if record.model_outputs else None
    if error.code == "TARGET_SHAPE" and isinstance(out, torch.Tensor) and isinstance(target, torch.Tensor) \
            and out.shape != target.shape:
        observed, why, _ = error.parts()
        return finding("TARGET_SHAPE", "error", observed, why,
                       t("the model's output is {out_shape} and the target {target_shape}: {fix}.",
                         out_shape=tuple(out.shape), target_shape=tuple(target.shape), fix=_shape_fix(out, target)))
    if error.code != "NO_GRAD_FLOW":
        return error
    call = record.loss_calls[0] if record.loss_calls else None
    out_int = isinstance(out, torch.Tensor) and not out.is_floating_point() and not out.is_complex()
    pred_cut = call is not None and not call.requires_grad and _output_requires_grad(record)
    if not (out_int or pred_cut):
        return error
    if out_int:
        seen = t("the model's output is {out_dtype} {tuple_out_shape}: forward() ends in argmax / max "
                 "indices / a comparison", out_dtype=out.dtype, tuple_out_shape=tuple(out.shape))
    else:
        seen = (t("the model's output carries a gradient, but the prediction given to the loss "
                  "({pred_dtype} {tuple_call_pred_shape}) does not: an operation between them is not "
                  "differentiable", pred_dtype=call.pred.dtype, tuple_call_pred_shape=tuple(call.pred.shape)))
    observed, _, _ = error.parts()
    return finding("NON_DIFFERENTIABLE", "error", t("{observed}; {seen}.", observed=observed.rstrip(".。"), seen=seen),
                   t("argmax, max(...).indices, round, comparisons (>, ==), .long(), .item(), .numpy() and "
                     "torch.tensor(...) give values with no gradient (or a gradient of zero everywhere), so "
                     "backward() cannot reach the weights."),
                   t("compute the loss on the model's continuous scores: CrossEntropyLoss on the logits (not "
                     "on argmax), BCEWithLogitsLoss on raw scores (not on rounded ones); use argmax / round "
                     "only for accuracy and predictions, outside the loss."))


def _graph_reused(record: StepRecord) -> list[Finding]:
    """GRAPH_REUSED without an error: the second step's backward() went through operations recorded
    in the first step (state carried with its graph; retain_graph=True hides the error)."""
    if not record.reused_operations:
        return []
    return [finding("GRAPH_REUSED", "error",
                    t("the second step's backward() went through {reused_operations} operations recorded "
                      "during the first step: a tensor carried from one step to the next (a memory, a hidden "
                      "state, a running total) still holds the earlier step's graph, and "
                      "backward(retain_graph=True) kept that graph alive instead of raising.", reused_operations=record.reused_operations),
                    t("every step then back-propagates through all earlier steps too: time and memory grow "
                      "with each step, and gradients flow into computations made with old parameter values."),
                    t("detach what you carry between steps (state = state.detach() right after computing it, "
                      "or start each batch from a fresh state) and drop retain_graph=True."))]


def _rnn_layout(record: StepRecord) -> list[Finding]:
    """RNN_BATCH_FIRST: a time-first RNN (batch_first=False) fed (batch, time, features) inputs."""
    n = record.samples
    for label, batch_first, shape in record.rnn_inputs:
        if batch_first or len(shape) != 3 or n < 2 or shape[0] != n or shape[1] == n:
            continue
        return [finding("RNN_BATCH_FIRST", "error",
                        t("RNN layer {label} was built with batch_first=False, so it reads its input as (time, "
                          "batch, features), but it received shape {shape} whose first dimension is the batch size "
                          "{n}: it treats the {n} samples as {n} time steps of a batch of {shape_1}.", label=label, shape=shape, n=n, shape_1=shape[1]),
                        t("the recurrence then runs across samples instead of along each sequence: every sample's "
                          "output depends on the samples before it in the batch, and the model learns little or "
                          "nothing."),
                        t("build the layer with batch_first=True (nn.LSTM(..., batch_first=True)) for (batch, "
                          "time, features) inputs, or pass x.transpose(0, 1); take the last step as out[:, -1] "
                          "with batch_first=True (out[-1] without)."))]
    return []


def _foreign_leaves(record: StepRecord, hidden: list[Hidden]) -> list[Finding]:
    """Tensors the loss depends on that get gradients but are parameters of neither the model nor
    the optimizer, nor hidden attributes of the model: layers created inside forward() or kept
    outside the module."""
    known = {tid for item in hidden for tid in item.ids}
    # Only nn.Parameter leaves: a plain tensor re-wrapped inside the loss (torch.tensor(y),
    # y.detach().requires_grad_()) also requires grad, but it is data, not a layer's weights.
    foreign = [shape for shape, original, is_param in record.foreign
               if is_param and (original is None or original not in known)]
    if not foreign:
        return []
    shapes = ", ".join(str(shape) for shape in foreign[:4]) + (" ..." if len(foreign) > 4 else "")
    return [finding("PARAMS_NOT_REGISTERED", "error",
                    t("the loss depends on {len_foreign} tensor(s) that receive gradients but are not "
                      "parameters of the model or the optimizer (shapes {shapes}).", len_foreign=len(foreign), shapes=shapes),
                    t("these are usually layers created inside forward() (a new random nn.Linear at every "
                      "call) or kept outside the model: the optimizer never updates them and they are not "
                      "saved."),
                    t("create every layer once in __init__ as an attribute (lists: nn.ModuleList), and build "
                      "the optimizer from model.parameters()."))]


def _nonfinite(record: StepRecord) -> list[Finding]:
    bad_grads = [pid for pid, g in (record.step_grads[0].items() if record.step_grads else [])
                 if g is not None and not bool(torch.isfinite(g).all())]
    loss = record.losses[0] if record.losses else math.nan
    if record.nonfinite is None and math.isfinite(loss) and not bad_grads:
        return []
    if record.nonfinite is not None:
        observed = t("{nonfinite}; the loss is {loss:.4g}.", nonfinite=record.nonfinite, loss=loss)
        fix = (t("look at that layer's computation: log, sqrt or division of values that can be 0 or "
                 "negative, exp of large numbers; add an epsilon (torch.log(x + 1e-8)), clamp, or use the "
                 "stable built-ins (log_softmax, logsumexp, BCEWithLogitsLoss)."))
    else:
        observed = (t("the loss is {loss:.4g} but {len_bad_grads} gradient tensor(s) contain NaN/Inf: "
                      "{names_bad_grads_record_n}.", loss=loss, len_bad_grads=len(bad_grads), names_bad_grads_record_n=_names(bad_grads, record.names)))
        fix = (t("run the step once under torch.autograd.detect_anomaly(): it names the backward "
                 "operation that produced the NaN and the forward line that created it (e.g. sqrt or norm "
                 "at 0 has an infinite derivative: add an epsilon)."))
    return [finding("NAN_OR_INF", "error", observed,
                    t("after one optimizer step a single NaN spreads to every weight, and from then on every "
                      "output and every loss is NaN."), fix)]


def _graph_reaches(record: StepRecord) -> bool:
    """The loss's graph was walked completely and reaches every trainable parameter."""
    if record.graph is None or not record.graph.complete or not record.trainable:
        return False
    leaves = {id(t) for t in record.graph.leaves}
    return all(id(p) in leaves for p in record.trainable)


def _dead_relu_output(record: StepRecord, loss_fn: Any) -> bool:
    """The loss input is a regression output from a ReLU that is 0 everywhere (RELU_ON_OUTPUT)."""
    call = record.loss_calls[0] if record.loss_calls else None
    if call is None or not (call.floor is not None or call.producer == "ReluBackward0"):
        return False
    bound = call.floor[1] if call.floor is not None else 0.0
    return is_regression(loss_fn) and has_values(call.pred) and bool((call.pred <= bound).all())


def _gradient_flow(record: StepRecord, loss_fn: Any = None) -> list[Finding]:
    if not record.trainable:
        return []
    never = [id(p) for p in record.trainable if record.accumulated.get(id(p), 0) == 0]
    total = len(record.trainable)
    if never:
        observed = (t("{len_never} of {total} trainable parameter tensors never received a gradient during the "
                      "step: {names_never_record_names}.", len_never=len(never), total=total, names_never_record_names=_names(never, record.names)))
        if len(never) == total and _graph_reaches(record):
            return [finding("NO_GRAD_FLOW", "error",
                            t("the loss's graph reaches all {total} trainable parameter tensors, but none of them "
                              "received a gradient during the step: loss.backward() was never called (or was called on "
                              "another tensor).", total=total),
                            t("optimizer.step() only uses the gradients that backward() stores in .grad: without them "
                              "the update does nothing (or reuses stale gradients) and the model never learns."),
                            t("call loss.backward() on the loss of this batch, between optimizer.zero_grad() and "
                              "optimizer.step()."))]
        if len(never) == total:
            observed += t(" If your train_step uses a global model instead of its `model` argument, fix that first.")
        return [finding("NO_GRAD_FLOW", "error", observed,
                        t("backward() only reaches parameters that the loss depends on through differentiable "
                          "operations; the others keep their initial values forever."),
                        t("look for .detach(), .item(), .numpy(), torch.tensor(...) re-wrapping or torch.no_grad() "
                          "inside forward, and for layers that forward() never uses."))]
    first = record.increments[0] if record.increments else {}
    if first and all(not bool(g.any()) for g in first.values()):
        if _dead_relu_output(record, loss_fn):
            return []  # RELU_ON_OUTPUT says why
        ops = record.graph.zero_gradient_ops if record.graph is not None else []
        if ops:
            return [finding("NON_DIFFERENTIABLE", "error",
                            t("backward() reached all {total} parameter tensors, but every gradient is exactly zero: "
                              "the loss goes through {join_ops}, whose derivative is 0 everywhere.", total=total, join_ops=', '.join(ops)),
                            t("round, floor, sign and similar steps are flat almost everywhere: the loss changes in "
                              "jumps, so the gradient through them is zero and nothing learns."),
                            t("compute the loss on the continuous values (e.g. BCEWithLogitsLoss on the raw scores, "
                              "not on rounded ones); round only for metrics and predictions."))]
        return [finding("NO_GRAD_FLOW", "error",
                        t("backward() reached all {total} parameter tensors, but every gradient is exactly zero.", total=total),
                        t("a loss that does not change when the weights change (dead ReLUs everywhere, a constant "
                          "output, a multiplication by 0) gives nothing to learn from."),
                        t("print the model's output for a few samples; check for all-zero activations and for "
                          "operations with a zero derivative between the model and the loss."))]
    ops = record.graph.zero_gradient_ops if record.graph is not None else []
    zero = [pid for pid, g in first.items() if not bool(g.any())]
    if first and ops and zero:
        return [finding("NON_DIFFERENTIABLE", "error",
                        t("{len_zero} of {total} parameter tensors got a gradient of exactly zero "
                          "({names_zero_record_names}) while the others did not: the loss reaches them only "
                          "through {join_ops}, whose derivative is 0 everywhere.", len_zero=len(zero), total=total, names_zero_record_names=_names(zero, record.names), join_ops=', '.join(ops)),
                        t("round, floor, sign and similar steps are flat almost everywhere: every layer before "
                          "them gets a zero gradient and keeps its initial weights, while the layers after them "
                          "learn."),
                        t("replace the step by a differentiable one while training (tanh or sigmoid instead of "
                          "sign, the raw value instead of round), or use a straight-through estimator: x + "
                          "(x.round() - x).detach(); quantise only for predictions."))]
    if not record.step_grads:
        return []
    at_step = record.step_grads[0]
    empty = [pid for pid, g in at_step.items() if g is None or not bool(g.any())]
    if len(empty) == total:
        return [finding("NO_GRAD_FLOW", "error",
                        t("backward() computed gradients for all {total} parameter tensors, but when "
                          "optimizer.step() ran every gradient was None or zero.", total=total),
                        t("zero_grad() is being called between loss.backward() and optimizer.step(), so every "
                          "update is empty and the parameters never change."),
                        t("order the step as: optimizer.zero_grad(); loss = loss_fn(model(x), y); loss.backward(); "
                          "optimizer.step()."))]
    return []


def _norm(tensors: Any) -> float:
    return math.sqrt(sum(float(t.double().pow(2).sum()) for t in tensors if t is not None))


def _zero_grad(record: StepRecord) -> list[Finding]:
    """Gradients left over from the first call when the second call's backward() starts."""
    if len(record.leftover) < 2 or len(record.increments) < 2:
        return []
    if record.updated and not record.updated[0]:
        return []  # the first call only accumulated (no update yet): gradient accumulation on purpose
    left, new = record.leftover[1], record.increments[1]
    # Only parameters whose gradients are finite: NaN/Inf made by the loss itself is NAN_OR_INF's
    # business, and a NaN left in .grad says nothing about whether the step clears it.
    finite = [pid for pid in new if bool(torch.isfinite(new[pid]).all())
              and (left.get(pid) is None or bool(torch.isfinite(left[pid]).all()))]
    left_norm, new_norm = _norm(left.get(pid) for pid in finite), _norm(new[pid] for pid in finite)
    if not math.isfinite(left_norm) or not math.isfinite(new_norm) or new_norm == 0 or left_norm <= 1e-3 * new_norm:
        return []
    first = record.step_grads[0] if record.step_grads else record.increments[0]
    carried = [pid for pid in finite if left.get(pid) is not None and first.get(pid) is not None
               and torch.allclose(left[pid], first[pid], rtol=1e-3, atol=1e-6)]
    if not carried:  # what .grad held is not the previous step's gradient: something else put it there
        return []
    held = len(carried)
    how = ("optimizer.step()" if record.step_grads else t("your update"))
    return [finding("ZERO_GRAD_MISSING", "error",
                    t("when the second step's backward() started, .grad of {held} of {len_left} parameter "
                      "tensors still held the previous step's gradient (norm {left_norm:.4g}); the new "
                      "gradient (norm {new_norm:.4g}) was added to it, so {how} used the sum.", held=held, len_left=len(left), left_norm=left_norm, new_norm=new_norm, how=how),
                    t("backward() adds to .grad instead of overwriting it; without zeroing, each update uses "
                      "the sum of all earlier gradients, so steps grow and point in stale directions."),
                    t("call optimizer.zero_grad() once per step, before loss.backward() (a hand-written "
                      "update: w.grad.zero_() after updating w). Accumulating on purpose over micro-batches? "
                      "Then zero right after each optimizer.step()."))]


def _eval_mode(record: StepRecord, standard: bool) -> list[Finding]:
    if not record.eval_layers:
        return []
    whole = record.root_training is False
    observed = (t("{len_record_eval_layers} layer(s) ran in eval mode while gradients were computed: "
                  "{join_record_eval_layers}{more} (model.training was "
                  "{root_training}).", len_record_eval_layers=len(record.eval_layers), join_record_eval_layers=', '.join(record.eval_layers[:4]), more=' ...' if len(record.eval_layers) > 4 else '', root_training=record.root_training))
    if standard:
        observed += t(" diagnose() runs the model in the mode you pass it in.")
    return [finding("EVAL_MODE_LEFT_ON", "error" if whole else "warning", observed,
                    t("in eval mode Dropout does nothing and BatchNorm uses (and stops updating) its running "
                      "statistics: the model trains without regularisation, on different statistics than it "
                      "will later be evaluated with."),
                    t("call model.train() at the start of every training epoch (validation calls model.eval(), "
                      "so switch back). Freezing BatchNorm on purpose? Then ignore this."))]


def _summary(record: OverfitRecord) -> str:
    losses, lr = record.losses, _lr(record.lrs)
    start = losses[0]
    best = min((x for x in losses if math.isfinite(x)), default=math.nan)
    steps = tn("{n} step", "{n} steps", len(losses))
    how = divergence(losses)
    if how:
        return t("starting at {start:.4g}, the loss {how} (lr {lr}, {steps} run)", start=start, how=how, lr=lr, steps=steps)
    if best <= 0.5 * start:
        return t("the loss fell from {start:.4g} to {best:.4g} in {steps} ({best_start:.0%} of the start) "
                 "at lr {lr}", start=start, best=best, steps=steps, best_start=best / start, lr=lr)
    return t("the loss went from {start:.4g} to {best:.4g} at best in {steps} at lr {lr}", start=start, best=best, steps=steps, lr=lr)


def _outcome(record: OverfitRecord) -> str:
    how = divergence(record.losses)
    if how:
        return t("the loss still {how}", how=how)
    return t("the loss fell to {min_record_losses:.4g} in {len_record_losses} steps", min_record_losses=min(record.losses), len_record_losses=len(record.losses))


#: Predicted probabilities that differ between samples by at most this much are the same answer
#: for every sample (to float precision): the output does not depend on the input.
CONSTANT_OUTPUT = 1e-5


def chance_level(pred: torch.Tensor, target: torch.Tensor, loss_fn: Any) -> tuple[float, float, str] | None:
    """(chance loss, largest spread of the predicted probabilities across samples, what chance is)
    for classification losses; None for other losses."""
    p = pred.detach().double()
    if (is_cross_entropy(loss_fn) or not target.is_floating_point()) and class_index_shaped(p, target) \
            and not target.is_floating_point() and p.shape[1] >= 2:
        valid = target[target >= 0].reshape(-1)
        if valid.numel() < 2:
            return None
        counts = torch.bincount(valid, minlength=p.shape[1]).double()
        prior = counts[counts > 0] / counts.sum()
        chance = float(-(prior * prior.log()).sum())
        probs = (p.log_softmax(dim=1).exp() if not isinstance(loss_fn, torch.nn.NLLLoss) else p.exp())
        probs = probs.movedim(1, -1).reshape(-1, p.shape[1])
        spread = float((probs - probs.mean(dim=0)).abs().max())
        return chance, spread, t("the entropy of these {valid_numel} labels over {p_shape_1} classes", valid_numel=valid.numel(), p_shape_1=p.shape[1])
    if isinstance(loss_fn, torch.nn.BCEWithLogitsLoss) and target.is_floating_point() and p.numel() == target.numel():
        rate = float(target.double().mean())
        if not 0 < rate < 1:
            return None
        chance = -(rate * math.log(rate) + (1 - rate) * math.log(1 - rate))
        spread = float((p.sigmoid() - p.sigmoid().mean()).abs().max())
        return chance, spread, t("the entropy of {target_numel} binary labels ({rate:.0%} positive)", target_numel=target.numel(), rate=rate)
    return None


def _stuck(main: OverfitRecord, loss_fn: Any) -> Finding | None:
    if main.last is None or len(main.losses) < 10:
        return None
    level = chance_level(*main.last, loss_fn)
    if level is None:
        return None
    chance, spread, what = level
    end, best = main.losses[-1], min(main.losses)
    moved = main.losses[0] >= 1.05 * end
    tail = main.losses[-10:]
    flat = max(tail) - min(tail) <= 0.02 * chance
    if chance <= 0 or not (moved and flat) or best < 0.9 * chance or abs(end - chance) > 0.1 * chance \
            or spread > 0.1:
        return None
    seen = (t("after {len_main_losses} steps on {samples} samples the loss is {end:.4g}, the chance "
              "level ({chance:.4g}, {what}; started at {losses_0:.4g}), and the predicted "
              "probabilities differ between samples by at most {spread:.3g}", len_main_losses=len(main.losses), samples=main.samples, end=end, chance=chance, what=what, losses_0=main.losses[0], spread=spread))
    if spread <= CONSTANT_OUTPUT:  # conclusive: the output does not depend on the input at all
        return finding("STUCK_AT_CHANCE", "error", seen + t(": the model gives every sample the same answer."),
                       t("a model that outputs the label frequencies whatever the input has stopped using its "
                         "input: typically dead ReLUs or saturated units after too large a step, inputs on a huge "
                         "scale (unscaled pixels), or a layer whose output does not depend on the sample."),
                       t("lower the learning rate 10x, scale the inputs (x / 255, then normalise), check that "
                         "forward() really uses x (print model(x)[:4]), and look at the per-layer gradient norms."))
    return finding("STUCK_AT_CHANCE", "warning",
                   seen + t(" (more than {constant_output:.0e}, so the output still depends on the input): the probe "
                            "ran out of its {budget_or_len_main_losse} steps near chance level. This is what slow "
                            "but correct training looks like too (a small learning rate, momentum still building "
                            "up), so it is not an error by itself.", constant_output=CONSTANT_OUTPUT, budget_or_len_main_losse=main.budget or len(main.losses)),
                   t("a model that stays at chance level for long has stopped learning from its input: if "
                     "full training also sits at this loss, the usual causes are dead ReLUs, unscaled inputs, "
                     "or a learning rate far too low or too high."),
                   t("watch the training loss over a few hundred steps; if it does not leave the chance "
                     "level, try a learning rate 10x higher (or Adam 1e-3), scale the inputs, and print "
                     "model(x)[:4]."))


def overfit_findings(main: OverfitRecord, other: OverfitRecord | None, blocked: bool,
                     input_warning: bool, loss_fn: Any = None) -> tuple[list[Finding], list[str]]:
    """LR_TOO_HIGH / CANNOT_OVERFIT_BATCH / STUCK_AT_CHANCE from the one-batch probe (``other``: lr x10 or /10)."""
    if main.error is not None:
        guarded = guard_finding(main.error, loss_fn) if main.error.guard else None
        return [guarded or classify_exception(main.error)], []
    if not main.losses:
        return [], []
    summary, start = _summary(main), main.losses[0]
    which = t("first {samples} samples", samples=main.samples) if main.samples else t("the whole batch")
    notes = [t("one-batch overfit ({which}, at most {budget_or_len_main_losse} steps): {summary}.", which=which, budget_or_len_main_losse=main.budget or len(main.losses), summary=summary)]
    if blocked:  # errors above already explain a bad result; report it only as a measurement
        notes[0] = notes[0][:-1] + t(" (explained by the errors above).")
        return [], notes
    if main.changed == 0:
        why = (t("your step never called optimizer.step() and no parameter changed") if main.step_calls == 0 else
               t("optimizer.step() ran {step_calls} times but no parameter changed (lr {lr_main_lrs})", step_calls=main.step_calls, lr_main_lrs=_lr(main.lrs)))
        return [finding("CANNOT_OVERFIT_BATCH", "error", t("{summary}: {why}.", summary=summary, why=why),
                        t("a model whose parameters never change cannot learn anything."),
                        t("call optimizer.step() after loss.backward() in every step, with a learning rate above 0."))], notes
    if main.step_calls == 0:
        notes.append(t("your step updates the parameters without optimizer.step() (a hand-written update), so "
                       "the learning-rate second opinion was not run."))
    if not start > 0:  # a loss that can be negative: no relative judgement
        return [], notes
    if divergence(main.losses):
        tail = t(" With lr x0.1 ({lr_other_lrs}) {outcome_other}.", lr_other_lrs=_lr(other.lrs), outcome_other=_outcome(other)) if other is not None and other.losses else ""
        extra = (t(" The inputs are not normalised (see INPUT_NOT_NORMALIZED): normalising them often fixes "
                   "this without touching the learning rate.") if input_warning else "")
        return [finding("LR_TOO_HIGH", "error", t("training a copy on {samples} samples, {summary}.{tail}{extra}", samples=main.samples, summary=summary, tail=tail, extra=extra),
                        t("steps that are too large overshoot the minimum: the loss jumps up instead of down, and "
                          "repeated overshoots grow until the numbers overflow to Inf/NaN."),
                        t("lower the learning rate 10x at a time until the loss falls steadily (typical: Adam "
                          "1e-3, SGD 0.01-0.1); gradient clipping and warm-up help with spikes."))], notes
    # The learning rate fell 100x or more within the probe: a scheduler the step calls explains a stall.
    collapsed = bool(main.end_lrs and main.lrs and max(main.end_lrs) < 0.01 * max(main.lrs))
    stuck = _stuck(main, loss_fn) if loss_fn is not None and not collapsed else None
    if stuck is not None:
        return [stuck], notes
    best = min(main.losses)
    if best <= (0.5 if collapsed else 0.9) * start:
        return [], notes
    helped = other is not None and other.losses and min(other.losses) < 0.9 * start
    tail = (t(" With lr x10 ({lr_other_lrs}) {outcome_other}{verdict}.", lr_other_lrs=_lr(other.lrs), outcome_other=_outcome(other), verdict=t(": the learning rate is probably too low") if helped else t(", no better"))
            if other is not None and other.losses else "")
    decayed = ""
    if collapsed:
        decayed = (t(" The learning rate fell from {lr_main_lrs} to {lr_main_end_lrs} within these "
                     "{len_main_losses} steps: a learning-rate scheduler your step calls (stepped every batch "
                     "instead of every epoch?) shrank every update to nothing.", lr_main_lrs=_lr(main.lrs), lr_main_end_lrs=_lr(main.end_lrs), len_main_losses=len(main.losses)))
    # The parameters changed, so the probe only ran out of steps: slow but possibly correct training.
    return [finding("CANNOT_OVERFIT_BATCH", "warning",
                    t("training a copy on {samples} samples, {summary}: only {v1_best_start:.1%} lower after "
                      "the probe's {budget_or_len_main_losse} steps, although the parameters changed (by up to "
                      "{changed:.3g}).{tail}{decayed} Slow but correct training looks like this too, so this "
                      "is a warning, not an error.", samples=main.samples, summary=summary, v1_best_start=1 - best / start, budget_or_len_main_losse=main.budget or len(main.losses), changed=main.changed, tail=tail, decayed=decayed),
                    t("a healthy setup can usually memorise a single batch quickly; if full training also "
                      "stalls, look for the cause (the 'loss will not go down' checklist)."),
                    t("if lr x10 helped, raise the learning rate; otherwise check that the targets match the "
                      "inputs, that every layer gets gradients, and that the loss fits the task."))], notes


def _unchecked(record: StepRecord, inputs: Inputs) -> list[str]:
    """What could not be checked, and why (notes, never a guessed cause)."""
    notes = []
    if record.error is None and record.returned is None and not record.loss_calls:
        notes.append(t("could not check what reached the loss (a softmax or sigmoid before it, the label range, "
                       "the shapes) from the loss call itself, because the step never called the loss_fn "
                       "argument with a prediction and a target")
                     + (t("; the model's output was checked against the batch's targets instead.") if
                        record.model_outputs and isinstance(inputs.y, torch.Tensor) else t("{text}.", text="")))
    call = record.loss_calls[0] if record.loss_calls else None
    if (call is not None and is_cross_entropy(inputs.loss_fn) and call.pred.dim() == 3 and call.target.dim() == 2
            and not call.target.is_floating_point() and call.pred.shape[1] == call.pred.shape[2]
            and tuple(call.target.shape) == tuple(call.pred.shape[:2])):
        notes.append(t("could not check whether the scores {tuple_call_pred_shape} hold the classes in "
                       "dimension 1, as the loss expects, because dimensions 1 and 2 have the same size (if the "
                       "classes are last, use pred.permute(0, 2, 1)).", tuple_call_pred_shape=tuple(call.pred.shape)))
    return notes


def analyse(inputs: Inputs, static: StaticRecord, probes: ProbeRecord) -> Analysis:
    """Stage 3: the findings, notes and measurements from the static record and the probes."""
    result = Analysis(list(static.findings),
                      [t("the probes ran {step} on copies of your model, optimizer and batch.", step=t("the standard step") if inputs.standard else t("your train_step"))] + static.notes)
    if probes.copy_failed is not None:
        result.notes = []
        result.findings.append(finding(
            "NOT_CHECKED", "warning",
            t("the probes run on deep copies of the 4 objects (model, optimizer, batch and loss_fn), "
              "but copying failed ({probes_copy_failed}), so no training step was checked.", probes_copy_failed=probes.copy_failed),
            t("the doctor never trains your own objects."),
            t("find the attribute that cannot be copied (e.g. copy.deepcopy(model) raises the same "
              "error) and keep it outside the model, or run diagnose() on a freshly built model.")))
        return result
    record = probes.step
    if static.stop is not None or record is None:
        result.findings += registration_findings(static.hidden, None)
        return result
    result.notes += [t("{text}.", text=note) for note in probes.notes]
    if static.deferred or (not inputs.standard and record.model_input is not None):
        seen = (input_findings(record.model_input, inputs.model) if record.model_input is not None
                else static.deferred)
        result.findings += [f for f in seen if f.code not in static.codes]
    if not record.samples:
        result.notes.append(t("the batch is {describe_inputs_batch}: its number of samples could not be read (no "
                              "leading size shared by its tensors, no per-sample lists), so the one-batch probe "
                              "trained on all of it.", describe_inputs_batch=describe(inputs.batch)))
    codes = static.codes
    result.findings += [f for f in step_findings(record, static, inputs) if f.code not in codes]
    result.notes += _unchecked(record, inputs)
    measured = result.measurements
    if record.losses:
        measured["initial_loss"] = record.losses[0]
        grads = [g for g in (record.step_grads[0].values() if record.step_grads else
                             record.increments[0].values() if record.increments else []) if g is not None]
        if grads:
            norm = float(torch.linalg.vector_norm(torch.stack([g.double().norm() for g in grads])))
            measured["grad_norm"] = norm
            result.notes.append(t("one step: loss {losses_0:.4g}, total gradient norm {norm:.4g} over {len_grads} "
                                  "parameter tensors.", losses_0=record.losses[0], norm=norm, len_grads=len(grads)))
    if probes.overfit is not None:
        measured["step_budget"] = probes.budget
        if probes.whole_batch:
            result.notes.append(t("the step failed on the batch's first {overfit_samples} samples, so the one-batch probe "
                                  "used the whole batch.", overfit_samples=OVERFIT_SAMPLES))
        measured["overfit_losses"] = probes.overfit.losses
        if probes.second is not None:
            measured["second_opinion_losses"] = probes.second.losses
        blocked = any(f.severity == "error" for f in result.findings)
        new, extra = overfit_findings(probes.overfit, probes.second, blocked,
                                      input_warning=any(f.code == "INPUT_NOT_NORMALIZED" for f in result.findings),
                                      loss_fn=inputs.loss_fn)
        result.findings += new
        result.notes += extra
    elif record.error is not None or record.returned is not None:
        result.notes.append(t("could not check whether the model can fit one batch, because the step did not run to "
                              "the end."))
    return result
