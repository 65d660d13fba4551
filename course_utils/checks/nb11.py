"""Checkers of notebook 11 (performance and compile), in notebook order: ``11.time_it``,
``11.mean_epoch_loss``, ``11.clip_norm``.

``11.time_it`` runs the candidate on a fake asynchronous device (:class:`FakeAsyncDevice`, exact fake
time); ``11.mean_epoch_loss`` hands it loss tensors of a subclass that counts device-to-host copies;
``11.clip_norm`` first captures the candidate as one graph with ``torch.export`` (its ``inspect``) to catch a Python
``if`` on a tensor value.
"""

from __future__ import annotations

import contextlib
import io
import math
from typing import Any, Callable

import torch
from torch import nn

from course_utils.exercises import Exercise, Mistake, compare_tensors, describe, register


# --- 11.time_it -----------------------------------------------------------------------------------
# Warm up, synchronise and time a function, checked on a fake asynchronous device.

# The checker cannot use a real GPU, so it hands the candidate a *fake asynchronous device*:
# fn() "launches" work and returns at once (like a CUDA kernel launch), the work finishes
# later on the device's own timeline, sync() waits for it, and clock() reads fake time.
# The arithmetic is exact, so the check is instant and never flaky.


class FakeAsyncDevice:
    """fn() costs ``launch`` s on the host and queues ``first`` (first call) or ``cost`` s of device work."""

    def __init__(self, cost: float, first: float, launch: float = 1e-5, asynchronous: bool = True):
        self.cost, self.first, self.launch, self.asynchronous = cost, first, launch, asynchronous
        self.now = 0.0          # host time
        self.device_free = 0.0  # when the device finishes everything queued so far
        self.calls = 0

    def fn(self) -> None:
        self.calls += 1
        work = self.first if self.calls == 1 else self.cost
        self.now += self.launch
        self.device_free = max(self.device_free, self.now) + work
        if not self.asynchronous:  # a CPU: the call returns when the work is done
            self.now = self.device_free

    def sync(self) -> None:
        self.now = max(self.now, self.device_free)

    def clock(self) -> float:
        return self.now


def time_it_reference(fn: Callable[[], Any], warmup: int = 2, repeats: int = 10,
                      sync: Callable[[], None] | None = None,
                      clock: Callable[[], float] | None = None) -> float:
    """The solution is the course's own timer, :func:`course_utils.profiling.time_it`."""
    import time

    from course_utils.profiling import time_it

    return time_it(fn, warmup, repeats, sync, clock or time.perf_counter)


def _time_no_warmup(fn, warmup=2, repeats=10, sync=None, clock=None):
    start = clock()
    for _ in range(repeats):
        fn()
    if sync is not None:
        sync()
    return (clock() - start) / repeats


def _time_no_sync(fn, warmup=2, repeats=10, sync=None, clock=None):
    for _ in range(warmup):
        fn()
    start = clock()
    for _ in range(repeats):
        fn()
    return (clock() - start) / repeats


def _time_total(fn, warmup=2, repeats=10, sync=None, clock=None):
    for _ in range(warmup):
        fn()
    if sync is not None:
        sync()
    start = clock()
    for _ in range(repeats):
        fn()
    if sync is not None:
        sync()
    return clock() - start


def _time_sync_unchecked(fn, warmup=2, repeats=10, sync=None, clock=None):
    for _ in range(warmup):
        fn()
    sync()
    start = clock()
    for _ in range(repeats):
        fn()
    sync()
    return (clock() - start) / repeats


def _time_real_clock(fn, warmup=2, repeats=10, sync=None, clock=None):
    import time

    for _ in range(warmup):
        fn()
    if sync is not None:
        sync()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    if sync is not None:
        sync()
    return (time.perf_counter() - start) / repeats


def _real_clock_used(out: Any, args: tuple, kwargs: dict) -> bool:
    """A tiny time that no fake-clock variant produces: the candidate read the real clock."""
    return (isinstance(out, (int, float)) and out < 0.5 * _device_of(kwargs).cost
            and not _same_as(_time_no_sync, _time_sync_first_only)(out, args, kwargs))


def _time_cases():
    def make(cost, first, warmup, repeats, asynchronous=True, with_sync=True):
        def factory():
            dev = FakeAsyncDevice(cost, first, asynchronous=asynchronous)
            kwargs = {"warmup": warmup, "repeats": repeats, "clock": dev.clock,
                      "sync": dev.sync if with_sync else None}
            return (dev.fn,), kwargs
        return factory
    # the last two: a CPU (no sync to call), and no warm-up at all (then the first call is timed)
    return [make(0.01, 2.0, 2, 5), make(0.003, 1.5, 1, 8), make(0.02, 0.5, 3, 4),
            make(0.005, 1.0, 2, 6, asynchronous=False, with_sync=False), make(0.004, 0.3, 0, 3)]


def _device_of(kwargs: dict[str, Any]) -> FakeAsyncDevice:
    return kwargs["clock"].__self__


def _time_verify(out, ref, args, kwargs):
    if isinstance(out, torch.Tensor) and out.numel() == 1:
        out = out.item()
    if not isinstance(out, (int, float)) or isinstance(out, bool):
        return f"expected a float (seconds per call), found {describe(out)}"
    if _device_of(kwargs).calls != kwargs["warmup"] + kwargs["repeats"]:
        return (f"expected fn to be called warmup + repeats = {kwargs['warmup'] + kwargs['repeats']} "
                f"times, found {_device_of(kwargs).calls} calls")
    # 1 %: syncing after every call (latency) and once at the end (throughput) both pass
    if not math.isclose(out, ref, rel_tol=0.01, abs_tol=1e-12):
        return f"expected {ref:.4g} s per call, found {out:.4g} s"
    return None


def _time_warmup_unsynced(fn, warmup=2, repeats=10, sync=None, clock=None):
    for _ in range(warmup):
        fn()
    start = clock()  # the warm-up work is still queued and lands inside the measurement
    for _ in range(repeats):
        fn()
    if sync is not None:
        sync()
    return (clock() - start) / repeats


def _time_sync_first_only(fn, warmup=2, repeats=10, sync=None, clock=None):
    for _ in range(warmup):
        fn()
    if sync is not None:
        sync()
    start = clock()
    for _ in range(repeats):
        fn()
    return (clock() - start) / repeats


def _same_as(*variants: Callable[..., float]) -> Callable[[Any, tuple, dict], bool]:
    """Detector: the candidate's number equals what one of these wrong versions gives."""
    def detect(out: Any, args: tuple, kwargs: dict) -> bool:
        if not isinstance(out, (int, float)):
            return False
        old = _device_of(kwargs)
        for variant in variants:
            dev = FakeAsyncDevice(old.cost, old.first, old.launch, old.asynchronous)
            wrong = variant(dev.fn, warmup=kwargs["warmup"], repeats=kwargs["repeats"],
                            sync=dev.sync if kwargs["sync"] is not None else None, clock=dev.clock)
            if math.isclose(out, wrong, rel_tol=1e-6):
                return True
        return False
    return detect


register(Exercise(
    "11.time_it",
    "time_it(fn, warmup=2, repeats=10, sync=None, clock=time.perf_counter) calls fn() `warmup` "
    "times untimed (warmup may be 0), then returns the mean seconds per call over `repeats` calls. Read the time "
    "with clock(); when sync is given, call it after the warm-up and after the timed calls.",
    time_it_reference,
    _time_cases(),
    _time_verify,
    [
        Mistake("forgets warm-up (times the first, compiling call)",
                "run fn() `warmup` times BEFORE starting the clock: the first call pays one-time "
                "costs (compilation, allocation, caches) that steady-state steps never pay.",
                _time_no_warmup, detect=_same_as(_time_no_warmup)),
        Mistake("does not sync after the warm-up (warm-up work leaks into the timing)",
                "the warm-up calls are only queued: call sync() once after them, before you "
                "start the clock, or their (slow, compiling) work is counted in the timed loop.",
                _time_warmup_unsynced, detect=_same_as(_time_warmup_unsynced)),
        Mistake("forgets synchronization (measures only the launches)",
                "on a GPU, fn() returns as soon as the work is queued: call sync() after the "
                "warm-up and again before reading the clock at the end, or you time the launch only.",
                _time_no_sync, detect=_same_as(_time_no_sync, _time_sync_first_only)),
        Mistake("reads the real clock instead of the clock argument",
                "call clock() (the argument) to read the time, not time.perf_counter() directly: "
                "the checker's fake device only advances the clock it hands you.",
                _time_real_clock, detect=_real_clock_used),
        Mistake("returns the total instead of the time per call",
                "divide the elapsed time by `repeats`.",
                _time_total, detect=_same_as(_time_total)),
        Mistake("calls sync when it is None",
                "on the CPU there is nothing to wait for and sync is None: guard with "
                "`if sync is not None: sync()`.",
                _time_sync_unchecked, error_match="'NoneType' object is not callable"),
    ],
))


# --- 11.mean_epoch_loss ---------------------------------------------------------------------------
# Average the per-step losses on the device, without host-device syncs.

_SYNCING = (torch.Tensor.item, torch.Tensor.tolist, torch.Tensor.__float__, torch.Tensor.__int__)


class _SyncCounter(torch.Tensor):
    """A tensor that counts device -> host copies (.item(), float(), .tolist()).

    Every test case makes its own subclass, so its count cannot be reset by the next case.
    """

    syncs = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in _SYNCING:
            cls.syncs += 1
        return super().__torch_function__(func, types, args, kwargs or {})


def _syncs(args: tuple) -> int:
    return type(args[0][0]).syncs


def mean_epoch_loss_reference(step_losses: list[torch.Tensor]) -> torch.Tensor:
    return torch.stack([loss.detach() for loss in step_losses]).mean()


def _loss_items(step_losses):
    return torch.tensor(sum(loss.item() for loss in step_losses) / len(step_losses))


def _loss_graph(step_losses):
    return sum(step_losses) / len(step_losses)


def _loss_sum(step_losses):
    return torch.stack([loss.detach() for loss in step_losses]).sum()


def _loss_cases():
    def make(seed, steps, dtype=torch.float32):
        def factory():
            counting = type("SyncCountingTensor", (_SyncCounter,), {"syncs": 0})
            gen = torch.Generator().manual_seed(seed)
            w = torch.randn(3, generator=gen, dtype=dtype, requires_grad=True)
            x = torch.randn(steps, 3, generator=gen, dtype=dtype)
            losses = [((x[i] * w).sum() ** 2).as_subclass(counting) for i in range(steps)]
            return (losses,), {}
        return factory
    return [make(0, 4), make(1, 7), make(2, 1), make(3, 5, torch.float64)]  # float64 stays float64


def _loss_verify(out, ref, args, kwargs):
    if _syncs(args):
        return (f"expected no device -> host copies, found {_syncs(args)} "
                f"(.item()/float()/.tolist() calls) for {len(args[0])} steps")
    if not isinstance(out, torch.Tensor):
        return f"expected a 0-dim tensor, found {describe(out)}"
    out = out.as_subclass(torch.Tensor)
    if out.requires_grad:
        return "expected a detached tensor (requires_grad=False), found one that still holds the graph"
    return compare_tensors(out, ref.as_subclass(torch.Tensor), name="mean loss")


register(Exercise(
    "11.mean_epoch_loss",
    "mean_epoch_loss(step_losses) returns the mean of the per-step loss tensors as a detached "
    "0-dim tensor in their dtype, without any .item()/float()/.tolist() (each one is a host-device "
    "sync) and without changing the given tensors.",
    mean_epoch_loss_reference,
    _loss_cases(),
    _loss_verify,
    [
        Mistake("calls .item() every step (a host-device sync each time)",
                "keep the values on the device: torch.stack([l.detach() for l in step_losses]).mean(), "
                "and call .item() once, when you really print.",
                _loss_items, detect=lambda out, a, k: _syncs(a) > 0),
        Mistake("keeps the autograd graph (no detach)",
                "summing the loss tensors themselves keeps every step's graph (and its activations) "
                "alive: detach each loss before accumulating.",
                _loss_graph,
                detect=lambda out, a, k: isinstance(out, torch.Tensor) and out.requires_grad),
        Mistake("sums instead of averaging",
                "divide by the number of steps (or use .mean()).",
                _loss_sum),
    ],
))


# --- 11.clip_norm ---------------------------------------------------------------------------------
# A compile-friendly data-dependent choice: no graph break (torch.where, also sync-free; or torch.cond).

class _AsModule(nn.Module):
    def __init__(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)


_ALIAS_HINT = ("  Hint (returns the input itself from a branch (aliasing)): torch.cond branches must "
               "return new tensors: return v.clone(), not v.")
_PY_IF_HINT = ("  Hint (Python if on a tensor value): `if x.norm() > 1:` asks for a Python bool, "
               "which only exists after a host sync, and the graph breaks there (one graph cannot record "
               "both paths). "
               "Use torch.where(x.norm() > 1, x / x.norm(), x), which computes both and picks on the device "
               "(torch.cond(pred, true_fn, false_fn, (x,)) keeps one graph too, but reads pred on the host).")


def _exportable(candidate: Callable[..., Any]) -> str | None:
    """Export the candidate once; only a data-dependent-branch failure is reported here."""
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            torch.export.export(_AsModule(candidate), (torch.full((4,), 2.0),))
    except Exception as exc:  # anything else (stub, learner bug) is reported by the normal run
        text = f"{type(exc).__name__}: {exc}"
        if "data-dependent" in text or "GuardOnDataDependent" in text:
            return ("your function cannot be captured as one graph: it uses a Python `if` on a "
                    "tensor value (a graph break and a host sync)\n" + _PY_IF_HINT)
        if "aliasing" in text:
            return "torch.cond refused your branches: one returns its input tensor itself\n" + _ALIAS_HINT
    return None


def clip_norm_reference(x: torch.Tensor) -> torch.Tensor:
    norm = x.norm()
    return torch.where(norm > 1, x / norm, x)  # a new tensor either way, and no host sync (torch.cond reads pred)


def _clip_python_if(x):
    if x.norm() > 1:
        return x / x.norm()
    return x.clone()


def _clip_swapped(x):
    return torch.cond(x.norm() > 1, lambda v: v.clone(), lambda v: v / v.norm(), (x,))


def _clip_always(x):
    return x / x.norm()


def _clip_alias(x):
    return torch.cond(x.norm() > 1, lambda v: v / v.norm(), lambda v: v, (x,))


def _clip_in_place(x):
    return torch.cond(x.norm() > 1, lambda v: v.div_(v.norm()), lambda v: v.clone(), (x,))


def _clip_cases():
    def make(seed, scale, n):
        return lambda: ((scale * torch.randn(n, generator=torch.Generator().manual_seed(seed)),), {})
    # one shape for every case: torch.cond compiles its branches once per input shape
    # norm exactly 1 is a boundary where both branches give x itself (">" and ">=" agree there)
    # norm 1.5 sits between 1 and 2: a threshold of 2 instead of 1 fails it
    return [make(0, 3.0, 4), make(1, 0.05, 4), make(2, 10.0, 4), make(3, 0.1, 4),
            lambda: ((torch.tensor([0.0, 1.5, 0.0, 0.0]),), {}),
            lambda: ((torch.tensor([0.0, 1.0, 0.0, 0.0]),), {})]


def _clip_verify(out, ref, args, kwargs):
    problem = compare_tensors(out, ref)
    if problem:
        return f"for an input of norm {args[0].norm():.3g}: {problem}"
    if out.data_ptr() == args[0].data_ptr():
        return "expected a new tensor, found the input itself"
    return None


register(Exercise(
    "11.clip_norm",
    "clip_norm(x) returns x / x.norm() when x.norm() > 1 and an unchanged copy of x otherwise, "
    "with no graph break (no Python if on a tensor value, no .item()): torch.where (no host sync "
    "either) or torch.cond (one graph, but it reads the predicate on the host).",
    clip_norm_reference,
    _clip_cases(),
    _clip_verify,
    [
        Mistake("Python if on a tensor value",
                _PY_IF_HINT.split("): ", 1)[1],
                _clip_python_if),
        Mistake("always normalises",
                "vectors with norm <= 1 must come back unchanged: choose between two branches.",
                _clip_always),
        Mistake("branches swapped",
                "torch.cond(pred, true_fn, false_fn, operands): true_fn runs when pred is True, "
                "i.e. when the norm is larger than 1.",
                _clip_swapped),
        Mistake("modifies the input in place inside a branch",
                "torch.cond branches must not change their inputs: return v / v.norm(), not v.div_(...).",
                _clip_in_place, error_match="captured completely"),
        Mistake("returns the input itself from a branch (aliasing)",
                _ALIAS_HINT.split("): ", 1)[1],
                _clip_alias, error_match="aliasing"),
    ],
    inspect=_exportable,
))
