"""Stage 2 of the training doctor: probes that run the learner's step on deep copies, with
instruments, and record what a step did (:class:`.records.ProbeRecord`). They decide nothing:
:mod:`.analysis` reads the records.

:func:`run_probes` runs, in order: one instrumented step run twice with ``optimizer.step()``
replaced by a recorder (:func:`probe_step`), then, when that step ran to the end, the one-batch
overfitting run (:func:`probe_overfit`) and, when its losses diverged or stayed flat, a second
opinion with the learning rate x0.1 or x10.

Every probe copies ``(model, optimizer, batch, loss_fn)`` in one ``copy.deepcopy`` call, so the
copied optimizer holds the copied parameters, with the same hyperparameters and state (momentum
buffers, Adam moments); attributes hung on the optimizer (``optimizer.scheduler``) are copied bound
to the copy. A learning-rate scheduler that the step closes over (bound to the caller's optimizer)
is pointed at the probe's copy while the probe runs, so it changes the copy's learning rates as it
would in real training. :class:`CallerState` takes the caller's model, optimizer and those
schedulers as they were and puts them back after every probe (a step may reach them anyway, e.g.
a global model); :func:`preserved_state` restores the random generators, the grad mode, the
default dtype and the anomaly-detection flag.

Probes are bounded by a number of steps, never by time: the same setup gives the same records on
a fast, a slow or a busy machine.

Example:
    >>> import torch
    >>> from torch import nn
    >>> from course_utils.doctor.common import standard_step as step
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
import functools
import math
import random
import types
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm
from torch.nn.modules.dropout import _DropoutNd

from ..i18n import t
from .common import (
    OVERFIT_SAMPLES,
    divergence,
    first_samples,
    has_values,
    learner_line,
    leaves,
    loss_guard,
    samples,
)
from .graph import floor, graph_nodes, producer, walk
from .records import (
    GraphInfo,
    Inputs,
    LossCall,
    OverfitRecord,
    ProbeRecord,
    StaticRecord,
    Step,
    StepError,
    StepRecord,
)

SEED = 0
#: Layers whose behaviour depends on model.train() / model.eval().
MODE_DEPENDENT = (_DropoutNd, _BatchNorm)


class ProbeAbort(Exception):
    """Raised inside a probe to stop a loss call before it runs (e.g. before a CUDA assert)."""

    def __init__(self, error: StepError) -> None:
        super().__init__(error.text)
        self.error = error


def step_error(exc: BaseException) -> StepError:
    """The record of an exception raised by the learner's step."""
    if isinstance(exc, ProbeAbort):
        return exc.error
    return StepError(type(exc).__name__, str(exc), learner_line(exc))


class CopyFailed(Exception):
    """The objects could not be deep-copied, even with the fallbacks of :func:`copies`."""


@contextmanager
def preserved_state() -> Iterator[list[warnings.WarningMessage]]:
    """Restore torch/CUDA/random/numpy RNG states and grad mode on exit; collect warnings."""
    import numpy as np

    py_state, np_state, grad = random.getstate(), np.random.get_state(), torch.is_grad_enabled()
    dtype, anomaly = torch.get_default_dtype(), torch.is_anomaly_enabled()
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
            torch.set_default_dtype(dtype)
            torch.autograd.set_detect_anomaly(anomaly)


def _is_scheduler(obj: Any, optimizer: torch.optim.Optimizer) -> bool:
    from torch.optim import lr_scheduler

    try:
        bound = vars(obj).get("optimizer") is optimizer
    except TypeError:
        return False
    return bound and (isinstance(obj, (lr_scheduler.LRScheduler, lr_scheduler.ReduceLROnPlateau))
                      or "last_epoch" in vars(obj))


def _global_names(code: Any) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _schedulers(optimizer: torch.optim.Optimizer, roots: list[Any], limit: int = 4000) -> list[Any]:
    """The learning-rate schedulers bound to ``optimizer`` (``torch.optim.lr_scheduler`` ones, SWALR,
    ReduceLROnPlateau, or any object with ``.optimizer`` and ``.last_epoch``) that the ``roots``
    (the train_step, the loss, the model, the optimizer's hooks) can reach: through a function's
    closure, defaults and the globals it names, a bound method's object, a partial, containers
    and object attributes, a few levels deep. A train_step that closes over such a scheduler steps
    it, and that changes the caller's learning rates."""
    found: list[Any] = []
    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(root, 0) for root in roots]
    skip = (str, bytes, int, float, bool, complex, type, types.ModuleType, torch.Tensor, type(None))
    while stack and len(seen) < limit:
        obj, depth = stack.pop()
        if id(obj) in seen or isinstance(obj, skip):
            continue
        seen.add(id(obj))
        if _is_scheduler(obj, optimizer):
            found.append(obj)
            continue
        if depth >= 4:
            continue
        children: list[Any] = []
        if isinstance(obj, types.FunctionType):
            children += [c.cell_contents for c in obj.__closure__ or () if _filled(c)]
            children += [obj.__globals__[n] for n in _global_names(obj.__code__) if n in obj.__globals__]
            children += list(obj.__defaults__ or ()) + list((obj.__kwdefaults__ or {}).values())
        elif isinstance(obj, types.MethodType):
            children += [obj.__func__, obj.__self__]
        elif isinstance(obj, functools.partial):
            children += [obj.func, *obj.args, *obj.keywords.values()]
        elif isinstance(obj, dict):
            children += list(obj.values())[:200]
        elif isinstance(obj, (list, tuple, set, frozenset)):
            children += list(obj)[:200]
        elif isinstance(obj, nn.Module):
            children += [v for k, v in vars(obj).items() if k not in ("_parameters", "_buffers")]
        elif isinstance(obj, torch.optim.Optimizer):
            children += [h for k, v in vars(obj).items() if k.endswith("_hooks") for h in v.values()]
        else:
            try:
                children += list(vars(obj).values())[:200]
            except TypeError:
                pass
            call = getattr(type(obj), "__call__", None)
            if isinstance(call, types.FunctionType) and not type(obj).__module__.startswith("torch"):
                children.append(call)
        stack += [(child, depth + 1) for child in children]
    return found


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 -- raises ValueError when empty
    except ValueError:
        return False
    return True


def _clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001 -- keep the object itself
        return value


class CallerState:
    """Everything of the caller's that a probe could change, taken before the probes and put back
    after each one: the model's parameters, buffers, gradients, ``training`` and ``requires_grad``
    flags and hooks; the optimizer's param_groups (``lr``, ``initial_lr`` ...), state and
    attributes; every scheduler bound to the optimizer (``last_epoch``, ``_last_lr``,
    ``base_lrs`` ...). The probes work on copies; this covers a ``train_step`` that reaches the
    caller's objects anyway (a scheduler or a global model it closes over)."""

    _HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks",
              "_forward_hooks_with_kwargs", "_forward_pre_hooks_with_kwargs", "_forward_hooks_always_called",
              "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
              "_load_state_dict_post_hooks")

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer, roots: tuple[Any, ...] = ()) -> None:
        self.model, self.optimizer = model, optimizer
        self.modules = [(m, m.training, {k: dict(v) for k in self._HOOKS if isinstance(v := getattr(m, k, None), dict)},
                         dict(m._parameters), dict(m._buffers), dict(m._modules)) for m in model.modules()]
        self.tensors = [(t, t.detach().clone(), t.requires_grad if isinstance(t, nn.Parameter) else None,
                         None if t.grad is None or not isinstance(t, nn.Parameter) else t.grad.detach().clone(),
                         t.grad is None) for t in self._tensors(model)]
        self.groups = [{k: _clone(v) for k, v in g.items() if k != "params"} | {"params": list(g["params"])}
                       for g in optimizer.param_groups]
        self.state = {p: {k: _clone(v) for k, v in st.items()} for p, st in optimizer.state.items()}
        self.opt_attrs = {k: v for k, v in vars(optimizer).items() if k not in ("param_groups", "state")}
        self.schedulers = [(s, {k: (v if k == "optimizer" else _clone(v)) for k, v in vars(s).items()})
                           for s in _schedulers(optimizer, [*roots, model, optimizer])]

    @staticmethod
    def _tensors(model: nn.Module) -> list[torch.Tensor]:
        seen: set[int] = set()
        out = []
        for tensor in [*model.parameters(), *model.buffers()]:
            if id(tensor) not in seen:
                seen.add(id(tensor))
                out.append(tensor)
        return out

    def restore(self) -> None:
        for module, training, hooks, params, buffers, children in self.modules:
            module.training = training
            for key, value in hooks.items():
                current = getattr(module, key)
                current.clear()
                current.update(value)
            for store, saved in ((module._parameters, params), (module._buffers, buffers), (module._modules, children)):
                if store != saved:
                    store.clear()
                    store.update(saved)
        with torch.no_grad():
            for tensor, value, requires_grad, grad, no_grad in self.tensors:
                if tensor.shape != value.shape or tensor.dtype != value.dtype or tensor.device != value.device:
                    tensor.data = value
                elif tensor.device.type != "meta" and tensor.layout == torch.strided and not torch.equal(tensor, value):
                    tensor.copy_(value)
                if requires_grad is not None:
                    tensor.requires_grad_(requires_grad)
                    if no_grad:
                        tensor.grad = None
                    elif grad is not None and (tensor.grad is None or grad.layout != torch.strided
                                               or grad.device.type == "meta" or not torch.equal(tensor.grad, grad)):
                        tensor.grad = grad.clone()
        for group, saved in zip(self.optimizer.param_groups, self.groups):
            group.clear()
            group.update({k: _clone(v) if k != "params" else v for k, v in saved.items()})
        self.optimizer.state.clear()
        self.optimizer.state.update({p: {k: _clone(v) for k, v in st.items()} for p, st in self.state.items()})
        for key in [k for k in vars(self.optimizer) if k not in self.opt_attrs and k not in ("param_groups", "state")]:
            delattr(self.optimizer, key)
        for key, value in self.opt_attrs.items():
            if vars(self.optimizer).get(key) is not value:
                setattr(self.optimizer, key, value)
        for scheduler, saved in self.schedulers:
            scheduler.__dict__.clear()
            scheduler.__dict__.update({k: (v if k == "optimizer" else _clone(v)) for k, v in saved.items()})


def seed_all(seed: int = SEED) -> None:
    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def dense(tensor: torch.Tensor) -> torch.Tensor:
    """A detached dense copy of a gradient (nn.Embedding(sparse=True) gives sparse ones, which most
    operations the probes use do not support)."""
    tensor = tensor.detach()
    return tensor.to_dense() if tensor.layout != torch.strided else tensor


def _attached(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.grad_fn is not None


def _state_memo(model: nn.Module, shared: bool) -> tuple[dict[int, Any], list[str]]:
    """A deepcopy memo that detaches tensor attributes holding a graph (a stored hidden state) and,
    with ``shared``, shares attributes that cannot be copied (locks, files, loaders)."""
    memo: dict[int, Any] = {}
    notes: list[str] = []
    for name, module in model.named_modules():
        for attr, value in vars(module).items():
            if attr.startswith("_") and attr in ("_parameters", "_buffers", "_modules"):
                continue
            items = value if isinstance(value, (tuple, list)) else [value]
            label = f"{name + '.' if name else ''}{attr}"
            if any(_attached(v) for v in items):
                for v in items:
                    if _attached(v):
                        memo[id(v)] = v.detach().clone()
                notes.append(t("model.{label} holds a tensor attached to the graph of an earlier step "
                               "(the probes used a detached copy)", label=label))
            elif shared:
                try:
                    copy.deepcopy(value, dict(memo))
                except Exception:  # noqa: BLE001 -- any failure: share the object instead
                    memo[id(value)] = value
                    notes.append(t("model.{label} ({kind}) cannot be copied, so the probes share it with "
                                   "your model", label=label, kind=type(value).__name__))
    return memo, notes


def copies(model: nn.Module, optimizer: torch.optim.Optimizer, batch: Any, loss_fn: Any,
           notes: list[str] | None = None) -> tuple:
    """Deep copies of all four, sharing one memo so the optimizer points at the copied params, and
    a map from each copied tensor's id to its original's id.

    A tensor attribute that still holds an autograd graph (e.g. an LSTM state stored on the model
    after a training step) is copied detached; an attribute that cannot be copied at all is shared.
    What was done is appended to ``notes``. Raises :class:`CopyFailed` when nothing works."""
    error: Exception | None = None
    for shared in (None, False, True):
        memo, done = ({}, []) if shared is None else _state_memo(model, shared)
        if shared is not None:  # batch tensors still attached to a graph (e.g. made from parameters)
            for _, tensor in leaves(batch):
                if _attached(tensor):
                    memo[id(tensor)] = tensor.detach().clone()
        try:
            model_c, opt_c, batch_c, loss_c = copy.deepcopy((model, optimizer, batch, loss_fn), memo)
            memo[id(optimizer)] = opt_c
        except Exception as exc:  # noqa: BLE001 -- try the next fallback
            error = exc
            continue
        if notes is not None:
            notes.extend(n for n in done if n not in notes)
        for param in model_c.parameters():
            param.grad = None
        for key, value in vars(optimizer).items():  # e.g. optimizer.scheduler: copied bound to the copy
            # (not a scheduler's wrapper of optimizer.step: it would call the caller's optimizer)
            if key not in vars(opt_c) and not isinstance(value, (types.FunctionType, types.MethodType)):
                try:
                    setattr(opt_c, key, copy.deepcopy(value, memo))
                except Exception:  # noqa: BLE001 -- share what cannot be copied
                    setattr(opt_c, key, value)
        back = {id(v): k for k, v in memo.items() if isinstance(v, torch.Tensor)}
        return model_c, opt_c, batch_c, loss_c, back
    raise CopyFailed(f"{type(error).__name__}: {error}")


def as_float(value: Any, fallback: list[torch.Tensor]) -> float:
    """The loss a step returned, as a float (nan when it returned something else)."""
    if value is None and fallback:
        value = fallback[-1]
    if isinstance(value, (tuple, list)) and value and isinstance(value[0], torch.Tensor):
        value = value[0]  # (loss, outputs) pairs
    if isinstance(value, torch.Tensor) and value.numel() == 1 and value.device.type != "meta":
        return float(value.detach().float())
    if isinstance(value, (int, float)):
        return float(value)
    return math.nan


def _same_value(a: Any, b: Any) -> bool:
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.shape != b.shape:
        return False
    return bool(torch.allclose(a.detach().double(), b.detach().double(), rtol=1e-5, atol=1e-7))


class LossRecorder:
    """Wraps loss_fn: records what reaches it and refuses out-of-range labels / (N, 1) class targets."""

    def __init__(self, loss_fn: Any, keep: int = 4) -> None:
        self.loss_fn = loss_fn
        self.keep = keep
        self.calls: list[LossCall] = []
        self.outputs: list[torch.Tensor] = []
        self.last: tuple[torch.Tensor, torch.Tensor] | None = None
        self.graph: GraphInfo | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        pred = target = None
        if len(tensors) >= 2:
            pred, target = tensors[0], tensors[1]
            ignore = kwargs.get("ignore_index")
            ignore = int(ignore) if isinstance(ignore, int) else None
            guard = loss_guard(pred, target, self.loss_fn, ignore) or self._cpu_first(pred, target, args, kwargs)
            if guard is not None:
                raise ProbeAbort(StepError("guard", guard, guard=guard,
                                           call=self._record(pred, target, None, args, kwargs)))
        out = self.loss_fn(*args, **kwargs)
        if pred is not None and target is not None:
            self.last = (pred.detach(), target.detach())
            if len(self.calls) < self.keep:
                self.calls.append(self._record(pred, target, out, args, kwargs))
        if isinstance(out, torch.Tensor):
            self.outputs.append(out.detach())
            if self.graph is None and out.grad_fn is not None:
                self.graph = walk(out)
        return out

    def _cpu_first(self, pred: torch.Tensor, target: torch.Tensor, args: tuple, kwargs: dict) -> str | None:
        """A loss the doctor does not know, given integer targets on a GPU: an index out of range
        there is a device-side assert that breaks the CUDA session, so the call is tried on CPU
        copies first; "labels" when that raises an index error."""
        if (pred.device.type == "cpu" or not pred.is_floating_point() or target.is_floating_point()
                or target.dtype == torch.bool or not has_values(target) or len(args) < 2
                or args[0] is not pred or args[1] is not target):
            return None
        try:
            with torch.no_grad():
                self.loss_fn(pred.detach().cpu(), target.cpu(), *args[2:], **kwargs)
        except (IndexError, RuntimeError) as exc:
            return "labels" if "out of bounds" in str(exc) or "out of range" in str(exc) else None
        except Exception:  # noqa: BLE001 -- the loss cannot run on the CPU (weights on the GPU): not decided
            return None
        return None

    def _record(self, pred: torch.Tensor, target: torch.Tensor, out: Any, args: tuple, kwargs: dict) -> LossCall:
        try:
            autocast = torch.is_autocast_enabled(pred.device.type)
        except (RuntimeError, TypeError):
            autocast = False
        ignore = kwargs.get("ignore_index")
        call = LossCall(pred.detach(), target.detach(), autocast, producer(pred), pred.requires_grad,
                        ignore_index=int(ignore) if isinstance(ignore, int) else None, floor=floor(pred))
        if (out is not None and not self.calls and pred.shape != target.shape and pred.numel() == target.numel() > 0
                and len(args) >= 2 and args[0] is pred and args[1] is target and pred.device.type != "meta"):
            same: list[bool] = []
            for a, b in ((pred.detach(), target.detach().reshape(pred.shape)),
                         (pred.detach().reshape(target.shape), target.detach())):
                try:
                    with torch.no_grad():
                        same.append(_same_value(out, self.loss_fn(a, b, *args[2:], **kwargs)))
                except Exception:  # noqa: BLE001 -- the loss cannot take these shapes: not decided
                    pass
            call.reshaped_same = any(same) if same else None
        return call

    def __getattr__(self, name: str) -> Any:  # loss_fn.reduction etc. still work
        return getattr(self.__dict__["loss_fn"], name)


class _Instruments:
    """Hooks on a copied model: non-finite outputs, eval-mode layers, gradient arrivals."""

    def __init__(self, model: nn.Module, record: StepRecord) -> None:
        self.record, self.watch_finite, self.handles, self.call = record, True, [], 0
        for name, module in model.named_modules():
            label = f"'{name or 'model'}' ({type(module).__name__})"
            self.handles.append(module.register_forward_hook(self._finite_hook(label)))
            if isinstance(module, MODE_DEPENDENT):
                self.handles.append(module.register_forward_pre_hook(self._mode_hook(label)))
            if isinstance(module, nn.RNNBase):
                self.handles.append(module.register_forward_pre_hook(self._rnn_hook(label)))
        self.handles.append(model.register_forward_pre_hook(self._root_hook))
        self.handles.append(model.register_forward_hook(lambda m, i, out: record.model_outputs.append(out)))
        for param in record.trainable:
            record.accumulated[id(param)] = 0
            self.handles.append(param.register_post_accumulate_grad_hook(self._arrived))
            self.handles.append(param.register_hook(self._incoming(param)))

    def start_call(self, call: int) -> None:
        self.call = call
        self.watch_finite = call == 0
        self.record.increments.append({})
        self.record.leftover.append({})
        self.steps_before = len(self.record.step_grads)
        self.values = [p.detach().clone() for p in self.record.trainable]

    def end_call(self) -> None:
        stepped = len(self.record.step_grads) > self.steps_before
        changed = any(not torch.equal(p.detach(), v) for p, v in zip(self.record.trainable, self.values))
        self.record.updated.append(stepped or changed)

    def _incoming(self, param: torch.Tensor) -> Callable:
        pid = id(param)

        def hook(grad: torch.Tensor) -> None:
            if not self.record.increments:
                return
            left, inc = self.record.leftover[-1], self.record.increments[-1]
            if pid not in left:
                old = param.grad
                old = None if old is None else dense(old)
                left[pid] = None if old is None or not bool(old.any()) else old.clone()
            inc[pid] = dense(grad).clone() if pid not in inc else inc[pid] + dense(grad)
        return hook

    def _rnn_hook(self, label: str) -> Callable:
        def hook(module: nn.Module, inputs: Any) -> None:
            if self.call == 0 and inputs and isinstance(inputs[0], torch.Tensor):
                self.record.rnn_inputs.append((label, bool(module.batch_first), tuple(inputs[0].shape)))
        return hook

    def _root_hook(self, module: nn.Module, inputs: Any) -> None:
        if self.record.root_training is None:
            self.record.root_training = module.training
            first = next((t for t in inputs if isinstance(t, torch.Tensor)), None) if isinstance(inputs, tuple) else None
            self.record.model_input = first.detach() if first is not None else None

    def _arrived(self, param: torch.Tensor) -> None:
        self.record.accumulated[id(param)] += 1

    def _mode_hook(self, label: str) -> Callable:
        def hook(module: nn.Module, inputs: Any) -> None:
            if not module.training and torch.is_grad_enabled() and label not in self.record.eval_layers:
                self.record.eval_layers.append(label)
        return hook

    def _finite_hook(self, label: str) -> Callable:
        def hook(module: nn.Module, inputs: Any, output: Any) -> None:
            if not self.watch_finite:
                return
            outs = [t for t in (t for _, t in leaves(output)) if t.is_floating_point() and t.device.type != "meta"]
            self.record.activations += sum(t.numel() for t in outs)
            if self.record.nonfinite is not None:
                return
            bad = sum(int((~torch.isfinite(t)).sum()) for t in outs)
            if bad:
                ins = [t for t in (t for _, t in leaves(inputs)) if t.is_floating_point() and t.device.type != "meta"]
                clean = all(bool(torch.isfinite(t).all()) for t in ins)
                self.record.nonfinite = (t("the output of layer {label} contains {bad} NaN/Inf values although "
                                           "its inputs were finite", label=label, bad=bad) if clean else
                                         t("the output of layer {label} contains {bad} NaN/Inf values",
                                           label=label, bad=bad))
        return hook

    def fake_step(self, *args: Any, closure: Callable | None = None, **kwargs: Any) -> Any:
        """Replaces optimizer.step() in the first probe: records the gradients, changes nothing."""
        closure = closure if closure is not None else (args[0] if args and callable(args[0]) else None)
        result = closure() if closure is not None else None
        self.record.step_grads.append({id(p): None if p.grad is None else dense(p.grad).clone()
                                       for p in self.record.trainable})
        return result

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def _trainable(model: nn.Module, optimizer: torch.optim.Optimizer) -> tuple[dict[int, str], list]:
    names = {id(p): n for n, p in model.named_parameters()}
    in_opt = {id(p) for group in optimizer.param_groups for p in group["params"]}
    return names, [p for p in model.parameters() if p.requires_grad and id(p) in in_opt]


def _rebind(schedulers: list[Any] | None, opt_c: torch.optim.Optimizer) -> None:
    """Point the caller's schedulers (that the step closes over) at the probe's optimizer copy, so
    that stepping them changes the copy's learning rates as it would change the caller's in real
    training. :meth:`CallerState.restore` points them back."""
    for scheduler in schedulers or ():
        scheduler.optimizer = opt_c


def probe_step(model: nn.Module, optimizer: torch.optim.Optimizer, batch: Any, loss_fn: Any,
               step: Step, calls: int = 2, notes: list[str] | None = None,
               schedulers: list[Any] | None = None) -> StepRecord:
    """Run ``step`` ``calls`` times on copies with optimizer.step() replaced by a recorder.

    The optimizer's parameters never change, and the RNG is re-seeded before each call, so every
    call sees the same parameters, batch and dropout masks. What ``.grad`` holds when the second
    call's first gradient arrives tells whether the step clears old gradients."""
    model_c, opt_c, batch_c, loss_c, back = copies(model, optimizer, batch, loss_fn, notes)
    _rebind(schedulers, opt_c)
    record = StepRecord(*_trainable(model_c, opt_c), samples=samples(batch_c))
    recorder = LossRecorder(loss_c)
    instruments = _Instruments(model_c, record)
    opt_c.step = instruments.fake_step  # type: ignore[method-assign]
    backward_graphs: list[GraphInfo] = []
    original_backward = torch.Tensor.backward
    #: Per call: the operations (autograd nodes) of its first backward() graph, parameters' excluded.
    operations: list[list[Any]] = []

    def recorded_backward(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        """The graph of the first tensor backward() runs on (the loss, however the step made it)."""
        if not backward_graphs and getattr(tensor, "grad_fn", None) is not None:
            backward_graphs.append(walk(tensor))
        if len(operations) == instruments.call and getattr(tensor, "grad_fn", None) is not None:
            operations.append(graph_nodes(tensor))
        return original_backward(tensor, *args, **kwargs)

    torch.Tensor.backward = recorded_backward  # type: ignore[method-assign]
    try:
        for call in range(calls):
            if len(operations) < call:
                operations.append([])
            instruments.start_call(call)
            seed_all()
            out = step(model_c, copy.deepcopy(batch_c), opt_c, recorder)
            instruments.end_call()
            record.losses.append(as_float(out, recorder.outputs))
            if call == 0 and not isinstance(out, (torch.Tensor, int, float)) and not recorder.outputs:
                record.returned = type(out).__name__
    except Exception as exc:  # noqa: BLE001 -- the learner's step failed: record it instead of raising
        record.error = step_error(exc)
    finally:
        torch.Tensor.backward = original_backward  # type: ignore[method-assign]
        instruments.remove()
        record.loss_calls = recorder.calls
        record.graph = recorder.graph or (backward_graphs[0] if backward_graphs else None)
    if len(operations) >= 2 and operations[0] and operations[1]:
        earlier = {id(node) for node in operations[0]}
        record.reused_operations = sum(1 for node in operations[1] if id(node) in earlier)
    if record.graph is not None and record.graph.complete:
        record.reached = {back[id(t)] for t in record.graph.leaves if id(t) in back}
        known = set(record.names) | {id(p) for g in opt_c.param_groups for p in g["params"]}
        record.foreign = [(tuple(t.shape), back.get(id(t)), isinstance(t, nn.Parameter)) for t in record.graph.leaves
                          if id(t) not in known and t.requires_grad]
    return record


#: The one-batch probe processes about this many parameter and activation values in all.
WORK = 30e6


def step_budget(n_params: int, activations_per_sample: float, samples: int, cap: int) -> int:
    """Steps for the one-batch probe, from the model's size: about :data:`WORK` parameter and
    activation values processed in all (at least 30 steps, at most ``cap``).

    >>> step_budget(2_000, 150, 16, 60), step_budget(270_000, 80_000, 16, 60)
    (60, 30)
    """
    cost = max(1.0, n_params + activations_per_sample * samples)
    return int(max(min(30, cap), min(cap, WORK // cost)))


def probe_overfit(model: nn.Module, optimizer: torch.optim.Optimizer, batch: Any, loss_fn: Any,
                  step: Step, max_steps: int = 50, lr_scale: float = 1.0, done: float = 0.05,
                  schedulers: list[Any] | None = None) -> OverfitRecord:
    """Train copies on one batch for ``max_steps`` steps; stop early only when the loss is
    non-finite or has fallen to ``done`` times its start (memorised). No clock is read."""
    model_c, opt_c, batch_c, loss_c, _ = copies(model, optimizer, batch, loss_fn)
    for group in opt_c.param_groups:
        group["lr"] = group["lr"] * lr_scale
    _rebind(schedulers, opt_c)
    for scheduler in schedulers or ():
        if lr_scale != 1.0 and isinstance(getattr(scheduler, "base_lrs", None), list):
            scheduler.base_lrs = [lr * lr_scale for lr in scheduler.base_lrs]
    lrs = sorted({float(g["lr"]) for g in opt_c.param_groups})
    calls = [0]
    handle = opt_c.register_step_post_hook(lambda *args: calls.__setitem__(0, calls[0] + 1))
    trainable = [p for p in model_c.parameters() if p.requires_grad]
    before = [p.detach().clone() for p in trainable]
    record = OverfitRecord([], lrs, 0, 0.0, samples=samples(batch_c), budget=max_steps)
    recorder = LossRecorder(loss_c, keep=0)
    seed_all()
    try:
        for _ in range(max_steps):
            loss = as_float(step(model_c, copy.deepcopy(batch_c), opt_c, recorder), recorder.outputs)
            record.losses.append(loss)
            start = record.losses[0]
            if not math.isfinite(loss) or (start > 0 and loss <= done * start):
                break
    except Exception as exc:  # noqa: BLE001 -- as in probe_step: record the step's error, do not raise
        record.error = step_error(exc)
    finally:
        handle.remove()
    record.step_calls = calls[0]
    record.last = recorder.last
    record.end_lrs = sorted({float(g["lr"]) for g in opt_c.param_groups})
    with torch.no_grad():
        record.changed = max((float((p - b).abs().max()) for p, b in zip(trainable, before)
                              if p.numel()), default=0.0)
    return record


def run_probes(inputs: Inputs, static: StaticRecord, caller: CallerState | None = None) -> ProbeRecord:
    """Stage 2: the instrumented step, then the one-batch run and its second opinion.

    Nothing runs when the static checks found that no step can (``static.stop``). Raises
    nothing for the learner's errors (they are recorded); :class:`CopyFailed` becomes
    ``copy_failed``. ``caller``: the caller's objects as they were, put back after every probe (so
    a scheduler the step closes over starts each probe where the caller left it)."""
    probes = ProbeRecord(n_params=sum(p.numel() for p in inputs.model.parameters()))
    if static.stop is not None:
        return probes
    args = (inputs.model, inputs.optimizer, inputs.batch, inputs.loss_fn)
    bound = [s for s, _ in caller.schedulers] if caller is not None else []

    def overfit(batch: Any, steps: int, lr_scale: float = 1.0) -> OverfitRecord:
        try:
            return probe_overfit(inputs.model, inputs.optimizer, batch, inputs.loss_fn, inputs.step, steps,
                                 lr_scale=lr_scale, schedulers=bound)
        finally:
            if caller is not None:
                caller.restore()

    try:
        try:
            record = probe_step(*args, inputs.step, notes=probes.notes, schedulers=bound)
        finally:
            if caller is not None:
                caller.restore()
        probes.step = record
        if record.error is not None or record.returned is not None or not record.losses \
                or not math.isfinite(record.losses[0]):
            return probes
        per_sample = record.activations / max(record.samples, 1)
        probes.budget = step_budget(probes.n_params, per_sample,
                                    min(record.samples or OVERFIT_SAMPLES, OVERFIT_SAMPLES), inputs.max_steps)
        small = first_samples(inputs.batch, OVERFIT_SAMPLES)
        main = overfit(small, probes.budget)
        if main.error is not None and small is not inputs.batch:  # e.g. a view(batch_size, -1) in the step
            probes.whole_batch = True
            small = inputs.batch
            main = overfit(small, probes.budget)
        probes.overfit = main
        if not static.has_errors and main.error is None and main.losses and main.step_calls and main.changed:
            scale = 0.1 if divergence(main.losses) else 10.0
            if scale < 1 or main.losses[0] > 0 and min(main.losses) > 0.9 * main.losses[0]:
                probes.second = overfit(small, max(probes.budget // 2, 1), lr_scale=scale)
    except CopyFailed as exc:
        probes.copy_failed = str(exc)
    return probes
