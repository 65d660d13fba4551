"""The training doctor: point it at your training code, get a table of what is wrong and how to fix it.

``diagnose(model, loss_fn, optimizer, batch, train_step=None)`` looks at the objects, then runs
your ``train_step(model, batch, optimizer, loss_fn) -> loss`` (or :func:`standard_step`) on deep
copies, so your model (weights, buffers, modes, ``requires_grad`` flags, hooks), optimizer, the
schedulers bound to it, batch, random generators, grad mode and default dtype are exactly as before. It turns
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

The stages run one after the other, each handing the next a plain record (:mod:`.records`):
:func:`.checks.static_checks` -> :func:`.probes.run_probes` -> :func:`.analysis.analyse` ->
:func:`.report.build_report`.

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
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ..i18n import t
from .analysis import analyse
from .checks import static_checks
from .common import MAX_STEPS, OVERFIT_SAMPLES, first_samples, leaves, split_batch, standard_step
from .probes import CallerState, preserved_state, run_probes
from .records import Analysis, Inputs, StaticRecord, finding
from .report import Report, build_report

__all__ = ["MAX_STEPS", "OVERFIT_SAMPLES", "diagnose", "first_samples", "split_batch", "standard_step"]

#: Models with fewer parameters are probed with one torch thread (restored afterwards).
SMALL_MODEL = 2_000_000


def _argument_problem(model: Any, loss_fn: Any, optimizer: Any, batch: Any, train_step: Any) -> str | None:
    usage = "diagnose(model, loss_fn, optimizer, batch, train_step=None)"
    if not isinstance(model, nn.Module):
        if isinstance(model, type):
            return t("{usage}: expected model to be a torch.nn.Module, found {kind} (a class: create the model "
                     "first, e.g. MyNet()).", usage=usage, kind=type(model).__name__)
        return t("{usage}: expected model to be a torch.nn.Module, found {kind}.", usage=usage,
                 kind=type(model).__name__)
    if isinstance(loss_fn, type):
        return t("{usage}: loss_fn is the class {name}; pass an instance: {name}() (with parentheses).",
                 usage=usage, name=loss_fn.__name__)
    if not callable(loss_fn):
        return t("{usage}: expected loss_fn to be callable (e.g. nn.CrossEntropyLoss()), found {kind}.",
                 usage=usage, kind=type(loss_fn).__name__)
    if not isinstance(optimizer, torch.optim.Optimizer):
        if isinstance(optimizer, type):
            return t("{usage}: expected optimizer to be a torch.optim.Optimizer, found {kind} (a class: create "
                     "it, e.g. torch.optim.SGD(model.parameters(), lr=0.1)).", usage=usage,
                     kind=type(optimizer).__name__)
        return t("{usage}: expected optimizer to be a torch.optim.Optimizer, found {kind}.", usage=usage,
                 kind=type(optimizer).__name__)
    if train_step is not None:
        if not callable(train_step):
            return t("{usage}: expected train_step to be a function or None, found {kind}.", usage=usage,
                     kind=type(train_step).__name__)
        try:
            inspect.signature(train_step).bind(model, batch, optimizer, loss_fn)
        except TypeError:
            return t("{usage}: train_step must accept (model, batch, optimizer, loss_fn) in that order; yours "
                     "has the signature {signature}.", usage=usage, signature=inspect.signature(train_step))
        except ValueError:  # builtins without a signature: let them run
            pass
    if isinstance(batch, torch.utils.data.DataLoader) or not (
            isinstance(batch, (tuple, list, dict, torch.Tensor)) or train_step is not None):
        return t("{usage}: expected batch to be one batch such as (x, y), found {kind}. Take one from your "
                 "loader: batch = next(iter(loader)).", usage=usage, kind=type(batch).__name__)
    if not any(True for _ in leaves(batch)):
        return t("{usage}: the batch holds no tensors (found {kind}); convert NumPy data with torch.tensor(...).",
                 usage=usage, kind=type(batch).__name__)
    if train_step is None:
        pair = split_batch(batch)
        if pair is None:
            if isinstance(batch, (tuple, list)):
                return t("{usage}: without a train_step the batch must be (inputs, targets) or a dict with keys "
                         "like 'x'/'y'; found {kind} of length {n}. Pass your own train_step(model, batch, "
                         "optimizer, loss_fn) for other layouts.", usage=usage, kind=type(batch).__name__,
                         n=len(batch))
            return t("{usage}: without a train_step the batch must be (inputs, targets) or a dict with keys "
                     "like 'x'/'y'; found {kind}. Pass your own train_step(model, batch, optimizer, loss_fn) "
                     "for other layouts.", usage=usage, kind=type(batch).__name__)
        if not isinstance(pair[1], torch.Tensor):
            return t("{usage}: the targets (batch[1]) must be a tensor, found {kind}.", usage=usage,
                     kind=type(pair[1]).__name__)
    return None


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
    x, y = split_batch(batch) or (None, None)
    inputs = Inputs(model, loss_fn, optimizer, batch, train_step if train_step is not None else standard_step,
                    train_step is None, x, y, max(1, int(max_steps)))
    threads = torch.get_num_threads()
    static = StaticRecord()
    try:
        if sum(p.numel() for p in model.parameters()) < SMALL_MODEL:
            torch.set_num_threads(1)  # small models: fastest on one thread, and the same numbers on any machine
        with preserved_state():
            caller = CallerState(model, optimizer, (train_step, loss_fn))
            try:
                static = static_checks(inputs)
                probes = run_probes(inputs, static, caller)
                result = analyse(inputs, static, probes)
            finally:
                caller.restore()
    except Exception as exc:  # noqa: BLE001 -- never raise from deep inside: say what could not be checked
        result = Analysis(list(static.findings), list(static.notes))
        result.findings.append(finding(
            "NOT_CHECKED", "warning",
            t("the doctor's own checks stopped with {kind}: {text}; the findings above are what it could "
              "check before that.", kind=type(exc).__name__, text=str(exc)[:200]),
            t("an unusual model, batch or step layout that the probes do not handle."),
            t("run your step once by hand and read the traceback; report the setup if it "
              "trains correctly by hand.")))
    finally:
        torch.set_num_threads(threads)
    return build_report(result, time.perf_counter() - started)
