"""Part of the analysis stage: the training doctor's reading of an error raised by the learner's
training step (recorded by the probes as a :class:`.records.StepError`).

The exception message decides the finding's code (device, dtype, label range, broken graph), and
the recorded traceback line names the learner's own line that raised it.

Example:
    >>> item = classify_exception(RuntimeError("mat1 and mat2 must have the same dtype, but got Double and Float"))
    >>> item.code, item.severity
    ('DTYPE_MISMATCH', 'error')
    >>> classify_exception(KeyError("lr")).code
    'STEP_FAILED'
"""

from __future__ import annotations

from ..i18n import N_, t
from .common import learner_line
from .records import Finding, StepError, finding

_PATTERNS: list[tuple[str, tuple[str, ...]]] = [
    ("INPLACE_MODIFIED", ("modified by an inplace operation",)),
    ("GRAPH_REUSED", ("backward through the graph a second time", "saved tensors after they have already been freed")),
    ("TARGET_SHAPE", ("multi-target not supported", "0D or 1D target tensor expected", "must be the same as input size",
                      "that is different to the input size", "Expected target size")),
    ("BCE_ON_LOGITS", ("all elements of input should be between 0 and 1",)),
    ("DEVICE_MISMATCH", ("same device", "expected device", "device type", "is on cpu", "is on cuda")),
    ("LABEL_OUT_OF_RANGE", ("out of bounds", "device-side assert")),
    ("NO_GRAD_FLOW", ("does not require grad", "does not have a grad_fn")),
    ("DTYPE_MISMATCH", ("dtype", "scalar type", "should be the same", "can't be cast", "Expected floating point type")),
]


def classify_exception(exc: BaseException | StepError, context: str = "") -> Finding:
    """Turn an error raised by the training step into a finding (STEP_FAILED when unknown)."""
    if isinstance(exc, BaseException):
        exc = StepError(type(exc).__name__, str(exc), learner_line(exc))
    full = exc.text
    text = full.strip().splitlines()[0] if full.strip() else ""
    if len(text) > 300:  # long messages: up to the last full sentence that fits
        cut = text[:300].rfind(". ")
        text = text[:cut + 1] if cut > 80 else text[:300] + " ..."
    raised = t("the training step raised {kind}: {text}{line}. {context}", kind=exc.kind, text=text.rstrip('.'),
               line=exc.line, context=context)
    code = next((c for c, keys in _PATTERNS if any(k in full for k in keys)), "STEP_FAILED")
    why_fix = {
        "DEVICE_MISMATCH": (N_("every tensor in one operation must be on the same device."),
                            (N_("move the model and every batch to one `device` (model.to(device), "
                             "x.to(device), y.to(device))."))),
        "LABEL_OUT_OF_RANGE": (N_("labels index the model's scores, so each must be in 0..C-1."),
                               N_("map labels to 0..C-1 or give the last layer one output per class.")),
        "NO_GRAD_FLOW": ((N_("the loss is not connected to any trainable parameter, so backward() has "
                          "nothing to differentiate.")),
                         (N_("compute the loss from the model's output with tensor operations only: no "
                          ".item(), .detach(), .numpy(), torch.tensor(...) re-wrapping or torch.no_grad() "
                          "between the model and loss.backward()."))),
        "DTYPE_MISMATCH": ((N_("inputs must match the weights' dtype (usually float32) and class labels "
                            "must be int64.")),
                           (N_("convert the data once, e.g. x = x.float() (images: x.float() / 255) and "
                            "y = y.long()."))),
        "INPLACE_MODIFIED": ((N_("backward() needs the values some operations saw in the forward pass; an "
                              "in-place change (x += ..., x[...] = ..., x.relu_(), nn.ReLU(inplace=True) on a tensor "
                              "used again, or optimizer.step() before a second backward) overwrote one of them.")),
                             (N_("write the operation out of place (x = x + y, x = torch.relu(x), "
                              "torch.where(mask, value, x) instead of x[mask] = value), or .clone() the tensor "
                              "before changing it; run the step once under torch.autograd.set_detect_anomaly(True) "
                              "to see the forward line that created the tensor."))),
        "GRAPH_REUSED": ((N_("each backward() frees the graph it used. A tensor carried from one step to the next "
                          "(an RNN hidden state, a running total, a cached output) still points into the freed "
                          "graph, so the next backward() tries to go through it again.")),
                         (N_("detach what you carry between steps: hidden = hidden.detach() (for an LSTM: "
                          "h, c = h.detach(), c.detach()) right after using it, or start each batch from a new "
                          "zero state; keep running totals with loss.item(). retain_graph=True only hides the "
                          "problem: every step would back-propagate through all earlier ones."))),
        "TARGET_SHAPE": ((N_("the loss expects the target in a given shape: class indices (N,) for a (N, C) "
                          "prediction, or exactly the prediction's shape for BCE/MSE-style losses.")),
                         (N_("print pred.shape and y.shape right before the loss; class labels: y = y.squeeze(1) "
                          "(or y.view(-1)); one output per sample: y = y.view_as(pred)."))),
        "BCE_ON_LOGITS": ((N_("BCELoss takes probabilities in [0, 1]; raw scores (logits) from a linear layer "
                           "are not, and on a GPU the same call is a device-side assert.")),
                          (N_("return raw scores and use nn.BCEWithLogitsLoss (it applies the sigmoid itself, "
                           "numerically stable), or end the model with torch.sigmoid for nn.BCELoss."))),
        "STEP_FAILED": (N_("the other checks cannot run until one training step succeeds."),
                        (N_("run your step once outside diagnose() and read the full traceback; print the "
                         "shapes and dtypes of x, the model output and y."))),
    }[code]
    return finding(code, "error", raised.strip(), *(t(part) for part in why_fix))
