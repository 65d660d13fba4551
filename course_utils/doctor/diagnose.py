"""The training doctor: point it at your training code, get a table of what is wrong and how to fix it.

``diagnose(model, loss_fn, optimizer, batch, train_step=None)`` looks at the objects, then runs
your ``train_step(model, batch, optimizer, loss_fn) -> loss`` (or :func:`standard_step`) on deep
copies, so your model, optimizer, batch and random generators are exactly as before. It turns
the classic troubleshooting table and the "loss will not go down" checklist into probes:

1. static checks: parameters missing from the optimizer, devices, input dtype/NaN/scale;
2. one instrumented step, run twice with ``optimizer.step()`` replaced by a recorder: what reaches
   the loss (softmax outputs, label range, broadcasting shapes, dtypes), NaN/Inf per layer,
   which parameters receive gradients, whether gradients carry over (missing ``zero_grad``),
   Dropout/BatchNorm in eval mode;
3. overfitting the batch's first 16 samples for a fixed number of steps derived from the model's
   size (at most ``max_steps``; never a time limit, so the verdict does not depend on the
   machine's speed or load): does the loss fall, diverge, or settle at chance level? (With lr x10
   or x0.1 as a second opinion.)

Codes are stable strings (:data:`.report.CODES`); ``Report.codes`` is their set.

Example:
    >>> import torch
    >>> from torch import nn
    >>> _ = torch.manual_seed(0)
    >>> model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3), nn.Softmax(dim=1))
    >>> optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    >>> batch = (torch.randn(32, 4), torch.randint(0, 3, (32,)))
    >>> report = diagnose(model, nn.CrossEntropyLoss(), optimizer, batch)
    >>> sorted(report.codes)
    ['SOFTMAX_BEFORE_CE']
    >>> report.findings[0].severity
    'error'
    >>> model[-1] = nn.Identity()  # the fix: return logits
    >>> diagnose(model, nn.CrossEntropyLoss(), optimizer, batch).ok
    True
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from .analysis import divergence, overfit_findings, step_findings
from .checks import device_findings, input_findings, leaves, optimizer_findings, registration_findings
from .probes import CopyFailed, preserved_state, probe_overfit, probe_step, step_budget
from .report import Finding, Report, finding

__all__ = ["MAX_STEPS", "OVERFIT_SAMPLES", "diagnose", "first_samples", "split_batch", "standard_step"]

#: The one-batch overfitting probe trains on this many samples (fast, and easy to memorise).
OVERFIT_SAMPLES = 16
#: Models with fewer parameters are probed with one torch thread (restored afterwards).
SMALL_MODEL = 2_000_000
#: The most steps the one-batch probe runs (small models; larger ones get fewer, see step_budget).
MAX_STEPS = 60
_PAIRS = [("x", "y"), ("input", "target"), ("inputs", "targets"), ("image", "label"),
          ("images", "labels"), ("features", "target"), ("features", "targets")]


def split_batch(batch: Any) -> tuple[Any, Any] | None:
    """(inputs, targets) from a batch: a pair ``(x, y)`` or a dict such as ``{"x": ..., "y": ...}``.

    >>> split_batch((1, 2)), split_batch({"image": 1, "label": 2}), split_batch([1, 2, 3])
    ((1, 2), (1, 2), None)
    """
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        return batch[0], batch[1]
    if isinstance(batch, dict):
        for x_key, y_key in _PAIRS:
            if x_key in batch and y_key in batch:
                return batch[x_key], batch[y_key]
    return None


def first_samples(batch: Any, n: int) -> Any:
    """The first ``n`` samples of every tensor in the batch (the batch itself when it is not larger,
    or when its tensors do not share one leading size).

    >>> x, y = first_samples((torch.zeros(64, 3), torch.zeros(64)), 16)
    >>> x.shape, y.shape
    (torch.Size([16, 3]), torch.Size([16]))
    """
    sizes = {t.shape[0] for _, t in leaves(batch) if t.dim() > 0}
    if len(sizes) != 1 or next(iter(sizes)) <= n:
        return batch

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


def standard_step(model: nn.Module, batch: Any, optimizer: torch.optim.Optimizer, loss_fn: Any) -> Any:
    """The textbook step diagnose() runs without a ``train_step``. It leaves the model's
    train/eval mode as it is (so a model passed in eval mode trains in eval mode)."""
    x, y = split_batch(batch)  # type: ignore[misc]
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


def _argument_problem(model: Any, loss_fn: Any, optimizer: Any, batch: Any, train_step: Any) -> str | None:
    usage = "diagnose(model, loss_fn, optimizer, batch, train_step=None)"
    if not isinstance(model, nn.Module):
        hint = " (a class: create the model first, e.g. MyNet())" if isinstance(model, type) else ""
        return f"{usage}: expected model to be a torch.nn.Module, found {type(model).__name__}{hint}."
    if isinstance(loss_fn, type):
        return (f"{usage}: loss_fn is the class {loss_fn.__name__}; pass an instance: "
                f"{loss_fn.__name__}() (with parentheses).")
    if not callable(loss_fn):
        return f"{usage}: expected loss_fn to be callable (e.g. nn.CrossEntropyLoss()), found {type(loss_fn).__name__}."
    if not isinstance(optimizer, torch.optim.Optimizer):
        hint = (" (a class: create it, e.g. torch.optim.SGD(model.parameters(), lr=0.1))"
                if isinstance(optimizer, type) else "")
        return (f"{usage}: expected optimizer to be a torch.optim.Optimizer, found "
                f"{type(optimizer).__name__}{hint}.")
    if train_step is not None:
        if not callable(train_step):
            return f"{usage}: expected train_step to be a function or None, found {type(train_step).__name__}."
        try:
            inspect.signature(train_step).bind(model, batch, optimizer, loss_fn)
        except TypeError:
            return (f"{usage}: train_step must accept (model, batch, optimizer, loss_fn) in that order; "
                    f"yours has the signature {inspect.signature(train_step)}.")
        except ValueError:  # builtins without a signature: let them run
            pass
    if isinstance(batch, torch.utils.data.DataLoader) or not (
            isinstance(batch, (tuple, list, dict, torch.Tensor)) or train_step is not None):
        return (f"{usage}: expected batch to be one batch such as (x, y), found "
                f"{type(batch).__name__}. Take one from your loader: batch = next(iter(loader)).")
    if not any(True for _ in leaves(batch)):
        return f"{usage}: the batch holds no tensors (found {type(batch).__name__}); convert NumPy data with torch.tensor(...)."
    if train_step is None:
        pair = split_batch(batch)
        if pair is None:
            return (f"{usage}: without a train_step the batch must be (inputs, targets) or a dict with "
                    f"keys like 'x'/'y'; found {type(batch).__name__}"
                    f"{f' of length {len(batch)}' if isinstance(batch, (tuple, list)) else ''}. "
                    "Pass your own train_step(model, batch, optimizer, loss_fn) for other layouts.")
        if not isinstance(pair[1], torch.Tensor):
            return f"{usage}: the targets (batch[1]) must be a tensor, found {type(pair[1]).__name__}."
    return None


def _context(x: Any, y: Any, model: nn.Module) -> str:
    param = next((p for p in model.parameters()), None)
    parts = [f"{name} are {t.dtype} {tuple(t.shape)}" for name, t in (("inputs", x), ("targets", y))
             if isinstance(t, torch.Tensor)]
    if param is not None:
        parts.append(f"parameters are {param.dtype} on {param.device}")
    return ("Here " + ", ".join(parts) + ".") if parts else ""


def diagnose(model: nn.Module, loss_fn: Callable[..., Any], optimizer: torch.optim.Optimizer, batch: Any,
             train_step: Callable[..., Any] | None = None, *, max_steps: int = MAX_STEPS) -> Report:
    """Check a training setup on copies and return a :class:`Report` (see the module docstring).

    ``train_step(model, batch, optimizer, loss_fn)`` must do one full step (zero_grad, forward,
    loss, backward, step) and return the loss; without it :func:`standard_step` runs.
    ``max_steps`` caps the one-batch overfitting probe, whose step budget comes from the model's
    size (:func:`.probes.step_budget`): a number of steps, never a time limit, so the verdict is
    the same on a slow or busy machine.
    """
    problem = _argument_problem(model, loss_fn, optimizer, batch, train_step)
    if problem:
        raise TypeError(problem)
    started = time.perf_counter()
    notes = [(f"the probes ran {'your train_step' if train_step else 'the standard step'} on copies "
              "of your model, optimizer and batch.")]
    measurements: dict[str, Any] = {}
    found: list[Finding] = []
    threads = torch.get_num_threads()
    try:
        if sum(p.numel() for p in model.parameters()) < SMALL_MODEL:
            torch.set_num_threads(1)  # small models: fastest on one thread, and the same numbers on any machine
        with preserved_state():
            _run(model, loss_fn, optimizer, batch, train_step, max(1, int(max_steps)), found, notes, measurements)
    except CopyFailed as exc:
        notes.clear()
        found.append(finding("NOT_CHECKED", "warning",
                             f"the probes run on deep copies of the 4 objects (model, optimizer, batch and loss_fn), "
                             f"but copying failed ({exc}), so no training step was checked.",
                             "the doctor never trains your own objects.",
                             "find the attribute that cannot be copied (e.g. copy.deepcopy(model) raises the "
                             "same error) and keep it outside the model, or run diagnose() on a freshly built model."))
    except Exception as exc:  # noqa: BLE001 -- never raise from deep inside: say what could not be checked
        found.append(finding("NOT_CHECKED", "warning",
                             f"the doctor's own checks stopped with {type(exc).__name__}: {str(exc)[:200]}; "
                             f"the findings above are what it could check before that.",
                             "an unusual model, batch or step layout that the probes do not handle.",
                             "run your step once by hand and read the traceback; report the setup if it "
                             "trains correctly by hand."))
    finally:
        torch.set_num_threads(threads)
    measurements["seconds"] = time.perf_counter() - started
    unique: dict[str, Finding] = {}
    for item in found:
        unique.setdefault(item.code, item)
    return Report(list(unique.values()), notes, measurements)


def _run(model: nn.Module, loss_fn: Any, optimizer: torch.optim.Optimizer, batch: Any, train_step: Any,
         max_steps: int, found: list[Finding], notes: list[str], measurements: dict[str, Any]) -> None:
    """The stages: static checks, the instrumented step, the one-batch probe (appending to ``found``)."""
    step = train_step if train_step is not None else standard_step
    x, y = split_batch(batch) or (None, None)
    if x is None and isinstance(batch, torch.Tensor):
        x = batch
    found += optimizer_findings(model, optimizer) + device_findings(model, batch, loss_fn)
    if "DEVICE_MISMATCH" not in {f.code for f in found}:
        found += input_findings(x, model)
    codes = {f.code for f in found}
    on_meta = any(t.device.type == "meta" for _, t in leaves(batch))
    if "DEVICE_MISMATCH" in codes or on_meta:
        if on_meta and "DEVICE_MISMATCH" not in codes:
            notes.append("the batch is on the meta device (shapes only): no step could run.")
        found += registration_findings(model, optimizer)
        return
    copy_notes: list[str] = []
    record = probe_step(model, optimizer, batch, loss_fn, step, context=_context(x, y, model), notes=copy_notes)
    notes += [n + "." for n in copy_notes]
    found += [f for f in step_findings(record, loss_fn, y, train_step is None) if f.code not in codes]
    if record.losses:
        measurements["initial_loss"] = record.losses[0]
        grads = [g for g in (record.step_grads[0].values() if record.step_grads else
                             record.increments[0].values() if record.increments else []) if g is not None]
        if grads:
            norm = float(torch.linalg.vector_norm(torch.stack([g.double().norm() for g in grads])))
            measurements["grad_norm"] = norm
            notes.append(f"one step: loss {record.losses[0]:.4g}, total gradient norm {norm:.4g} "
                         f"over {len(grads)} parameter tensors.")
    if record.error is None and record.returned is None and record.losses and math.isfinite(record.losses[0]):
        n_params = sum(p.numel() for p in model.parameters())
        per_sample = record.activations / max(record.samples, 1)
        budget = step_budget(n_params, per_sample, min(record.samples or OVERFIT_SAMPLES, OVERFIT_SAMPLES), max_steps)
        measurements["step_budget"] = budget
        found += _overfit(model, optimizer, batch, loss_fn, step, budget, found, notes, measurements)
    elif record.error is not None or record.returned is not None:
        notes.append("could not check whether the model can fit one batch, because the step did not run to the end.")


def _overfit(model: nn.Module, optimizer: torch.optim.Optimizer, batch: Any, loss_fn: Any, step: Any,
             max_steps: int, found: list[Finding], notes: list[str], measurements: dict) -> list[Finding]:
    blocked = any(f.severity == "error" for f in found)
    small = first_samples(batch, OVERFIT_SAMPLES)
    main = probe_overfit(model, optimizer, small, loss_fn, step, max_steps)
    if main.error is not None and small is not batch:  # e.g. a state or a view(batch_size, -1) tied to the batch size
        notes.append(f"the step failed on the batch's first {OVERFIT_SAMPLES} samples, so the one-batch probe "
                     "used the whole batch.")
        small = batch
        main = probe_overfit(model, optimizer, small, loss_fn, step, max_steps)
    measurements["overfit_losses"] = main.losses
    other = None
    if not blocked and main.error is None and main.losses and main.step_calls and main.changed:
        scale = 0.1 if divergence(main.losses) else 10.0
        if scale < 1 or main.losses[0] > 0 and min(main.losses) > 0.9 * main.losses[0]:
            other = probe_overfit(model, optimizer, small, loss_fn, step, max(max_steps // 2, 1), lr_scale=scale)
    if other is not None:
        measurements["second_opinion_losses"] = other.losses
    new, extra = overfit_findings(main, other, blocked,
                                  input_warning=any(f.code == "INPUT_NOT_NORMALIZED" for f in found),
                                  loss_fn=loss_fn)
    notes += extra
    return new
