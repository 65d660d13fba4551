"""Probes of the training doctor: run the learner's step on deep copies, with instruments.

Every probe copies ``(model, optimizer, batch, loss_fn)`` in one ``copy.deepcopy`` call, so the
copied optimizer holds the copied parameters, with the same hyperparameters and state (momentum
buffers, Adam moments). The caller's objects are never touched; :func:`preserved_state` also
restores the random generators and the grad mode afterwards.

Example:
    >>> import torch
    >>> from torch import nn
    >>> from course_utils.doctor import standard_step as step
    >>> model = nn.Linear(3, 1)
    >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
    >>> batch = (torch.randn(8, 3), torch.randn(8, 1))
    >>> with preserved_state():
    ...     record = probe_step(model, opt, batch, nn.MSELoss(), step)
    >>> len(record.losses), len(record.step_grads), record.error is None
    (2, 2, True)
    >>> model.weight.grad is None  # the caller's model was not touched
    True
"""

from __future__ import annotations

import copy
import math
import random
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm
from torch.nn.modules.dropout import _DropoutNd

from .checks import label_finding, leaves
from .errors import classify_exception
from .report import Finding

SEED = 0
#: Layers whose behaviour depends on model.train() / model.eval().
MODE_DEPENDENT = (_DropoutNd, _BatchNorm)
Step = Callable[[nn.Module, Any, torch.optim.Optimizer, Any], Any]


class ProbeAbort(Exception):
    """Raised inside a probe to stop the step before it does damage (e.g. a CUDA assert)."""

    def __init__(self, found: Finding) -> None:
        super().__init__(found.message)
        self.finding = found


@contextmanager
def preserved_state() -> Iterator[list[warnings.WarningMessage]]:
    """Restore torch/CUDA/random/numpy RNG states and grad mode on exit; collect warnings."""
    import numpy as np

    py_state, np_state, grad = random.getstate(), np.random.get_state(), torch.is_grad_enabled()
    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    devices = list(range(torch.cuda.device_count())) if cuda else []
    with torch.random.fork_rng(devices=devices), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield caught
        finally:
            random.setstate(py_state)
            np.random.set_state(np_state)
            torch.set_grad_enabled(grad)


def seed_all(seed: int = SEED) -> None:
    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def copies(model: nn.Module, optimizer: torch.optim.Optimizer, batch: Any, loss_fn: Any) -> tuple:
    """Deep copies of all four, sharing one memo so the optimizer points at the copied params."""
    try:
        model_c, opt_c, batch_c, loss_c = copy.deepcopy((model, optimizer, batch, loss_fn))
    except Exception as exc:  # noqa: BLE001 -- e.g. an attribute that cannot be copied (open file, lock)
        raise TypeError(f"diagnose() runs its probes on deep copies of model, optimizer, batch and "
                        f"loss_fn, but copying failed with {type(exc).__name__}: {exc}. Keep "
                        f"non-copyable objects (files, loaders, locks) out of the model.") from None
    for param in model_c.parameters():
        param.grad = None
    return model_c, opt_c, batch_c, loss_c


def as_float(value: Any, fallback: list[torch.Tensor]) -> float:
    """The loss a step returned, as a float (nan when it returned something else)."""
    if value is None and fallback:
        value = fallback[-1]
    if isinstance(value, torch.Tensor) and value.numel() == 1 and value.device.type != "meta":
        return float(value.detach().float())
    if isinstance(value, (int, float)):
        return float(value)
    return math.nan


class LossRecorder:
    """Wraps loss_fn: records (prediction, target) and refuses out-of-range labels."""

    def __init__(self, loss_fn: Any) -> None:
        self.loss_fn = loss_fn
        self.inputs: list[tuple[torch.Tensor, torch.Tensor, bool]] = []
        self.outputs: list[torch.Tensor] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        if len(tensors) >= 2:
            pred, target = tensors[0], tensors[1]
            if len(self.inputs) < 4:
                try:
                    autocast = torch.is_autocast_enabled(pred.device.type)
                except (RuntimeError, TypeError):
                    autocast = False
                self.inputs.append((pred.detach(), target.detach(), autocast))
            problem = label_finding(pred, target, self.loss_fn)
            if problem is not None:
                raise ProbeAbort(problem)
        out = self.loss_fn(*args, **kwargs)
        if isinstance(out, torch.Tensor):
            self.outputs.append(out.detach())
        return out

    def __getattr__(self, name: str) -> Any:  # loss_fn.reduction etc. still work
        return getattr(self.__dict__["loss_fn"], name)


@dataclass
class StepRecord:
    """What :func:`probe_step` saw."""

    names: dict[int, str]
    trainable: list[nn.Parameter]
    losses: list[float] = field(default_factory=list)
    step_grads: list[dict[int, torch.Tensor | None]] = field(default_factory=list)
    accumulated: dict[int, int] = field(default_factory=dict)
    eval_layers: list[str] = field(default_factory=list)
    root_training: bool | None = None
    nonfinite: str | None = None
    loss_inputs: list[tuple[torch.Tensor, torch.Tensor, bool]] = field(default_factory=list)
    model_outputs: list[Any] = field(default_factory=list)
    error: Finding | None = None
    #: Type name of what the step returned when it was not a loss (and loss_fn was never called).
    returned: str | None = None


class _Instruments:
    """Hooks on a copied model: non-finite outputs, eval-mode layers, gradient arrivals."""

    def __init__(self, model: nn.Module, record: StepRecord) -> None:
        self.record, self.watch_finite, self.handles = record, True, []
        for name, module in model.named_modules():
            label = f"'{name or 'model'}' ({type(module).__name__})"
            self.handles.append(module.register_forward_hook(self._finite_hook(label)))
            if isinstance(module, MODE_DEPENDENT):
                self.handles.append(module.register_forward_pre_hook(self._mode_hook(label)))
        self.handles.append(model.register_forward_pre_hook(self._root_hook))
        self.handles.append(model.register_forward_hook(lambda m, i, out: record.model_outputs.append(out)))
        for param in record.trainable:
            record.accumulated[id(param)] = 0
            self.handles.append(param.register_post_accumulate_grad_hook(self._arrived))

    def _root_hook(self, module: nn.Module, inputs: Any) -> None:
        if self.record.root_training is None:
            self.record.root_training = module.training

    def _arrived(self, param: torch.Tensor) -> None:
        self.record.accumulated[id(param)] += 1

    def _mode_hook(self, label: str) -> Callable:
        def hook(module: nn.Module, inputs: Any) -> None:
            if not module.training and torch.is_grad_enabled() and label not in self.record.eval_layers:
                self.record.eval_layers.append(label)
        return hook

    def _finite_hook(self, label: str) -> Callable:
        def hook(module: nn.Module, inputs: Any, output: Any) -> None:
            if not self.watch_finite or self.record.nonfinite is not None:
                return
            outs = [t for t in (t for _, t in leaves(output)) if t.is_floating_point() and t.device.type != "meta"]
            bad = sum(int((~torch.isfinite(t)).sum()) for t in outs)
            if bad:
                ins = [t for t in (t for _, t in leaves(inputs)) if t.is_floating_point() and t.device.type != "meta"]
                clean = all(bool(torch.isfinite(t).all()) for t in ins)
                self.record.nonfinite = (f"the output of layer {label} contains {bad} NaN/Inf values"
                                         f"{' although its inputs were finite' if clean else ''}")
        return hook

    def fake_step(self, *args: Any, closure: Callable | None = None, **kwargs: Any) -> Any:
        """Replaces optimizer.step() in the first probe: records the gradients, changes nothing."""
        closure = closure if closure is not None else (args[0] if args and callable(args[0]) else None)
        result = closure() if closure is not None else None
        self.record.step_grads.append({id(p): None if p.grad is None else p.grad.detach().clone()
                                       for p in self.record.trainable})
        return result

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def _trainable(model: nn.Module, optimizer: torch.optim.Optimizer) -> tuple[dict[int, str], list]:
    names = {id(p): n for n, p in model.named_parameters()}
    in_opt = {id(p) for group in optimizer.param_groups for p in group["params"]}
    return names, [p for p in model.parameters() if p.requires_grad and id(p) in in_opt]


def probe_step(model: nn.Module, optimizer: torch.optim.Optimizer, batch: Any, loss_fn: Any,
               step: Step, calls: int = 2, context: str = "") -> StepRecord:
    """Run ``step`` ``calls`` times on copies with optimizer.step() replaced by a recorder.

    Parameters never change, and the RNG is re-seeded before each call, so every call sees the
    same parameters, batch and dropout masks: the gradients at each step() must be identical
    unless old gradients were left in ``.grad``.
    """
    model_c, opt_c, batch_c, loss_c = copies(model, optimizer, batch, loss_fn)
    record = StepRecord(*_trainable(model_c, opt_c))
    recorder = LossRecorder(loss_c)
    instruments = _Instruments(model_c, record)
    opt_c.step = instruments.fake_step  # type: ignore[method-assign]
    try:
        for call in range(calls):
            instruments.watch_finite = call == 0
            seed_all()
            out = step(model_c, copy.deepcopy(batch_c), opt_c, recorder)
            record.losses.append(as_float(out, recorder.outputs))
            if call == 0 and not isinstance(out, (torch.Tensor, int, float)) and not recorder.outputs:
                record.returned = type(out).__name__
    except ProbeAbort as abort:
        record.error = abort.finding
    except Exception as exc:  # noqa: BLE001 -- the learner's step failed: explain it instead of raising
        record.error = classify_exception(exc, context)
    finally:
        instruments.remove()
        record.loss_inputs = recorder.inputs
    return record


@dataclass
class OverfitRecord:
    """What :func:`probe_overfit` saw: the loss after each step on the same batch."""

    losses: list[float]
    lrs: list[float]
    step_calls: int
    changed: float
    samples: int = 0
    stopped_by_time: bool = False
    error: Finding | None = None


def probe_overfit(model: nn.Module, optimizer: torch.optim.Optimizer, batch: Any, loss_fn: Any,
                  step: Step, max_steps: int = 50, lr_scale: float = 1.0, budget_s: float = 2.0,
                  goal: float = 0.5, min_steps: int = 20) -> OverfitRecord:
    """Train copies on one batch until the loss halves (``goal``), diverges or steps run out.

    After ``min_steps`` steps the probe also stops once it has run for ``budget_s`` seconds."""
    model_c, opt_c, batch_c, loss_c = copies(model, optimizer, batch, loss_fn)
    for group in opt_c.param_groups:
        group["lr"] = group["lr"] * lr_scale
    lrs = sorted({float(g["lr"]) for g in opt_c.param_groups})
    calls = [0]
    handle = opt_c.register_step_post_hook(lambda *args: calls.__setitem__(0, calls[0] + 1))
    _, trainable = _trainable(model_c, opt_c)
    before = [p.detach().clone() for p in trainable]
    sizes = {t.shape[0] for _, t in leaves(batch_c) if t.dim() > 0}
    record = OverfitRecord([], lrs, 0, 0.0, samples=sizes.pop() if len(sizes) == 1 else 0)
    recorder = LossRecorder(loss_c)
    seed_all()
    start = time.perf_counter()
    try:
        for _ in range(max_steps):
            loss = as_float(step(model_c, copy.deepcopy(batch_c), opt_c, recorder), recorder.outputs)
            record.losses.append(loss)
            if not math.isfinite(loss) or loss <= goal * record.losses[0]:
                break
            if len(record.losses) >= min_steps and time.perf_counter() - start > budget_s:
                record.stopped_by_time = True
                break
    except ProbeAbort as abort:
        record.error = abort.finding
    except Exception as exc:  # noqa: BLE001 -- as in probe_step: report the step's error, do not raise
        record.error = classify_exception(exc)
    finally:
        handle.remove()
    record.step_calls = calls[0]
    with torch.no_grad():
        record.changed = max((float((p - b).abs().max()) for p, b in zip(trainable, before)
                              if p.numel()), default=0.0)
    return record
